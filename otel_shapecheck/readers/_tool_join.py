"""Joining tool-execution spans to the LLM calls that requested them.

Tool executions are siblings of the call that requested them (both under an agent span) or its
children. A call's own output names its tool calls when content is captured; otherwise the executions
that ran after it (and before the next call) are its tool calls. Executions join a requested tool call
by ``gen_ai.tool.call.id``, else by name in order of their end times; the results of joined executions
become tool results that the later calls saw, under the id of the tool call they answer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from otel_shapecheck._model import LLMCall, ToolCall, ToolExecution, ToolResult


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
    return [_completed(index, calls, joined) for index in range(len(calls))]


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


def _completed(index: int, calls: Sequence[LLMCall], joined: list[list[_Joined]]) -> LLMCall:
    call = calls[index]
    if call.tool_calls is None and joined[index]:
        requested = (
            ToolCall(p.execution.name, p.execution.call_id, p.execution.arguments) for p in joined[index]
        )
        call = replace(call, tool_calls=tuple(requested))
    results = list(call.tool_results)
    for earlier in joined[:index]:
        for pair in earlier:
            result = pair.result()
            if pair.execution.result is not None and not any(_same_result(result, seen) for seen in results):
                results.append(result)
    return replace(call, tool_results=tuple(results)) if len(results) != len(call.tool_results) else call


def _same_result(result: ToolResult, seen: ToolResult) -> bool:
    if result.call_id and seen.call_id:
        return result.call_id == seen.call_id
    return result.content == seen.content


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
