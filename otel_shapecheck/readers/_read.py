"""Reading spans and log records of every GenAI convention into the normalised model.

This is the one entry point the span processor and the offline ``check`` command use. The hot-path
functions (:func:`classify_span`, :func:`names_own_tool_calls`, :func:`is_genai_content_record`) only
look up a few keys; the ``read_*`` functions parse content and belong off the application's thread.
Readers never raise: unreadable values are read as missing.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping, Sequence
from typing import TypeAlias, TypeGuard

from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
    ROWS_UNREADABLE,
)
from otel_shapecheck._model import AnalystAttempt, LLMCall, ToolExecution, read_row_count
from otel_shapecheck.readers._content import (
    CallContent,
    SpanRef,
    llm_call_from_content,
    merge_content,
    optional_string,
    stopped_for_tools,
)
from otel_shapecheck.readers._genai import (
    EXECUTE_TOOL_SPAN_PREFIX,
    FINISH_REASONS,
    OUTPUT_MESSAGES,
    read_genai_content,
    read_genai_tool_execution,
)
from otel_shapecheck.readers._genai_events import CONTENT_EVENT_NAMES, event_name_of, read_content_events
from otel_shapecheck.readers._openinference import FINISH_REASON as OPENINFERENCE_FINISH_REASON
from otel_shapecheck.readers._openinference import (
    OPENINFERENCE_SPAN_KIND,
    OUTPUT_MESSAGE_MARKERS,
    OUTPUT_TOOL_CALL_MARKER,
    read_openinference_content,
    read_openinference_tool_execution,
)
from otel_shapecheck.readers._openllmetry import (
    COMPLETION_FINISH_REASON,
    COMPLETION_MARKERS,
    COMPLETION_TOOL_CALL_MARKER,
    LLM_REQUEST_TYPE,
    TRACELOOP_SPAN_KIND,
    read_openllmetry_content,
    read_openllmetry_tool_execution,
)
from otel_shapecheck.readers._tool_join import join_tool_executions

__all__ = [
    "AnyLogRecord",
    "SpanKind",
    "classify_span",
    "is_genai_content_record",
    "join_tool_executions",
    "names_own_tool_calls",
    "read_analyst_attempt",
    "read_llm_call",
    "read_log_records",
    "read_tool_execution",
]

AnyLogRecord: TypeAlias = "LogRecord | ReadableLogRecord | ReadWriteLogRecord"
"""A log record as the API emits it, or as the SDK hands it to processors and exporters."""

OPERATION_NAME = "gen_ai.operation.name"
MCP_METHOD_NAME = "mcp.method.name"

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_LEGACY_LLM_REQUEST_TYPES = frozenset({"chat", "completion"})
_EXECUTE_TOOL = "execute_tool"
_MCP_TOOLS_CALL = "tools/call"
CLASSIFYING_KEYS = frozenset(
    {
        ANALYST_ID,
        ANALYST_ATTEMPT,
        OPERATION_NAME,
        OPENINFERENCE_SPAN_KIND,
        LLM_REQUEST_TYPE,
        TRACELOOP_SPAN_KIND,
        MCP_METHOD_NAME,
    }
)
"""Every attribute :func:`classify_span` reads."""
_OUTPUT_KEYS = frozenset(
    {OUTPUT_MESSAGES, *COMPLETION_MARKERS, *OUTPUT_MESSAGE_MARKERS}
    | {COMPLETION_FINISH_REASON, OPENINFERENCE_FINISH_REASON, FINISH_REASONS}
)
"""Every attribute :func:`names_own_tool_calls` reads."""


class SpanKind(enum.Enum):
    """What a span is to the checks."""

    LLM_CALL = "llm_call"
    TOOL_EXECUTION = "tool_execution"
    ANALYST_ATTEMPT = "analyst_attempt"
    OTHER = "other"


def classify_span(name: str, attributes: Mapping[str, object]) -> SpanKind:
    """The kind of a span from the few attributes that say it and at most a prefix test on its name.

    Only keys the span has are looked up: the SDK's attribute mapping answers a missing key by raising
    and catching ``KeyError``, which would dominate the cost for the many spans that are not GenAI.
    """
    present = CLASSIFYING_KEYS.intersection(attributes)
    if not present:
        is_tool = isinstance(name, str) and name.startswith(EXECUTE_TOOL_SPAN_PREFIX)
        return SpanKind.TOOL_EXECUTION if is_tool else SpanKind.OTHER
    values = {key: attributes[key] for key in present}
    if ANALYST_ID in values and ANALYST_ATTEMPT in values:
        return SpanKind.ANALYST_ATTEMPT
    operation = _string(values.get(OPERATION_NAME))
    if operation in _LLM_OPERATIONS:
        return SpanKind.LLM_CALL
    if operation == _EXECUTE_TOOL:
        return SpanKind.TOOL_EXECUTION
    openinference_kind = _string(values.get(OPENINFERENCE_SPAN_KIND))
    if openinference_kind == "LLM" or _string(values.get(LLM_REQUEST_TYPE)) in _LEGACY_LLM_REQUEST_TYPES:
        return SpanKind.LLM_CALL
    if (
        openinference_kind == "TOOL"
        or _string(values.get(TRACELOOP_SPAN_KIND)) == "tool"
        or _string(values.get(MCP_METHOD_NAME)) == _MCP_TOOLS_CALL
        or (isinstance(name, str) and name.startswith(EXECUTE_TOOL_SPAN_PREFIX))
    ):
        return SpanKind.TOOL_EXECUTION
    return SpanKind.OTHER


def names_own_tool_calls(attributes: Mapping[str, object]) -> bool:
    """Whether a span's own attributes carry its output, so its tool calls are known at its end.

    Flattened output that says the model stopped to call tools but names no tool call does not count:
    some instrumentations record the text of a reply and never its tool calls.
    """
    present = _OUTPUT_KEYS.intersection(attributes)
    if not present:
        return False
    if OUTPUT_MESSAGES in present:
        return True
    if not present.isdisjoint(COMPLETION_MARKERS):
        tool_call_marker, finish_reason_key = COMPLETION_TOOL_CALL_MARKER, COMPLETION_FINISH_REASON
    elif not present.isdisjoint(OUTPUT_MESSAGE_MARKERS):
        tool_call_marker, finish_reason_key = OUTPUT_TOOL_CALL_MARKER, OPENINFERENCE_FINISH_REASON
    else:
        return False
    if tool_call_marker in present:
        return True
    reasons = [attributes[key] for key in (finish_reason_key, FINISH_REASONS) if key in present]
    return not any(stopped_for_tools(reason) for reason in reasons)


def read_llm_call(span: ReadableSpan) -> LLMCall | None:
    """The LLM call a span records, in whichever convention it is written; ``None`` if it is none."""
    attributes = span.attributes or {}
    ref = _span_ref(span)
    if ref is None or classify_span(span.name, attributes) is not SpanKind.LLM_CALL:
        return None
    return llm_call_from_content(read_span_content(attributes), ref)


def read_span_content(attributes: Mapping[str, object]) -> CallContent:
    """Call content from every convention present on one span, OTel GenAI first."""
    readings = (
        read_genai_content(attributes),
        read_openllmetry_content(attributes),
        read_openinference_content(attributes),
    )
    return functools.reduce(merge_content, readings)


def read_tool_execution(span: ReadableSpan) -> ToolExecution | None:
    """The tool execution a span records; ``None`` if it is none or names no tool."""
    attributes = span.attributes or {}
    ref = _span_ref(span)
    name = span.name if isinstance(span.name, str) else ""
    if ref is None or classify_span(name, attributes) is not SpanKind.TOOL_EXECUTION:
        return None
    if _string(attributes.get(OPENINFERENCE_SPAN_KIND)) == "TOOL":
        execution = read_openinference_tool_execution(name, attributes, ref)
    elif _string(attributes.get(TRACELOOP_SPAN_KIND)) == "tool":
        execution = read_openllmetry_tool_execution(name, attributes, ref)
    else:
        execution = read_genai_tool_execution(name, attributes, ref)
    return execution if execution.name else None


def read_analyst_attempt(span: ReadableSpan) -> AnalystAttempt | None:
    """An analyst attempt span (``shapecheck.analyst.*``); ``None`` when its id or attempt is unreadable."""
    attributes = span.attributes or {}
    ref = _span_ref(span)
    analyst_id = optional_string(attributes.get(ANALYST_ID))
    attempt = _count(attributes.get(ANALYST_ATTEMPT))
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


def is_genai_content_record(log_record: AnyLogRecord) -> bool:
    """Whether a log record is a GenAI event that carries LLM-call content."""
    log_record = _api_record(log_record)
    attributes = log_record.attributes
    name = event_name_of(log_record.event_name, attributes if isinstance(attributes, Mapping) else None)
    return name in CONTENT_EVENT_NAMES


def read_log_records(log_records: Sequence[AnyLogRecord]) -> LLMCall | None:
    """The LLM-call content the GenAI log records of one span carry (given in emission order)."""
    events: list[tuple[str, Mapping[str, object], object]] = []
    ref: SpanRef | None = None
    for record in map(_api_record, log_records):
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


def _api_record(record: AnyLogRecord) -> LogRecord:
    """The API log record inside the SDK's processor and exporter wrappers."""
    if isinstance(record, ReadableLogRecord | ReadWriteLogRecord):
        return record.log_record
    return record


def _span_ref(span: ReadableSpan) -> SpanRef | None:
    context = span.context
    if context is None:
        return None
    ref = _ids_ref(context.span_id, context.trace_id)
    if ref is None:
        return None
    parent = span.parent
    parent_id = format(parent.span_id, "016x") if parent is not None and parent.span_id else None
    return SpanRef(ref.span_id, ref.trace_id, parent_id=parent_id, end_time_ns=span.end_time)


def _ids_ref(span_id: object, trace_id: object) -> SpanRef | None:
    if not _positive_int(span_id) or not _positive_int(trace_id):
        return None
    return SpanRef(span_id=format(span_id, "016x"), trace_id=format(trace_id, "032x"))


def _positive_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None
