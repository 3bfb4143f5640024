"""Reading spans and log records of every GenAI convention into the normalised model.

The worker and the offline ``check`` command read through here. A span arrives with the
:class:`~otel_shapecheck.readers._classify.SpanClass` the hot path gave it, and is read by the reader of
its convention (plus any other convention whose content it also carries). Readers never raise:
unreadable values are read as missing, and should a reader still fail on some span, that span alone is
read as nothing (logged once), never the rest of its trace.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import ParamSpec, TypeGuard, TypeVar

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
    ROWS_UNREADABLE,
)
from otel_shapecheck._model import AnalystAttempt, LLMCall, ToolExecution, read_row_count
from otel_shapecheck.otlp._ids import span_id_hex, trace_id_hex
from otel_shapecheck.readers._adk import read_adk_content, read_adk_tool_execution
from otel_shapecheck.readers._ai_sdk import read_ai_sdk_content, read_ai_sdk_tool_execution
from otel_shapecheck.readers._classify import (
    AnyLogRecord,
    Convention,
    SpanClass,
    SpanRole,
    api_record,
    classify_span,
    content_conventions,
)
from otel_shapecheck.readers._content import (
    CallContent,
    SpanRef,
    llm_call_from_content,
    merge_content,
    optional_string,
)
from otel_shapecheck.readers._genai import read_genai_content, read_genai_tool_execution
from otel_shapecheck.readers._genai_events import (
    CONTENT_EVENT_NAMES,
    event_name_of,
    read_content_events,
    span_event_content,
)
from otel_shapecheck.readers._openinference import (
    read_openinference_content,
    read_openinference_tool_execution,
)
from otel_shapecheck.readers._openllmetry import read_openllmetry_content, read_openllmetry_tool_execution

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")
_failed_readers: set[str] = set()
_failed_lock = threading.Lock()


def _nothing_on_error(read: Callable[_P, _R | None]) -> Callable[_P, _R | None]:
    """``read``, returning ``None`` for the one input it fails on (the first failure of each is logged)."""

    @functools.wraps(read)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        try:
            return read(*args, **kwargs)
        except Exception:  # a reader bug or a shape no test foresaw: that span goes unread, no other
            with _failed_lock:
                first = read.__name__ not in _failed_readers
                _failed_readers.add(read.__name__)
            if first:
                logger.warning(
                    "%s failed on a span; it is read as nothing (logged once)", read.__name__, exc_info=True
                )
            return None

    return guarded


_CONTENT_READERS: tuple[tuple[Convention, Callable[[Mapping[str, object]], CallContent]], ...] = (
    (Convention.GENAI, read_genai_content),
    (Convention.OPENLLMETRY, read_openllmetry_content),
    (Convention.OPENINFERENCE, read_openinference_content),
    (Convention.ADK, read_adk_content),
    (Convention.AI_SDK, read_ai_sdk_content),
)


@_nothing_on_error
def read_llm_call(span: ReadableSpan, classified: SpanClass | None = None) -> LLMCall | None:
    """The LLM call a span records; ``None`` if it is none.

    ``classified`` is the span's :func:`classify_span` result when the caller already has it (the
    processor classifies on the hot path); without it the span is classified here.
    """
    attributes = span.attributes or {}
    if classified is None:
        classified = classify_span(span.name, attributes)
    ref = _span_ref(span)
    if ref is None or classified.role is not SpanRole.LLM_CALL:
        return None
    content = read_span_content(attributes, classified.convention)
    if span.events:
        from_events = span_event_content(span.events)
        if from_events is not None:
            content = merge_content(content, from_events)
    if content.not_a_call and content.input_messages is None and content.output_messages is None:
        return None
    return llm_call_from_content(content, ref)


def read_span_content(attributes: Mapping[str, object], convention: Convention) -> CallContent:
    """Call content read by the reader of ``convention`` and of every other convention the span carries.

    Readers run in a fixed order (OTel GenAI, OpenLLMetry, OpenInference, google-adk, the AI SDK's) and
    the first to find a field wins; a span written in one convention runs one reader. OpenInference's
    Vercel span processor, for one, leaves the menu in ``ai.prompt.tools``, where the AI SDK's reader
    finds it.
    """
    conventions = convention | content_conventions(attributes)
    readings = [read(attributes) for flag, read in _CONTENT_READERS if flag in conventions]
    if not readings:
        return CallContent()
    return functools.reduce(merge_content, readings)


@_nothing_on_error
def read_tool_execution(span: ReadableSpan, classified: SpanClass | None = None) -> ToolExecution | None:
    """The tool execution a span records; ``None`` if it is none or names no tool."""
    attributes = span.attributes or {}
    name = span.name if isinstance(span.name, str) else ""
    if classified is None:
        classified = classify_span(name, attributes)
    ref = _span_ref(span)
    if ref is None or classified.role is not SpanRole.TOOL_EXECUTION:
        return None
    if classified.convention is Convention.OPENINFERENCE:
        execution = read_openinference_tool_execution(name, attributes, ref)
    elif classified.convention is Convention.OPENLLMETRY:
        execution = read_openllmetry_tool_execution(name, attributes, ref)
    elif classified.convention is Convention.ADK:
        execution = read_adk_tool_execution(name, attributes, ref)
    elif classified.convention is Convention.AI_SDK:
        execution = read_ai_sdk_tool_execution(name, attributes, ref)
    else:
        execution = read_genai_tool_execution(name, attributes, ref)
    return execution if execution.name else None


@_nothing_on_error
def read_analyst_attempt(span: ReadableSpan) -> AnalystAttempt | None:
    """An analyst attempt span (``shapecheck.analyst.*``); ``None`` when its id or attempt is unreadable."""
    attributes = span.attributes or {}
    ref = _span_ref(span)
    analyst_id = optional_string(attributes.get(ANALYST_ID))
    attempt = read_row_count(attributes.get(ANALYST_ATTEMPT))  # as leniently as the counts: 1, 1.0, "1"
    if ref is None or not analyst_id or attempt is None:
        return None
    emitted, accepted = attributes.get(ROWS_EMITTED), attributes.get(ROWS_ACCEPTED)
    unreadable = read_row_count(attributes.get(ROWS_UNREADABLE)) or 0
    present = [count for count in (emitted, accepted) if count is not None]
    unreadable += sum(1 for count in present if read_row_count(count) is None)
    return AnalystAttempt(
        span_id=ref.span_id,
        trace_id=ref.trace_id,
        parent_id=ref.parent_id,
        analyst_id=analyst_id,
        attempt=attempt,
        emitted=read_row_count(emitted) or 0,
        accepted=read_row_count(accepted) or 0,
        unreadable=unreadable,
    )


@_nothing_on_error
def read_log_records(log_records: Sequence[AnyLogRecord]) -> LLMCall | None:
    """The LLM-call content the GenAI log records of one span carry (given in emission order)."""
    events: list[tuple[str, Mapping[str, object], object]] = []
    ref: SpanRef | None = None
    for record in map(api_record, log_records):
        attributes = record.attributes if isinstance(record.attributes, Mapping) else {}
        name = event_name_of(record.event_name, attributes)
        if name not in CONTENT_EVENT_NAMES or name is None:
            continue
        events.append((name, attributes, record.body))
        ref = ref or _ids_ref(record.span_id, record.trace_id)
    content = read_content_events(events)
    if ref is None or content is None:
        return None
    return llm_call_from_content(content, ref)


def _span_ref(span: ReadableSpan) -> SpanRef | None:
    context = span.context
    if context is None:
        return None
    ref = _ids_ref(context.span_id, context.trace_id)
    if ref is None:
        return None
    parent = span.parent
    parent_id = span_id_hex(parent.span_id) if parent is not None and parent.span_id else None
    return SpanRef(ref.span_id, ref.trace_id, parent_id=parent_id, end_time_ns=span.end_time)


def _ids_ref(span_id: object, trace_id: object) -> SpanRef | None:
    if not _positive_int(span_id) or not _positive_int(trace_id):
        return None
    return SpanRef(span_id=span_id_hex(span_id), trace_id=trace_id_hex(trace_id))


def _positive_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None
