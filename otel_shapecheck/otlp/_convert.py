"""OTLP protobuf messages into SDK telemetry, and SDK telemetry into OTLP/JSON.

Spans become ``ReadableSpan`` values (resource, scope, ids, parent, links, status, events, attributes and
dropped counts kept) and log records ``ReadWriteLogRecord`` values parented to their span, so exported or
received telemetry goes through the same span processor an application registers. The way back encodes
with the SDK's own OTLP encoders and writes ids as hex, as OTLP/JSON requires (:mod:`._ids`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

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
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, Span, SpanFlags, Status
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

logger = logging.getLogger(__name__)

# Proto SpanKind counts from UNSPECIFIED = 0; the SDK's SpanKind from INTERNAL = 0.
_SPAN_KINDS = {0: SpanKind.INTERNAL, 1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}
_SPAN_KINDS.update({4: SpanKind.PRODUCER, 5: SpanKind.CONSUMER})


class _LoadedSpan(ReadableSpan):
    """A span read from an export, keeping the dropped counts the export recorded."""

    def __init__(self, dropped: tuple[int, int, int], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._dropped_counts = dropped

    @property
    def dropped_attributes(self) -> int:
        return self._dropped_counts[0]

    @property
    def dropped_events(self) -> int:
        return self._dropped_counts[1]

    @property
    def dropped_links(self) -> int:
        return self._dropped_counts[2]


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
    trace_id = int.from_bytes(record.trace_id, "big")
    span_id = int.from_bytes(record.span_id, "big")
    context = None
    if trace_id and span_id:
        span_context = SpanContext(trace_id, span_id, is_remote=False, trace_flags=_trace_flags(record.flags))
        context = set_span_in_context(NonRecordingSpan(span_context), Context())
    severity = record.severity_number
    return LogRecord(
        timestamp=record.time_unix_nano or None,
        observed_timestamp=record.observed_time_unix_nano or None,
        context=context if context is not None else Context(),
        severity_text=record.severity_text or None,
        severity_number=SeverityNumber(severity) if severity else None,
        body=_value(record.body) if record.HasField("body") else None,
        attributes=_attributes(record.attributes),
        event_name=record.event_name or None,
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
    trace_id = int.from_bytes(span.trace_id, "big")
    span_id = int.from_bytes(span.span_id, "big")
    if not trace_id or not span_id:
        raise UnreadableTraceFile(source, f"document {number}: span {span.name!r} has no trace id or span id")
    trace_state = _trace_state(span.trace_state)
    parent = None
    if span.parent_span_id:
        parent = SpanContext(
            trace_id,
            int.from_bytes(span.parent_span_id, "big"),
            is_remote=_is_remote(span.flags),
            trace_flags=_trace_flags(span.flags),
            trace_state=trace_state,
        )
    return _LoadedSpan(
        dropped=(span.dropped_attributes_count, span.dropped_events_count, span.dropped_links_count),
        name=span.name,
        context=SpanContext(
            trace_id, span_id, is_remote=False, trace_flags=_trace_flags(span.flags), trace_state=trace_state
        ),
        parent=parent,
        resource=resource,
        attributes=BoundedAttributes(
            attributes=_attributes(span.attributes), immutable=True, max_value_len=None
        ),
        events=tuple(
            Event(
                event.name,
                BoundedAttributes(attributes=_attributes(event.attributes), immutable=True),
                event.time_unix_nano,
            )
            for event in span.events
        ),
        links=tuple(_link(link) for link in span.links),
        kind=_SPAN_KINDS.get(span.kind, SpanKind.INTERNAL),
        status=_status(span.status),
        start_time=span.start_time_unix_nano or None,
        end_time=span.end_time_unix_nano or None,
        instrumentation_scope=scope,
    )


def _link(link: Span.Link) -> Link:
    context = SpanContext(
        int.from_bytes(link.trace_id, "big"),
        int.from_bytes(link.span_id, "big"),
        is_remote=_is_remote(link.flags),
        trace_flags=_trace_flags(link.flags),
        trace_state=_trace_state(link.trace_state),
    )
    return Link(context, BoundedAttributes(attributes=_attributes(link.attributes), immutable=True))


def _is_remote(flags: int) -> bool:
    return bool(flags & SpanFlags.SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)


def _trace_flags(flags: int) -> TraceFlags:
    # An exported span was sampled by definition; the OTLP encoders of several SDKs (Python's included)
    # do not write the W3C flag byte, and a zero would make SDK processors drop the span.
    return TraceFlags((flags & SpanFlags.SPAN_FLAGS_TRACE_FLAGS_MASK) | TraceFlags.SAMPLED)


def _trace_state(header: str) -> TraceState:
    return TraceState.from_header([header]) if header else TraceState()


def _status(status: Status) -> SdkStatus:
    code = {1: StatusCode.OK, 2: StatusCode.ERROR}.get(status.code, StatusCode.UNSET)
    return SdkStatus(code, (status.message or None) if code is StatusCode.ERROR else None)


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
