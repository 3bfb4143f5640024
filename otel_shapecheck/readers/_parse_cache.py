"""Each distinct content string parsed once per process: a small LRU keyed by the string itself.

An agent's tool definitions arrive as the same JSON string on every chat span of a run, and a call's
messages are read again when later calls of its trace are checked for duplicates; parsing them each time
was a third of the worker's Python time. Readers wrap their string parsers in :class:`ParseCache`, which
keeps the newest results, bounded by entries and by the estimated bytes of what each entry keeps alive:
its key string and its parsed value (:func:`parsed_bytes`, computed once per entry). A parsed menu takes
several times the characters of its JSON (a named tool of 20 characters is about 160 bytes of records),
so a bound on key characters alone let a few thousand distinct menus hold a million tool objects.
Results are shared between calls, so they must be immutable (tuples of frozen records) and are read-only.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from otel_shapecheck._bounded_lru import BoundedLRU

T = TypeVar("T")

MAX_CACHED_BYTES: Final = 64 * 1024 * 1024
"""Estimated bytes a cache keeps alive at most: its key strings and their parsed values."""
MAX_CACHED_ENTRIES: Final = 1024
SAMPLED_ITEMS: Final = 32
"""Items of a long tuple or list walked by :func:`parsed_bytes`; the rest are taken to be like them."""
_SINGLETONS = (type(None), bool)
_RECORD_VALUES_BYTES: Final = 16
"""A record's inline field values beyond the object's own size: a header, then 8 bytes a field."""


def parsed_bytes(value: object) -> int:
    """What a parsed value keeps alive, roughly, in bytes: its records, containers and strings.

    Every object is counted at :func:`sys.getsizeof` (a record with its field values); a tuple or list
    longer than :data:`SAMPLED_ITEMS` is estimated from that many of its items, evenly spaced, so the
    estimate of a 100 000-tool menu costs what a 32-tool one does. Objects reached twice count twice.
    """
    total = 0
    stack = [value]
    getsize = sys.getsizeof
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += getsize(item)
        elif kind in _SINGLETONS or (kind is tuple and not item):  # shared by every value
            continue
        elif kind is tuple or kind is list:
            items: list[object] | tuple[object, ...] = item  # type: ignore[assignment]
            total += getsize(items)
            if len(items) > SAMPLED_ITEMS:  # nested long containers are rare: recursion stays shallow
                step = len(items) / SAMPLED_ITEMS
                sample = sum(parsed_bytes(items[int(i * step)]) for i in range(SAMPLED_ITEMS))
                total += sample * len(items) // SAMPLED_ITEMS
            else:
                stack.extend(items)
        elif kind is dict:
            mapping: dict[object, object] = item  # type: ignore[assignment]
            total += getsize(mapping)
            stack.extend(mapping)
            stack.extend(mapping.values())
        elif (names := _record_fields(kind)) is not None:  # a record of the model
            total += getsize(item) + _RECORD_VALUES_BYTES + 8 * len(names)
            stack.extend([getattr(item, name) for name in names])
        else:
            total += getsize(item)
    return total


def _record_fields(kind: type) -> tuple[str, ...] | None:
    """The field names of a dataclass record type, else ``None`` (read with ``getattr``: ``vars()`` would
    give the record a ``__dict__`` of its own, 64 bytes more each, and the estimate would cost memory)."""
    names = _FIELDS.get(kind, _UNKNOWN)
    if names is _UNKNOWN:
        is_record = dataclasses.is_dataclass(kind)
        names = tuple(field.name for field in dataclasses.fields(kind)) if is_record else None
        _FIELDS[kind] = names
    return names  # type: ignore[return-value]


_UNKNOWN = object()
_FIELDS: dict[type, object] = {}
"""Field names by record type (a few model types; a race only computes one twice)."""


class ParseCache(Generic[T]):
    """``parse(text)`` memoised for strings, newest first out of a :class:`BoundedLRU` (entries and bytes)."""

    def __init__(
        self,
        parse: Callable[[str], T],
        *,
        max_entries: int = MAX_CACHED_ENTRIES,
        max_bytes: int = MAX_CACHED_BYTES,
    ) -> None:
        self._parse = parse
        self._kept: BoundedLRU[str, T] = BoundedLRU(max_entries, max_bytes)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def nbytes(self) -> int:
        """Estimated bytes of the kept keys and values (at most ``max_bytes``)."""
        return self._kept.nbytes

    @property
    def max_bytes(self) -> int:
        """The bound on :attr:`nbytes`."""
        return self._kept.max_bytes

    def __call__(self, text: str) -> T:
        found = self._kept.get(text, _MISSING)
        if found is not _MISSING:
            return found  # type: ignore[return-value]
        value = self._parse(text)
        if not self._kept.fits(len(text)):  # too big to keep: not worth measuring
            return value
        self._kept.put(text, value, sys.getsizeof(text) + parsed_bytes(value))
        return value

    def clear(self) -> None:
        """Forget every result."""
        self._kept.clear()


_MISSING: Final = object()
"""What :meth:`BoundedLRU.get` answers for a text not kept (a parsed value may be ``None``)."""
