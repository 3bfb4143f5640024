"""One spooled request's bookkeeping: its entry, the bitmaps of its items, and the spool's byte space.

Each entry keeps two bitmaps over its items: ``sent`` (handed to the forwarding exporter at least once)
and ``done`` (the destination confirmed it). Both spools (:mod:`._spool`) and the queue that loads
them (:mod:`._queue`) share these.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

Kind = Literal["traces", "logs"]


def bitmap(items: int) -> bytearray:
    """An all-clear bitmap for ``items`` items."""
    return bytearray((items + 7) // 8)


def bit(bits: bytes | bytearray, index: int) -> bool:
    """Whether item ``index`` is set."""
    return bool(bits[index >> 3] & (1 << (index & 7)))


def set_bit(bits: bytearray, index: int) -> bool:
    """Set item ``index``; whether it was clear before."""
    mask = 1 << (index & 7)
    if bits[index >> 3] & mask:
        return False
    bits[index >> 3] |= mask
    return True


def set_bits(bits: bytearray, indices: Sequence[int], items: int) -> int:
    """Set the items ``indices`` (of ``items``); how many were clear before. A whole clear bitmap is
    filled at once (a request forwarded in one piece)."""
    if len(indices) == items and not any(bits):
        full, rest = divmod(items, 8)
        bits[:full] = b"\xff" * full
        if rest:
            bits[full] = (1 << rest) - 1
        return items
    return sum(set_bit(bits, index) for index in indices)


def count_bits(bits: bytes | bytearray) -> int:
    """How many items are set."""
    return int.from_bytes(bits, "little").bit_count()  # one C call, not a loop over the bytes


@dataclass(eq=False)
class SpoolEntry:
    """One acknowledged request: its items and which of them were sent and confirmed."""

    id: int
    kind: Kind
    items: int
    size: int
    """Bytes of the stored body (what the entry costs the spool)."""
    sent: bytearray = field(default_factory=bytearray)
    done: bytearray = field(default_factory=bytearray)

    def __post_init__(self) -> None:
        width = (self.items + 7) // 8
        self.sent = self.sent.ljust(width, b"\0")[:width]
        self.done = self.done.ljust(width, b"\0")[:width]

    @property
    def remaining(self) -> int:
        """Items not yet confirmed."""
        return self.items - count_bits(self.done)

    @property
    def in_doubt(self) -> int:
        """Items sent but not confirmed: they may have reached the destination already."""
        return sum((sent & ~done & 0xFF).bit_count() for sent, done in zip(self.sent, self.done, strict=True))


class SpoolSpace:
    """Bytes used by stored entries plus bytes reserved by requests still being received; ``volume``
    says whether the disk under a durable spool has room for ``size`` more."""

    def __init__(self, max_bytes: int, used: int, volume: Callable[[int], bool] | None = None) -> None:
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self.used = used
        self.reserved = 0
        self._volume = volume

    def reserve(self, size: int) -> bool:
        with self._lock:
            if self.used + self.reserved + size > self.max_bytes and (self.used or self.reserved):
                return False
            if self._volume is not None and not self._volume(self.reserved + size):
                return False
            self.reserved += size
            return True

    def unreserve(self, size: int) -> None:
        with self._lock:
            self.reserved = max(0, self.reserved - size)

    def store(self, reserved: int, size: int) -> None:
        with self._lock:
            self.reserved = max(0, self.reserved - reserved)
            self.used += size

    def free(self, size: int) -> None:
        with self._lock:
            self.used = max(0, self.used - size)
