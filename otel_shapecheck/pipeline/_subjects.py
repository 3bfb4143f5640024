"""Turning released spans into evaluation subjects: read the spans, merge log content, join tool executions.

Runs on the evaluation worker only; the readers it calls parse content and never raise.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._bounded_lru import BoundedLRU
from otel_shapecheck._model import AnalystAttempt, AnalystRun, LLMCall, ToolExecution, ToolResult
from otel_shapecheck.checks._base import Subject
from otel_shapecheck.otlp._ids import span_id_hex, trace_id_hex
from otel_shapecheck.pipeline._duplicates import (
    apart,
    could_pair,
    could_record_one_call,
    duplicate_of,
    has_output,
    one_instrumentation,
    request_of,
    response_of,
)
from otel_shapecheck.pipeline._facts import (
    ALL_LOST,
    NO_LOSSES,
    ExecutionFact,
    HeldSpan,
    Release,
    approximate_bytes,
)
from otel_shapecheck.readers._answer_tools import AnswerToolNames, with_answer_tools
from otel_shapecheck.readers._classify import SpanClass
from otel_shapecheck.readers._menus import read_menu
from otel_shapecheck.readers._parse_cache import parsed_bytes
from otel_shapecheck.readers._read import (
    read_analyst_attempt,
    read_llm_call,
    read_log_records,
    read_tool_execution,
)
from otel_shapecheck.readers._tool_join import join_tool_executions

_MAX_READINGS = 4096
MAX_READING_BYTES: Final = 64 * 1024 * 1024
"""Estimated bytes the kept readings (their spans and parsed calls) hold at most."""
MENU_SOURCE_SPAN = "span"
MENU_SOURCE_ANCESTOR = "ancestor"
_NEVER: Final = 2**63
"""Past every end time (ns)."""


def build_subjects(release: Release, answer_tools: Sequence[str] = ()) -> list[Subject]:
    """One subject per released span, in the release's order.

    ``answer_tools`` are the configured answer-tool names, for calls whose framework declares none.
    """
    calls = _llm_calls(release)
    partial = _tool_calls_partly_lost(calls, release)
    executions = [execution for execution in map(_read_execution, release.executions) if execution]
    if executions and calls:
        calls = _joined(calls, release, executions)
    for span_id in partial:  # what was joined is only part of what it called: its tool calls stay unknown
        calls[span_id] = replace(calls[span_id], tool_calls=None)
    calls = {span_id: with_answer_tools(call, answer_tools) for span_id, call in calls.items()}
    subjects = [
        _subject(held, release, calls.get(held.span_id), answer_tools, held.span_id in partial)
        for held in release.spans
    ]
    return _mark_duplicates(subjects, release, answer_tools)


def _tool_calls_partly_lost(calls: dict[int, LLMCall], release: Release) -> frozenset[int]:
    """Calls whose output did not name their tool calls, when a span of the trace that ended after one
    was let go by a bound: the executions that would say what it called may be among the lost."""
    losses = release.losses
    if losses is NO_LOSSES:
        return frozenset()
    return frozenset(
        span_id
        for span_id, call in calls.items()
        if call.tool_calls is None and losses.between(call.end_time_ns or 0, _NEVER)
    )


def _mark_duplicates(subjects: list[Subject], release: Release, answer_tools: Sequence[str]) -> list[Subject]:
    """The subjects, those recording a call an earlier-ended span of the trace records marked as such,
    and the two spans of a request/response pair joined (see :mod:`._duplicates`)."""
    others = [span for span, _ in release.trace_calls]
    if len(others) < 2:
        return subjects
    readings: dict[int, LLMCall | None] = {}

    def reading(span: ReadableSpan, classified: SpanClass) -> LLMCall | None:
        if id(span) not in readings:
            call = _readings.read(span, classified)
            readings[id(span)] = with_answer_tools(call, answer_tools) if call is not None else None
        return readings[id(span)]

    subjects = [
        _paired(held, subject, release, reading)
        for held, subject in zip(release.spans, subjects, strict=True)
    ]
    if one_instrumentation([*others, *(held.span for held in release.spans)]):
        return subjects
    marked = []
    for held, subject in zip(release.spans, subjects, strict=True):
        call = subject.llm_call
        if call is not None:
            earlier = [
                (span, other)
                for span, classified in release.trace_calls
                if span is not held.span
                and could_record_one_call(span, held.span)  # cheap: most spans never need reading
                and (other := reading(span, classified)) is not None
            ]
            original = duplicate_of(held.span, call, earlier)
            if original is not None:
                subject = replace(subject, duplicate_of=original)
        marked.append(subject)
    return marked


def _paired(
    held: HeldSpan,
    subject: Subject,
    release: Release,
    reading: Callable[[ReadableSpan, SpanClass], LLMCall | None],
) -> Subject:
    """A request span marked a duplicate of its response's span; a response span with the request's menu
    and input filled in. Only a call without output or without input looks (most never do)."""
    call = subject.llm_call
    if call is None or subject.duplicate_of or (has_output(call) and call.input_captured):
        return subject
    request = not has_output(call)
    losses = release.losses
    if request and not any(span is held.span for span, _ in release.trace_calls):
        losses = ALL_LOST  # its trace's facts were started again since it ended: what ran after is unknown
    executions = [fact.span for fact in release.trace_executions]
    others = [
        (span, other)
        for span, classified in release.trace_calls
        if span is not held.span
        and (
            could_pair(held.span, span) and not apart(held.span, span, executions, losses)
            if request
            else could_pair(span, held.span) and not apart(span, held.span, executions, losses)
        )
        and (other := reading(span, classified)) is not None
    ]
    if not others:
        return subject
    if request:
        response = response_of(held.span, call, others)
        return replace(subject, duplicate_of=response) if response is not None else subject
    asked = request_of(held.span, call, others)
    return replace(subject, llm_call=call.merged_with(asked)) if asked is not None else subject


_Entry = tuple[weakref.KeyedRef[int, ReadableSpan], LLMCall | None]
"""A kept reading: a reference to its span (keyed by the span's id, the entry's key) and the call."""


class _Readings:
    """Each ended span's LLM-call reading, kept for the next releases of its trace.

    A trace's calls are compared with every earlier call of the trace (:func:`_mark_duplicates`), so
    without this a trace of n calls was read n² / 2 times. An entry refers to its span weakly: the span
    stays alive exactly as long as its trace's facts (which hand it to later releases) or the exporter
    keep it, and an entry whose span is gone is never matched, so a reused id is read afresh. The span's
    own objects (attributes, events, their locks) are then not kept by the readings for the collector to
    walk. What was parsed is kept, so the readings are bounded by count and by estimated bytes: the span's
    attributes twice (at most their text, and what was parsed out of it) and each distinct menu once,
    however many readings share it (the readers hand every call of one menu string the same tuple).
    An entry whose span is gone is dropped at the next read: it could never match again, and what it
    parsed would otherwise stay alive (and be walked by every full collection) until the bounds push
    it out, thousands of readings later.
    """

    def __init__(self, max_entries: int = _MAX_READINGS, max_bytes: int = MAX_READING_BYTES) -> None:
        self._kept: BoundedLRU[int, _Entry] = BoundedLRU(
            max_entries, max_bytes, max_entry_bytes=sys.maxsize, measure_part=parsed_bytes
        )  # a reading of any size is kept: it is the next release's
        self._gone: list[weakref.KeyedRef[int, ReadableSpan]] = []
        """References whose span was freed, appended by the reference's callback (on whichever thread
        freed the span: an append, no lock) and dropped from ``_kept`` by the next :meth:`read`."""
        self._note_gone = self._gone.append
        """The callback every reference shares (``self._gone.append`` would make one per reference)."""

    @property
    def max_bytes(self) -> int:
        """The bound on :attr:`nbytes`."""
        return self._kept.max_bytes

    @property
    def nbytes(self) -> int:
        """Estimated bytes the kept readings hold (at most ``max_bytes``, bar one reading)."""
        return self._kept.nbytes

    def __len__(self) -> int:
        return len(self._kept)

    def read(self, span: ReadableSpan, classified: SpanClass) -> LLMCall | None:
        gone = self._gone
        while gone:
            try:
                reference = gone.pop()
            except IndexError:  # another processor's worker took the last one (the readings are shared)
                break
            self._drop_entry(reference)
        entry = self._kept.get(id(span))
        if entry is not None and entry[0]() is span:
            return entry[1]
        call = read_llm_call(span, classified)
        menu = call.offered_tools if call is not None and call.offered_tools else None
        # The menu measured outside the lock, once per menu (not when a kept reading holds it).
        menu_bytes = parsed_bytes(menu) if menu is not None and not self._kept.holds(menu) else None
        self._kept.put(
            id(span),
            (weakref.KeyedRef(span, self._note_gone, id(span)), call),
            2 * approximate_bytes(span.attributes),
            part=menu,
            part_nbytes=menu_bytes,
        )
        return call

    def _drop_entry(self, reference: weakref.KeyedRef[int, ReadableSpan]) -> None:
        """Forget the reading of a freed span, unless its id was taken by a span read since."""
        self._kept.discard(reference.key, lambda entry: entry[0] is reference)

    def clear(self) -> None:
        """Forget every reading."""
        self._kept.clear()
        self._gone.clear()


_readings = _Readings()


def _joined(
    calls: dict[int, LLMCall], release: Release, executions: list[ToolExecution]
) -> dict[int, LLMCall]:
    """The calls with tool executions joined; sibling calls take part so each gets only its own executions."""
    siblings = [
        call for span, classified in release.sibling_calls if (call := _readings.read(span, classified))
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
        call = _readings.read(held.span, held.classified)
        records = release.content.get(held.span_id)
        if records:
            logged = read_log_records(records)
            if logged is not None:
                call = call.merged_with(logged) if call is not None else logged
        if call is not None and call.offered_tools is None and held.ancestor_menu is not None:
            menu = read_menu(held.ancestor_menu)
            if menu is not None:
                call = replace(call, offered_tools=menu, menu_source=MENU_SOURCE_ANCESTOR)
        if call is not None:
            calls[held.span_id] = call
    return calls


def _subject(
    held: HeldSpan,
    release: Release,
    call: LLMCall | None,
    answer_tools: Sequence[str],
    tool_calls_lost: bool = False,
) -> Subject:
    end_time = held.span.end_time or 0
    answer_names = AnswerToolNames((call.declared_answer_tools if call else None) or answer_tools)
    results = tuple(
        _result(execution)
        for fact in release.trace_executions
        if (fact.span.end_time or 0) <= end_time
        and (execution := _read_execution(fact)) is not None
        and execution.result is not None
        and not answer_names.matches(execution.name)  # an answer is no basis for itself
    )
    return Subject(
        span_id=span_id_hex(held.span_id),
        trace_id=trace_id_hex(held.trace_id),
        llm_call=call,
        analyst_run=_analyst_run(held, release) if held.analyst else None,
        trace_tool_results=results,
        incomplete=held.incomplete or tool_calls_lost,
        results_lost=release.losses.between(0, end_time),
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
        span_id=span_id_hex(held.span_id),
        trace_id=trace_id_hex(held.trace_id),
        attempts=tuple(attempts),
        parent_id=span_id_hex(parent.span_id) if parent is not None else None,
    )


def _read_execution(fact: ExecutionFact) -> ToolExecution | None:
    """The fact's reading, parsed once per execution however many answers need it."""
    if not fact.read:
        fact.reading = read_tool_execution(fact.span, fact.classified)
        fact.read = True
    return fact.reading


def _result(execution: ToolExecution) -> ToolResult:
    return ToolResult(content=execution.result, call_id=execution.call_id, name=execution.name)
