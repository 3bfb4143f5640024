"""The gateway's bounds: budgets of items and bytes, and the gate that counts requests in progress.

Every bound is checked before the work it protects: a request's declared size against the receive and
spool budgets before its body is read, the bytes of its body as they arrive, its items against the
pipeline's capacity after it was read (a request that can never fit is refused for good). Entries go
from the spool into the pipeline (the span processor's ledger, the batch processors, the exporters)
only while the pipeline's item and byte budgets have room, so what the process holds in memory is
bounded whatever the senders do; the rest waits in the spool.
"""

from __future__ import annotations

import enum
import threading
import time


class Admission(enum.Enum):
    """How a request was answered by the bounds."""

    ACCEPTED = "accepted"
    """Spooled: the sender may forget it."""
    FULL = "full"
    """No room now (spool or memory budget): the sender should retry later (backpressure)."""
    TOO_LARGE = "too_large"
    """More items than the whole pipeline: it can never be admitted; the sender must split it."""
    CLOSING = "closing"
    """The gateway is shutting down and takes nothing new."""


class Budget:
    """A count (items or bytes) taken and released against a fixed capacity.

    ``take`` succeeds when the amount fits, or when nothing is taken at all (so one unit larger than the
    whole budget still passes alone instead of waiting forever).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._condition = threading.Condition()
        self._in_use = 0

    @property
    def in_use(self) -> int:
        """Amount taken and not yet released."""
        with self._condition:
            return self._in_use

    def fits(self, amount: int) -> bool:
        """Whether ``take(amount)`` would succeed now (nothing is taken)."""
        with self._condition:
            return self._in_use == 0 or self._in_use + amount <= self.capacity

    def take(self, amount: int) -> bool:
        """Take ``amount`` if it fits; whether it was taken."""
        with self._condition:
            if self._in_use and self._in_use + amount > self.capacity:
                return False
            self._in_use += amount
            return True

    def release(self, amount: int) -> None:
        """Give ``amount`` back."""
        with self._condition:
            self._in_use = max(0, self._in_use - amount)
            self._condition.notify_all()

    def wait_for_room(self, amount: int, timeout_seconds: float) -> bool:
        """Wait until ``amount`` fits (without taking it); False on timeout."""
        deadline = time.monotonic() + timeout_seconds
        with self._condition:
            while self._in_use and self._in_use + amount > self.capacity:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(remaining)
            return True


class RequestGate:
    """Counts requests being handled; once closed, new ones are refused and the running ones waited for."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._requests = 0
        self._closing = False

    @property
    def closing(self) -> bool:
        """Whether the gateway stopped taking requests."""
        return self._closing

    def begin_request(self) -> bool:
        """Note a request being handled; False once closing (answer it as unavailable)."""
        with self._condition:
            if self._closing:
                return False
            self._requests += 1
            return True

    def end_request(self) -> None:
        """The request noted by :meth:`begin_request` has been answered."""
        with self._condition:
            self._requests -= 1
            self._condition.notify_all()

    def close(self, timeout_seconds: float) -> bool:
        """Refuse new requests, then wait for those being handled; False if some were still running."""
        deadline = time.monotonic() + timeout_seconds
        with self._condition:
            self._closing = True
            while self._requests > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(remaining)
            return True
