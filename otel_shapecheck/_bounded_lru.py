"""The package's one least-recently-used cache, bounded by its entries' count and their estimated bytes.

Parsed content, menus without their answer tools, menus' lexicons and spans' readings are each kept for
the next call that needs them; a bound on the count alone let a few large values hold hundreds of
megabytes, so each entry carries the bytes its caller estimated (for parsed values,
:func:`~otel_shapecheck.readers._parse_cache.parsed_bytes`) and the least recently used entries go first
when either bound is passed. The estimate is the caller's, made outside the lock: the cache only adds.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class BoundedLRU(Generic[K, V]):
    """Values by key, least recently used out first past ``max_entries`` or ``max_bytes``; thread-safe.

    A value estimated above ``max_entry_bytes`` is not kept (by default half the byte bound: one value
    may take half of it, never all); given a larger bound than ``max_bytes``, a value past ``max_bytes``
    is kept alone until the next one comes.
    An entry may name a ``part`` it shares with other entries (a parsed menu several readings hold): the
    part's bytes count once while any kept entry holds it, by identity, and the entries keep it alive
    so its identity is not reused. A part's bytes are measured by ``measure_part`` when the caller did
    not measure it (it was held when the caller looked, and dropped before the entry was put).
    """

    def __init__(
        self,
        max_entries: int,
        max_bytes: int,
        *,
        max_entry_bytes: int | None = None,
        measure_part: Callable[[Any], int] | None = None,
    ) -> None:
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._max_entry_bytes = max_bytes // 2 if max_entry_bytes is None else max_entry_bytes
        self._measure_part = measure_part
        self._entries: OrderedDict[K, tuple[V, int, object | None]] = OrderedDict()
        self._parts: dict[int, list[int]] = {}
        """Per shared part (by id, kept alive by the entries), ``[entries holding it, its bytes]``."""
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def max_bytes(self) -> int:
        """The bound on :attr:`nbytes`."""
        return self._max_bytes

    @property
    def nbytes(self) -> int:
        """Estimated bytes of the kept entries and their parts (at most ``max_bytes``, bar one oversized)."""
        with self._lock:
            return self._bytes

    def fits(self, nbytes: int) -> bool:
        """Whether a value of ``nbytes`` would be kept (callers skip building what would not be)."""
        return nbytes <= self._max_entry_bytes

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value kept under ``key`` (now the most recently used), else ``default``."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return default
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def holds(self, part: object) -> bool:
        """Whether a kept entry holds ``part`` (its bytes are counted already)."""
        with self._lock:
            return id(part) in self._parts

    def put(
        self, key: K, value: V, nbytes: int, *, part: object | None = None, part_nbytes: int | None = None
    ) -> bool:
        """Keep ``value`` under ``key`` (replacing what was there), the oldest entries dropped past either
        bound; whether it was kept. ``part_nbytes`` is the part's estimate, if the caller made one."""
        if not self.fits(nbytes):
            return False
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._drop(old)
            self._entries[key] = (value, nbytes, part)
            self._bytes += nbytes
            if part is not None:
                held = self._parts.setdefault(id(part), [0, 0])
                if held[0] == 0:
                    held[1] = part_nbytes if part_nbytes is not None else self._measured(part)
                    self._bytes += held[1]
                held[0] += 1
            while len(self._entries) > 1 and (
                len(self._entries) > self._max_entries or self._bytes > self._max_bytes
            ):
                self._drop(self._entries.popitem(last=False)[1])
        return True

    def discard(self, key: K, when: Callable[[V], bool]) -> None:
        """Forget the entry under ``key`` if ``when`` holds for its value (a key put again since may
        hold a newer value to keep); its place among the others and the hit counts are untouched."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and when(entry[0]):
                del self._entries[key]
                self._drop(entry)

    def clear(self) -> None:
        """Forget every entry (the counters keep counting)."""
        with self._lock:
            self._entries.clear()
            self._parts.clear()
            self._bytes = 0

    def _measured(self, part: object) -> int:
        """A part's bytes by ``measure_part`` (none without one)."""
        return self._measure_part(part) if self._measure_part is not None else 0

    def _drop(self, entry: tuple[V, int, object | None]) -> None:
        """Take an entry that left out of the byte count, and its part once no entry holds it (the caller
        holds the lock)."""
        _, nbytes, part = entry
        self._bytes -= nbytes
        if part is not None:
            held = self._parts[id(part)]
            held[0] -= 1
            if held[0] == 0:
                self._bytes -= held[1]
                del self._parts[id(part)]
