"""The tool-choice query API's memory of calls: newest kept, bounded by count and by estimated bytes."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from otel_shapecheck.checks.tool_choice._calls import ToolChoiceCall

_CALL_OVERHEAD_BYTES: Final = 1024


def call_bytes(call: ToolChoiceCall) -> int:
    """Estimated bytes a retained call holds: its texts, its menu, its ranking."""
    size = _CALL_OVERHEAD_BYTES + 2 * (len(call.context_text) + sum(map(len, call.segments)))
    size += call.menu_bytes + 8 * len(call.offered)
    if call.result is not None:
        size += call.result.nbytes
    return size


class CallHistory:
    """A FIFO of calls that drops the oldest past ``max_calls`` or ``max_bytes`` (estimated)."""

    def __init__(self, max_calls: int, max_bytes: int) -> None:
        self._max_calls = max_calls
        self._max_bytes = max_bytes
        self._calls: deque[tuple[ToolChoiceCall, int]] = deque()
        self._bytes = 0
        self._lock = threading.Lock()
        self.dropped = 0

    def extend(self, calls: Iterable[ToolChoiceCall]) -> None:
        """Keep ``calls`` (a call bigger than the byte bound alone is not kept)."""
        with self._lock:
            for call in calls:
                size = call_bytes(call)
                if size > self._max_bytes:
                    self.dropped += 1
                    continue
                self._calls.append((call, size))
                self._bytes += size
                while len(self._calls) > self._max_calls or self._bytes > self._max_bytes:
                    _, old = self._calls.popleft()
                    self._bytes -= old
                    self.dropped += 1

    def take(self) -> list[ToolChoiceCall]:
        """Every call, oldest first, leaving none."""
        with self._lock:
            calls = [call for call, _ in self._calls]
            self._calls.clear()
            self._bytes = 0
            return calls

    def put_back(self, calls: list[ToolChoiceCall]) -> None:
        """Return taken calls to the front, oldest first (bounds applied)."""
        with self._lock:
            kept = [(call, size) for call, size in self._calls]
            self._calls.clear()
            self._bytes = 0
        self.extend(calls)
        with self._lock:
            for call, size in kept:
                self._calls.append((call, size))
                self._bytes += size

    def snapshot(self) -> tuple[ToolChoiceCall, ...]:
        """Every call, oldest first."""
        with self._lock:
            return tuple(call for call, _ in self._calls)

    @property
    def nbytes(self) -> int:
        """Estimated bytes held."""
        return self._bytes

    def clear(self) -> None:
        """Forget every call."""
        with self._lock:
            self._calls.clear()
            self._bytes = 0
