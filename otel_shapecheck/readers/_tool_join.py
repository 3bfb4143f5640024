"""Joining tool-execution spans to the LLM calls that requested them.

Tool executions are siblings of the call that requested them (both under an agent span) or its
children. A call's own output names its tool calls when content is captured; otherwise the executions
that ran after it (and before the next call) are its tool calls. Executions join a requested tool call
by ``gen_ai.tool.call.id``, else by name in order of their end times; the results of joined executions
become tool results that the later calls saw, under the id of the tool call they answer.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace

from otel_shapecheck._model import JSONValue, LLMCall, ToolCall, ToolExecution, ToolResult


@dataclass(frozen=True)
class _Joined:
    """An execution and the tool call it answers (``None`` when the call's output was not captured)."""

    execution: ToolExecution
    tool_call: ToolCall | None = None

    def result(self) -> ToolResult:
        call_id = self.execution.call_id or (self.tool_call.call_id if self.tool_call else None)
        return ToolResult(content=self.execution.result, call_id=call_id, name=self.execution.name)


def join_tool_executions(calls: Sequence[LLMCall], executions: Sequence[ToolExecution]) -> list[LLMCall]:
    """The calls (in the given order) with tool calls and tool results completed from the executions."""
    pending = sorted(executions, key=_end_order)
    joined: list[list[_Joined]] = [[] for _ in calls]
    _join_by_call_id(calls, pending, joined)
    _join_by_name_and_order(calls, pending, joined)
    _assign_to_calls_without_output(calls, pending, joined)
    return _completed_calls(calls, joined)


def _join_by_call_id(
    calls: Sequence[LLMCall], pending: list[ToolExecution], joined: list[list[_Joined]]
) -> None:
    for index, call in enumerate(calls):
        for tool_call in call.tool_calls or ():
            if not tool_call.call_id:
                continue
            match = next((e for e in pending if e.call_id == tool_call.call_id), None)
            if match is not None:
                pending.remove(match)
                joined[index].append(_Joined(match, tool_call))


def _join_by_name_and_order(
    calls: Sequence[LLMCall], pending: list[ToolExecution], joined: list[list[_Joined]]
) -> None:
    for index, call in enumerate(calls):
        answered = {id(pair.tool_call) for pair in joined[index]}
        for tool_call in call.tool_calls or ():
            if id(tool_call) in answered:
                continue
            match = next((e for e in pending if _joins_by_name(call, tool_call, e)), None)
            if match is not None:
                pending.remove(match)
                joined[index].append(_Joined(match, tool_call))


def _joins_by_name(call: LLMCall, tool_call: ToolCall, execution: ToolExecution) -> bool:
    """Same tool name, no conflicting ids, and the execution did not end before the call did."""
    if execution.name != tool_call.name:
        return False
    if execution.call_id and tool_call.call_id:
        return False
    return _ended_after(execution, call.end_time_ns)


def _assign_to_calls_without_output(
    calls: Sequence[LLMCall], pending: list[ToolExecution], joined: list[list[_Joined]]
) -> None:
    """A call whose output was not captured gets the executions that ended after it, before the next call."""
    for index, call in enumerate(calls):
        if call.tool_calls is not None:
            continue
        next_end = _next_end(calls, index)
        taken = [e for e in pending if _ended_after(e, call.end_time_ns) and _end_order(e)[1] <= next_end]
        for execution in taken:
            pending.remove(execution)
        joined[index].extend(_Joined(execution) for execution in taken)


def _completed_calls(calls: Sequence[LLMCall], joined: list[list[_Joined]]) -> list[LLMCall]:
    """Each call with its own tool calls completed and the results of the executions joined before it.

    A call keeps its own results and gains, in order, each earlier joined result it does not hold yet.
    The earlier results are read once per call and looked up by id and by a key of their content
    (:class:`_SeenResults`), not compared with every result held; and a call with no results of its own
    gains exactly the earlier results without repeats, kept as one running tuple. A trace of *n* calls
    each answered once costs ``n`` look-ups and ``n²`` results copied, not ``n³`` comparisons.
    """
    earlier: list[tuple[ToolResult, Hashable]] = []
    running = _SeenResults(())
    distinct: tuple[ToolResult, ...] = ()
    completed = []
    for index, call in enumerate(calls):
        if call.tool_calls is None and joined[index]:
            requested = (
                ToolCall(p.execution.name, p.execution.call_id, p.execution.arguments) for p in joined[index]
            )
            call = replace(call, tool_calls=tuple(requested))
        if not call.tool_results:
            if distinct:
                call = replace(call, tool_results=distinct)
        elif earlier:
            seen = _SeenResults(call.tool_results)
            added = [result for result, key in earlier if seen.add_new(result, key)]
            if added:
                call = replace(call, tool_results=(*call.tool_results, *added))
        completed.append(call)
        fresh = []
        for pair in joined[index]:
            if pair.execution.result is not None:
                result = pair.result()
                key = _content_key(result.content)
                earlier.append((result, key))
                if running.add_new(result, key):
                    fresh.append(result)
        if fresh:
            distinct = (*distinct, *fresh)
    return completed


class _SeenResults:
    """The results a call holds, looked up as the join compares results.

    Two results are the same when both have an id and the ids are equal, or when either has none and
    their contents are equal. Contents are bucketed by :func:`_content_key` (equal contents have equal
    keys) and compared with ``==`` within a bucket, so the look-up decides exactly as the comparison.
    """

    def __init__(self, results: Sequence[ToolResult]) -> None:
        self._ids: set[str] = set()
        self._without_id: dict[Hashable, list[JSONValue]] = {}
        self._every: dict[Hashable, list[JSONValue]] = {}
        for result in results:
            self._add(result, _content_key(result.content))

    def add_new(self, result: ToolResult, key: Hashable) -> bool:
        """Add ``result`` unless the same result is held; whether it was added."""
        if result.call_id:
            if result.call_id in self._ids:
                return False
            contents = self._without_id.get(key, ())
        else:
            contents = self._every.get(key, ())
        if any(result.content == content for content in contents):
            return False
        self._add(result, key)
        return True

    def _add(self, result: ToolResult, key: Hashable) -> None:
        if result.call_id:
            self._ids.add(result.call_id)
        else:
            self._without_id.setdefault(key, []).append(result.content)
        self._every.setdefault(key, []).append(result.content)


_KEY_DEPTH = 4
"""Nesting levels of a content its key reads; deeper values share one key (and are told apart by ``==``)."""


def _content_key(content: JSONValue, depth: int = 0) -> Hashable:
    """A hashable key of a JSON content, equal for equal contents (``1``, ``1.0`` and ``True`` alike)."""
    if isinstance(content, float) and content != content:
        return "nan"  # NaN equals nothing; a key all NaNs share is told apart by ``==``
    if content is None or isinstance(content, str | int | float):
        return content
    if isinstance(content, list):
        if depth >= _KEY_DEPTH:
            return ("list",)
        return ("list", *(_content_key(item, depth + 1) for item in content))
    if isinstance(content, dict):
        if depth >= _KEY_DEPTH:
            return ("dict",)
        return ("dict", frozenset((key, _content_key(value, depth + 1)) for key, value in content.items()))
    return ("other",)  # not a JSON value: compared by ``==`` alone


def _next_end(calls: Sequence[LLMCall], index: int) -> float:
    for later in calls[index + 1 :]:
        if later.end_time_ns is not None:
            return later.end_time_ns
    return math.inf


def _ended_after(execution: ToolExecution, end_time_ns: int | None) -> bool:
    if end_time_ns is None or execution.end_time_ns is None:
        return True
    return execution.end_time_ns >= end_time_ns


def _end_order(execution: ToolExecution) -> tuple[bool, float]:
    """Sort key: executions with an end time by that time, then those without, in their given order."""
    if execution.end_time_ns is None:
        return (True, -math.inf)
    return (False, execution.end_time_ns)
