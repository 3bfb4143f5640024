"""Turning released spans into evaluation subjects: read the spans, merge log content, join tool executions.

Runs on the evaluation worker only; the readers it calls parse content and never raise.
"""

from __future__ import annotations

from otel_shapecheck._model import AnalystAttempt, AnalystRun, LLMCall, ToolExecution, ToolResult
from otel_shapecheck.checks._base import Subject
from otel_shapecheck.pipeline._facts import ExecutionFact, HeldSpan, Release
from otel_shapecheck.readers._read import (
    read_analyst_attempt,
    read_llm_call,
    read_log_records,
    read_tool_execution,
)
from otel_shapecheck.readers._tool_join import join_tool_executions


def build_subjects(release: Release) -> list[Subject]:
    """One subject per released span, in the release's order."""
    calls = _llm_calls(release)
    executions = [execution for execution in map(_read_execution, release.executions) if execution]
    if executions and calls:
        calls = _joined(calls, release, executions)
    return [_subject(held, release, calls.get(held.span_id)) for held in release.spans]


def _joined(
    calls: dict[int, LLMCall], release: Release, executions: list[ToolExecution]
) -> dict[int, LLMCall]:
    """The calls with tool executions joined; sibling calls take part so each gets only its own executions."""
    siblings = [
        call for span, classified in release.sibling_calls if (call := read_llm_call(span, classified))
    ]
    ordered = sorted(
        [*((span_id, call) for span_id, call in calls.items()), *((None, call) for call in siblings)],
        key=lambda item: item[1].end_time_ns or 0,
    )
    joined = join_tool_executions([call for _, call in ordered], executions)
    return {span_id: call for (span_id, _), call in zip(ordered, joined, strict=True) if span_id is not None}


def _llm_calls(release: Release) -> dict[int, LLMCall]:
    """The LLM calls of a release by span id, in end order (the join pairs calls and executions by time)."""
    calls: dict[int, LLMCall] = {}
    for held in sorted(release.spans, key=lambda held: held.span.end_time or 0):
        if not held.llm_call:
            continue
        call = read_llm_call(held.span, held.classified)
        records = release.content.get(held.span_id)
        if records:
            logged = read_log_records(records)
            if logged is not None:
                call = call.merged_with(logged) if call is not None else logged
        if call is not None:
            calls[held.span_id] = call
    return calls


def _subject(held: HeldSpan, release: Release, call: LLMCall | None) -> Subject:
    end_time = held.span.end_time or 0
    results = tuple(
        _result(execution)
        for fact in release.trace_executions
        if (fact.span.end_time or 0) <= end_time
        and (execution := _read_execution(fact)) is not None
        and execution.result is not None
    )
    return Subject(
        span_id=format(held.span_id, "016x"),
        trace_id=format(held.trace_id, "032x"),
        llm_call=call,
        analyst_run=_analyst_run(held, release) if held.analyst else None,
        trace_tool_results=results,
        incomplete=held.incomplete,
    )


def _analyst_run(held: HeldSpan, release: Release) -> AnalystRun:
    attempts: list[AnalystAttempt] = [
        attempt
        for attempt in map(read_analyst_attempt, release.attempts.get(held.span_id, ()))
        if attempt is not None
    ]
    attempts.sort(key=lambda attempt: attempt.attempt)
    parent = held.span.parent
    return AnalystRun(
        span_id=format(held.span_id, "016x"),
        trace_id=format(held.trace_id, "032x"),
        attempts=tuple(attempts),
        parent_id=format(parent.span_id, "016x") if parent is not None else None,
    )


def _read_execution(fact: ExecutionFact) -> ToolExecution | None:
    """The fact's reading, parsed once per execution however many answers need it."""
    if not fact.read:
        fact.reading = read_tool_execution(fact.span, fact.classified)
        fact.read = True
    return fact.reading


def _result(execution: ToolExecution) -> ToolResult:
    return ToolResult(content=execution.result, call_id=execution.call_id, name=execution.name)
