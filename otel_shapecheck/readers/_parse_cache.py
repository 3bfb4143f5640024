"""Each distinct content string parsed once per process: a small LRU keyed by the string itself.

An agent's tool definitions arrive as the same JSON string on every chat span of a run, and a call's
messages are read again when later calls of its trace are checked for duplicates; parsing them each time
was a third of the worker's Python time. Readers wrap their string parsers in :class:`ParseCache`, which
keeps the newest results, bounded both by entries and by the characters of the keys it holds. Results
are shared between calls, so they must be immutable (tuples of frozen records) and are read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, TypeVar

T = TypeVar("T")

MAX_CACHED_CHARS: Final = 32 * 1024 * 1024
"""Characters of content strings a cache keeps at most (its results are smaller than their text)."""
MAX_CACHED_ENTRIES: Final = 1024
_MISSING = object()


class ParseCache(Generic[T]):
    """``parse(text)`` memoised for strings, newest first out of an LRU bounded in entries and characters."""

    def __init__(
        self,
        parse: Callable[[str], T],
        *,
        max_entries: int = MAX_CACHED_ENTRIES,
        max_chars: int = MAX_CACHED_CHARS,
    ) -> None:
        self._parse = parse
        self._max_entries = max_entries
        self._max_chars = max_chars
        self._entries: OrderedDict[str, T] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __call__(self, text: str) -> T:
        with self._lock:
            found = self._entries.get(text, _MISSING)
            if found is not _MISSING:
                self._entries.move_to_end(text)
                self.hits += 1
                return found  # type: ignore[return-value]
        value = self._parse(text)
        if len(text) > self._max_chars // 4:  # one huge string must not flush everything else
            return value
        with self._lock:
            self.misses += 1
            if text not in self._entries:
                self._entries[text] = value
                self._chars += len(text)
                while len(self._entries) > self._max_entries or self._chars > self._max_chars:
                    old, _ = self._entries.popitem(last=False)
                    self._chars -= len(old)
        return value

    def clear(self) -> None:
        """Forget every result."""
        with self._lock:
            self._entries.clear()
            self._chars = 0
