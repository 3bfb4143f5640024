"""The gateway's one memory bound: items accepted from senders and not yet handed to an exporter.

A request is admitted whole or refused whole. Admitted spans and log records hold their slots until
the forwarding exporter has been called with them (whatever it answered), so the evaluation ledger,
the batch processors' queues and the exporters' batches together never hold more than ``capacity``
items; the batch processors are sized to hold all of them, so nothing acknowledged is dropped for want
of room. A refused request is answered with backpressure (HTTP 429 / gRPC ``RESOURCE_EXHAUSTED``) and the
sender retries it.
"""

from __future__ import annotations

import enum
import threading
import time


class Admission(enum.Enum):
    """How a request was answered by the budget."""

    ACCEPTED = "accepted"
    """Its items hold slots until they are exported."""
    FULL = "full"
    """Not enough free slots now: the sender should retry later (backpressure)."""
    TOO_LARGE = "too_large"
    """More items than the whole budget: it can never be admitted; the sender must split it."""
    CLOSING = "closing"
    """The gateway is shutting down and takes nothing new."""


class AdmissionBudget:
    """Counts items in flight against a fixed capacity, and requests still being handled."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._condition = threading.Condition()
        self._in_flight = 0
        self._requests = 0
        self._closing = False
        self.refused_full = 0
        """Requests answered with backpressure so far."""

    @property
    def in_flight(self) -> int:
        """Items admitted and not yet exported."""
        with self._condition:
            return self._in_flight

    def begin_request(self) -> bool:
        """Note a request being handled; False once the gateway is closing (answer it as unavailable)."""
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

    def admit(self, count: int) -> Admission:
        """Take ``count`` slots, or say why not."""
        with self._condition:
            if self._closing:
                return Admission.CLOSING
            if count > self.capacity:
                return Admission.TOO_LARGE
            if self._in_flight + count > self.capacity:
                self.refused_full += 1
                return Admission.FULL
            self._in_flight += count
            return Admission.ACCEPTED

    def release(self, count: int) -> None:
        """Give back ``count`` slots (their items reached an exporter)."""
        with self._condition:
            self._in_flight = max(0, self._in_flight - count)
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
