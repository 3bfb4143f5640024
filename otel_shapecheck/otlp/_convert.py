"""OTLP protobuf messages into SDK telemetry, and SDK telemetry into OTLP/JSON.

Spans become ``ReadableSpan`` values (resource, scope, ids, parent, links, status, events, attributes and
dropped counts kept) and log records ``ReadWriteLogRecord`` values parented to their span, so exported or
received telemetry goes through the same span processor an application registers. The way back encodes
with the SDK's own OTLP encoders and writes ids as hex, as OTLP/JSON requires (:mod:`._ids`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeAlias

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord as ProtoLogRecord
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, SpanFlags
from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope as SdkInstrumentationScope
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    TraceFlags,
    TraceState,
    set_span_in_context,
)
from opentelemetry.trace.status import Status as SdkStatus
from opentelemetry.trace.status import StatusCode
from opentelemetry.util.types import AnyValue as SdkAnyValue

from otel_shapecheck.otlp._errors import UnreadableTraceFile
from otel_shapecheck.otlp._ids import ids_as_hex
from otel_shapecheck.otlp._span_copy import DroppedCounts, rebuilt_span

logger = logging.getLogger(__name__)

# Proto SpanKind counts from UNSPECIFIED = 0; the SDK's SpanKind from INTERNAL = 0.
_SPAN_KINDS = {0: SpanKind.INTERNAL, 1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}
_SPAN_KINDS.update({4: SpanKind.PRODUCER, 5: SpanKind.CONSUMER})
# Module constants, not enum members looked up per span: on Python 3.11 reading a member off an enum
# class runs the enum metaclass's attribute hook. Statuses and the empty trace state are immutable.
_INTERNAL = SpanKind.INTERNAL
_CONTEXT_IS_REMOTE = int(SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
_TRACE_FLAGS_MASK = int(SpanFlags.SPAN_FLAGS_TRACE_FLAGS_MASK)
_TRACE_FLAGS = [TraceFlags(byte | TraceFlags.SAMPLED) for byte in range(_TRACE_FLAGS_MASK + 1)]
_NO_TRACE_STATE = TraceState()
_OK_STATUS = SdkStatus(StatusCode.OK)
_UNSET_STATUS = SdkStatus(StatusCode.UNSET)


def log_records_from_message(
    message: ResourceLogs, *, rejected: Callable[[str], None] | None = None
) -> Iterator[ReadWriteLogRecord]:
    """The SDK log records of one OTLP ``ResourceLogs`` message, with resource, scope and parent span kept.

    A record the SDK cannot represent (an unknown severity number) raises ``ValueError``; with
    ``rejected`` given, the problem is handed to it instead and the record skipped.
    """
    resource = sdk_resource(message.resource.attributes, message.schema_url)
    for scope_logs in message.scope_logs:
        scope = sdk_scope(scope_logs.scope, scope_logs.schema_url)
        for record in scope_logs.log_records:
            try:
                api_record = _api_log_record(record)
            except ValueError as error:
                if rejected is None:
                    raise
                rejected(f"log record not readable ({error})")
                continue
            yield ReadWriteLogRecord(api_record, resource=resource, instrumentation_scope=scope)


def _api_log_record(record: ProtoLogRecord) -> LogRecord:
    return build_log_record(
        record.time_unix_nano,
        record.observed_time_unix_nano,
        record.trace_id,
        record.span_id,
        record.flags,
        record.severity_number,
        record.severity_text,
        _value(record.body) if record.HasField("body") else None,
        _attributes(record.attributes),
        record.event_name,
    )


def build_log_record(
    time_unix_nano: int,
    observed_time_unix_nano: int,
    trace_id: bytes,
    span_id: bytes,
    flags: int,
    severity_number: int,
    severity_text: str,
    body: SdkAnyValue,
    attributes: dict[str, SdkAnyValue],
    event_name: str,
) -> LogRecord:
    """The API log record of one OTLP log record's fields (as the proto or OTLP/JSON reader decoded them).

    Raises:
        ValueError: a severity number the SDK does not know.
    """
    trace = int.from_bytes(trace_id, "big")
    span = int.from_bytes(span_id, "big")
    context = None
    if trace and span:
        span_context = SpanContext(trace, span, is_remote=False, trace_flags=_trace_flags(flags))
        context = set_span_in_context(NonRecordingSpan(span_context), Context())
    return LogRecord(
        timestamp=time_unix_nano or None,
        observed_timestamp=observed_time_unix_nano or None,
        context=context if context is not None else Context(),
        severity_text=severity_text or None,
        severity_number=SeverityNumber(severity_number) if severity_number else None,
        body=body,
        attributes=attributes,
        event_name=event_name or None,
    )


def spans_from_message(
    message: ResourceSpans,
    source: str,
    number: int = 1,
    *,
    rejected: Callable[[UnreadableTraceFile], None] | None = None,
) -> Iterator[ReadableSpan]:
    """The SDK spans of one OTLP ``ResourceSpans`` message, with resource, scope, ids, parent, links,
    status, events and attributes kept.

    A span without a trace id or span id raises :class:`UnreadableTraceFile`; with ``rejected`` given it
    is handed to it instead and skipped, so a receiver can accept the rest and count the one.
    """
    resource = sdk_resource(message.resource.attributes, message.schema_url)
    for scope_spans in message.scope_spans:
        scope = sdk_scope(scope_spans.scope, scope_spans.schema_url)
        for span in scope_spans.spans:
            try:
                readable = _readable_span(span, resource, scope, source, number)
            except UnreadableTraceFile as problem:
                if rejected is None:
                    raise
                rejected(problem)
                continue
            yield readable


def sdk_resource(attributes: Iterable[KeyValue], schema_url: str) -> Resource:
    """The SDK ``Resource`` of OTLP resource attributes."""
    return Resource(_attributes(attributes), schema_url)


def sdk_scope(scope: InstrumentationScope, schema_url: str) -> SdkInstrumentationScope:
    """The SDK instrumentation scope of an OTLP ``InstrumentationScope``."""
    return _scope(scope, schema_url)


def _readable_span(
    span: Span, resource: Resource, scope: SdkInstrumentationScope, source: str, number: int
) -> ReadableSpan:
    return build_span(
        span.name,
        span.trace_id,
        span.span_id,
        span.trace_state,
        span.parent_span_id,
        span.flags,
        span.kind,
        span.start_time_unix_nano,
        span.end_time_unix_nano,
        _attributes(span.attributes),
        (span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count),
        [(event.name, _attributes(event.attributes), event.time_unix_nano) for event in span.events],
        [
            (link.trace_id, link.span_id, link.trace_state, link.flags, _attributes(link.attributes))
            for link in span.links
        ],
        span.status.code,
        span.status.message,
        resource,
        scope,
        source,
        number,
    )


EventFields: TypeAlias = "tuple[str, dict[str, SdkAnyValue], int]"
"""An OTLP span event's name, attributes and time."""
LinkFields: TypeAlias = "tuple[bytes, bytes, str, int, dict[str, SdkAnyValue]]"
"""An OTLP span link's trace id, span id, trace state, flags and attributes."""


def build_span(
    name: str,
    trace_id: bytes,
    span_id: bytes,
    trace_state: str,
    parent_span_id: bytes,
    flags: int,
    kind: int,
    start_time_unix_nano: int,
    end_time_unix_nano: int,
    attributes: dict[str, SdkAnyValue],
    dropped: DroppedCounts,
    events: Iterable[EventFields],
    links: Iterable[LinkFields],
    status_code: int,
    status_message: str,
    resource: Resource,
    scope: SdkInstrumentationScope,
    source: str,
    number: int,
) -> ReadableSpan:
    """The SDK span of one OTLP span's fields, as the protobuf or the OTLP/JSON reader decoded them.

    Raises:
        UnreadableTraceFile: the span has no trace id or no span id.
    """
    trace = int.from_bytes(trace_id, "big")
    span = int.from_bytes(span_id, "big")
    if not trace or not span:
        raise UnreadableTraceFile(source, f"document {number}: span {name!r} has no trace id or span id")
    state = _trace_state(trace_state)
    trace_flags = _trace_flags(flags)
    parent = None
    if parent_span_id:
        parent = SpanContext(
            trace,
            int.from_bytes(parent_span_id, "big"),
            is_remote=bool(flags & _CONTEXT_IS_REMOTE),
            trace_flags=trace_flags,
            trace_state=state,
        )
    return rebuilt_span(
        name,
        SpanContext(trace, span, is_remote=False, trace_flags=trace_flags, trace_state=state),
        parent,
        resource,
        scope,
        _SPAN_KINDS.get(kind, _INTERNAL),
        start_time_unix_nano or None,
        end_time_unix_nano or None,
        _status(status_code, status_message),
        BoundedAttributes(attributes=attributes, immutable=True, max_value_len=None),
        tuple(
            Event(event_name, BoundedAttributes(attributes=event_attributes, immutable=True), time)
            for event_name, event_attributes, time in events
        ),
        tuple(_link(*link) for link in links),
        dropped,
    )


def _link(
    trace_id: bytes, span_id: bytes, trace_state: str, flags: int, attributes: dict[str, SdkAnyValue]
) -> Link:
    context = SpanContext(
        int.from_bytes(trace_id, "big"),
        int.from_bytes(span_id, "big"),
        is_remote=bool(flags & _CONTEXT_IS_REMOTE),
        trace_flags=_trace_flags(flags),
        trace_state=_trace_state(trace_state),
    )
    return Link(context, BoundedAttributes(attributes=attributes, immutable=True))


def _trace_flags(flags: int) -> TraceFlags:
    # An exported span was sampled by definition; the OTLP encoders of several SDKs (Python's included)
    # do not write the W3C flag byte, and a zero would make SDK processors drop the span.
    return _TRACE_FLAGS[flags & _TRACE_FLAGS_MASK]


def _trace_state(header: str) -> TraceState:
    return TraceState.from_header([header]) if header else _NO_TRACE_STATE


def _status(code: int, message: str) -> SdkStatus:
    if code == 2:
        return SdkStatus(StatusCode.ERROR, message or None)
    return _OK_STATUS if code == 1 else _UNSET_STATUS


def _scope(scope: InstrumentationScope, schema_url: str) -> SdkInstrumentationScope:
    return SdkInstrumentationScope(
        scope.name, scope.version, schema_url, _attributes(scope.attributes) or None
    )


def _attributes(key_values: Iterable[KeyValue]) -> dict[str, SdkAnyValue]:
    return {key_value.key: _value(key_value.value) for key_value in key_values}


def _value(value: AnyValue) -> SdkAnyValue:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if kind is None:
        return None
    plain: SdkAnyValue = getattr(value, kind)
    return plain


def spans_to_otlp_json(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """One OTLP/JSON ``{"resourceSpans": …}`` document for ``spans``, with hex ids as OTLP/JSON requires."""
    return _message_to_otlp_json(encode_spans(spans))


def log_records_to_otlp_json(records: Sequence[ReadableLogRecord]) -> dict[str, Any]:
    """One OTLP/JSON ``{"resourceLogs": …}`` document for ``records``, with hex ids."""
    return _message_to_otlp_json(encode_logs(records))


def _message_to_otlp_json(message: Message) -> dict[str, Any]:
    document: dict[str, Any] = json_format.MessageToDict(message, use_integers_for_enums=True)
    ids_as_hex(document)
    return document
