"""OTLP/JSON in and out: exported traces become SDK ``ReadableSpan`` values, and spans become OTLP/JSON again.

Reads the shapes trace tooling writes: an OTLP/JSON ``{"resourceSpans": …}`` document (one, or one per
line as the Collector's file exporter writes), Tempo's trace API responses (``{"batches": …}``, and
``{"trace": …}`` from its v2 API) and Jaeger's OTLP API response (``{"result": {"resourceSpans": …}}``);
``{"resourceLogs": …}`` documents beside them give log records. Parsing goes through the official
``opentelemetry.proto`` messages with ``google.protobuf.json_format``; ids may be hex (OTLP/JSON, either
case) or base64 (protobuf's own JSON mapping, as older Tempo versions print them). Anything else is an
:class:`UnreadableTraceFile` naming the file and what is wrong with it.
"""

from __future__ import annotations

import base64
import gzip
import json
import logging
import sys
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

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
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
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

logger = logging.getLogger(__name__)

STDIN = "-"
"""The path that means: read standard input."""

_SPANS_PER_LINE = 512
# ParseDict reports most shape errors as ParseError, but a value of the wrong JSON type in some places
# surfaces as TypeError or ValueError from the protobuf runtime instead.
_PARSE_ERRORS = (json_format.ParseError, TypeError, ValueError)
_GZIP_MAGIC = b"\x1f\x8b"
_ID_BYTES = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
# Proto SpanKind counts from UNSPECIFIED = 0; the SDK's SpanKind from INTERNAL = 0.
_SPAN_KINDS = {0: SpanKind.INTERNAL, 1: SpanKind.INTERNAL, 2: SpanKind.SERVER, 3: SpanKind.CLIENT}
_SPAN_KINDS.update({4: SpanKind.PRODUCER, 5: SpanKind.CONSUMER})


class UnreadableTraceFile(ValueError):
    """Input that is not exported traces in a shape we read; the message names the input and the problem."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{_display_name(source)}: {problem}")
        self.source = source
        self.problem = problem


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


def load_spans(source: str) -> list[ReadableSpan]:
    """Read every span of one input (a file path, or ``-`` for standard input)."""
    return parse_spans(_read_bytes(source), source)


def parse_spans(data: bytes, source: str) -> list[ReadableSpan]:
    """Read every span from the bytes of one input; ``source`` names it in errors."""
    return parse_telemetry(data, source).spans


@dataclass(frozen=True)
class ExportedTelemetry:
    """What one input holds: spans, and the log records of any ``{"resourceLogs": …}`` documents.

    GenAI instrumentations in event mode put message content into log records; reading them beside the
    spans lets the checks see that content offline, as the log-record companion processor does live.
    """

    spans: list[ReadableSpan] = field(default_factory=list)
    log_records: list[ReadWriteLogRecord] = field(default_factory=list)


def load_telemetry(source: str) -> ExportedTelemetry:
    """Read every span and log record of one input (a file path, or ``-`` for standard input)."""
    return parse_telemetry(_read_bytes(source), source)


def parse_telemetry(data: bytes, source: str) -> ExportedTelemetry:
    """Read every span and log record from the bytes of one input; ``source`` names it in errors."""
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as error:
            raise UnreadableTraceFile(source, f"damaged gzip data ({error})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableTraceFile(
            source, "binary content, not OTLP/JSON text (export traces as JSON, not protobuf)"
        ) from None
    if not text.strip():
        raise UnreadableTraceFile(source, "empty input: expected OTLP/JSON traces")
    telemetry = ExportedTelemetry()
    try:
        for number, document in enumerate(_json_documents(text, source), start=1):
            if isinstance(document, Mapping) and "resourceLogs" in document:
                for resource_logs in _list_field(document, "resourceLogs", source, number):
                    telemetry.log_records.extend(_log_records_of(resource_logs, source, number))
                continue
            for resource_spans in _resource_spans_of(document, source, number):
                telemetry.spans.extend(_spans_of(resource_spans, source, number))
    except RecursionError:  # JSON nested deeper than any export: refuse it like any other bad shape
        raise UnreadableTraceFile(source, "JSON nested too deeply to be exported telemetry") from None
    return telemetry


def _display_name(source: str) -> str:
    return "<stdin>" if source == STDIN else source


def _read_bytes(source: str) -> bytes:
    if source == STDIN:
        return sys.stdin.buffer.read()
    path = Path(source)
    if path.is_dir():
        raise UnreadableTraceFile(source, "is a directory, expected a file of exported traces")
    try:
        return path.read_bytes()
    except OSError as error:
        raise UnreadableTraceFile(source, f"cannot be read ({error.strerror or error})") from None


def _json_documents(text: str, source: str) -> Iterator[Any]:
    """Yield each JSON document of ``text``: one document, JSON Lines, or documents back to back."""
    decoder = json.JSONDecoder()
    position, end = 0, len(text)
    while True:
        while position < end and text[position].isspace():
            position += 1
        if position >= end:
            return
        try:
            document, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            ended_early = error.pos >= len(text.rstrip()) or error.msg.startswith("Unterminated string")
            problem = "truncated JSON" if ended_early else "malformed JSON"
            raise UnreadableTraceFile(
                source, f"{problem} at line {error.lineno} column {error.colno} ({error.msg})"
            ) from None
        yield document


def _resource_spans_of(document: Any, source: str, number: int) -> list[Any]:
    """The ``resourceSpans`` list of one document, whichever of the accepted shapes it has."""
    if isinstance(document, Mapping):
        if "resourceSpans" in document:
            return _list_field(document, "resourceSpans", source, number)
        if "batches" in document:
            return [_tempo_batch(batch) for batch in _list_field(document, "batches", source, number)]
        # Jaeger's OTLP API wraps the document in "result"; Tempo's v2 trace-by-id API in "trace".
        for envelope in ("result", "trace"):
            inner = document.get(envelope)
            if isinstance(inner, Mapping) and ("resourceSpans" in inner or "batches" in inner):
                return _resource_spans_of(inner, source, number)
    shape = (
        f"an object with keys {sorted(document)[:5]}" if isinstance(document, Mapping) else "not an object"
    )
    raise UnreadableTraceFile(
        source,
        f"document {number} is not exported traces ({shape}); expected OTLP/JSON "
        '{"resourceSpans": …} (or {"resourceLogs": …}), Tempo {"batches": …} or {"trace": …}, '
        'or Jaeger {"result": {"resourceSpans": …}}',
    )


def _list_field(document: Mapping[str, Any], key: str, source: str, number: int) -> list[Any]:
    value = document[key]
    if value is None:
        return []
    if not isinstance(value, list):
        raise UnreadableTraceFile(source, f"document {number}: {key!r} is not a list")
    return value


def _tempo_batch(batch: Any) -> Any:
    """Tempo (and older OTLP) call scope spans ``instrumentationLibrarySpans``; read them as scope spans."""
    if not isinstance(batch, Mapping) or "instrumentationLibrarySpans" not in batch:
        return batch
    renamed = {key: value for key, value in batch.items() if key != "instrumentationLibrarySpans"}
    renamed["scopeSpans"] = [
        {("scope" if key == "instrumentationLibrary" else key): value for key, value in scope_spans.items()}
        if isinstance(scope_spans, Mapping)
        else scope_spans
        for scope_spans in batch["instrumentationLibrarySpans"] or ()
    ]
    return renamed


def _spans_of(resource_spans: Any, source: str, number: int) -> Iterator[ReadableSpan]:
    message = ResourceSpans()
    document = _ids_as_base64(resource_spans, source, number)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except _PARSE_ERRORS as error:
        raise UnreadableTraceFile(source, f"document {number} is not valid OTLP/JSON ({error})") from None
    yield from spans_from_message(message, source, number)


def _log_records_of(resource_logs: Any, source: str, number: int) -> Iterator[ReadWriteLogRecord]:
    if not isinstance(resource_logs, Mapping):
        raise UnreadableTraceFile(source, f"document {number}: a resourceLogs entry is not an object")
    message = ResourceLogs()
    document = _all_ids_as_base64(resource_logs, source, number)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except _PARSE_ERRORS as error:
        raise UnreadableTraceFile(
            source, f"document {number} is not valid OTLP/JSON logs ({error})"
        ) from None

    def skip(problem: str) -> None:  # only content matters here; one odd record need not stop the run
        logger.warning("%s: document %d: skipped a %s", _display_name(source), number, problem)

    yield from log_records_from_message(message, rejected=skip)


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


def _all_ids_as_base64(node: Any, source: str, number: int) -> Any:
    """Copy a document with every id field (wherever it sits) in protobuf's base64 JSON form."""
    if isinstance(node, Mapping):
        return {
            key: _id_as_base64(key, value, source, number)
            if key in _ID_BYTES
            else _all_ids_as_base64(value, source, number)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_all_ids_as_base64(item, source, number) for item in node]
    return node


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


def sdk_attributes(key_values: Iterable[KeyValue]) -> dict[str, SdkAnyValue]:
    """OTLP attributes as the SDK's plain values (arrays as tuples, key-value lists as dicts)."""
    return _attributes(key_values)


def sdk_value(value: AnyValue) -> SdkAnyValue:
    """One OTLP ``AnyValue`` as the SDK's plain value."""
    return _value(value)


def _ids_as_base64(resource_spans: Any, source: str, number: int) -> Any:
    """Copy the document with span and link ids in the base64 form protobuf's JSON mapping expects."""
    if not isinstance(resource_spans, Mapping):
        raise UnreadableTraceFile(source, f"document {number}: a resourceSpans entry is not an object")
    copy = dict(resource_spans)
    scope_spans_list = copy.get("scopeSpans") or []
    if not isinstance(scope_spans_list, list):
        raise UnreadableTraceFile(source, f"document {number}: 'scopeSpans' is not a list")
    copy["scopeSpans"] = [
        {**scope_spans, "spans": [_span_ids_as_base64(span, source, number) for span in scope_spans["spans"]]}
        if isinstance(scope_spans, Mapping) and isinstance(scope_spans.get("spans"), list)
        else scope_spans
        for scope_spans in scope_spans_list
    ]
    return copy


def _span_ids_as_base64(span: Any, source: str, number: int) -> Any:
    if not isinstance(span, Mapping):
        raise UnreadableTraceFile(source, f"document {number}: a span is not an object")
    copy = {key: _id_as_base64(key, value, source, number) for key, value in span.items()}
    links = span.get("links")
    if isinstance(links, list):
        copy["links"] = [
            {key: _id_as_base64(key, value, source, number) for key, value in link.items()}
            if isinstance(link, Mapping)
            else link
            for link in links
        ]
    return copy


def _id_as_base64(key: str, value: Any, source: str, number: int) -> Any:
    size = _ID_BYTES.get(key)
    if size is None or not isinstance(value, str) or not value:
        return value
    if len(value) == 2 * size:
        try:
            return base64.b64encode(bytes.fromhex(value)).decode("ascii")
        except ValueError:
            pass
    try:
        if len(base64.b64decode(value, validate=True)) == size:
            return value
    except ValueError:  # binascii.Error, and the plain ValueError b64decode raises for non-ASCII text
        pass
    raise UnreadableTraceFile(
        source, f"document {number}: {key} {value!r} is not a {size}-byte id (hex or base64)"
    )


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


def write_spans_jsonl(spans: Sequence[ReadableSpan], stream: IO[str]) -> None:
    """Write ``spans`` as OTLP/JSON Lines, a bounded number of spans per line."""
    for start in range(0, len(spans), _SPANS_PER_LINE):
        write_json_line(spans_to_otlp_json(spans[start : start + _SPANS_PER_LINE]), stream)


def write_json_line(document: Mapping[str, Any], stream: IO[str]) -> None:
    """Append ``document`` as one compact JSON line, as the Collector's file exporter writes."""
    stream.write(json.dumps(document, separators=(",", ":"), ensure_ascii=False))
    stream.write("\n")


class OtlpJsonLinesSpanExporter(SpanExporter):
    """Appends each exported batch of spans to a file as one OTLP/JSON line (the Collector's file format)."""

    def __init__(self, path: Path) -> None:
        self._lines = _JsonLinesFile(path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch; a write error is logged and reported as a failure."""
        if self._lines.write(lambda stream: write_spans_jsonl(spans, stream)):
            return SpanExportResult.SUCCESS
        return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Close the file."""
        self._lines.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Every line is flushed as it is written."""
        return True


class OtlpJsonLinesLogExporter(LogRecordExporter):
    """Appends each exported batch of log records to a file as one OTLP/JSON ``resourceLogs`` line."""

    def __init__(self, path: Path) -> None:
        self._lines = _JsonLinesFile(path)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Write the batch; a write error is logged and reported as a failure."""
        if self._lines.write(lambda stream: write_json_line(log_records_to_otlp_json(batch), stream)):
            return LogRecordExportResult.SUCCESS
        return LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        """Close the file."""
        self._lines.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Every line is flushed as it is written."""
        return True


class _JsonLinesFile:
    """A file opened for appending on first write, written under a lock, flushed after every write."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._stream: IO[str] | None = None
        self._closed = False

    def write(self, write: Callable[[IO[str]], None]) -> bool:
        with self._lock:
            if self._closed:
                return False
            try:
                if self._stream is None:
                    self._stream = self._path.open("a", encoding="utf-8")
                write(self._stream)
                self._stream.flush()
            except OSError:
                logger.exception("could not write OTLP/JSON lines to %s", self._path)
                return False
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._stream is not None:
                self._stream.close()
                self._stream = None


def _message_to_otlp_json(message: Message) -> dict[str, Any]:
    document: dict[str, Any] = json_format.MessageToDict(message, use_integers_for_enums=True)
    _ids_as_hex(document)
    return document


def _ids_as_hex(node: Any) -> None:
    """Rewrite, in place, every id field of a ``MessageToDict`` result from base64 to lowercase hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_BYTES and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _ids_as_hex(value)
    elif isinstance(node, list):
        for item in node:
            _ids_as_hex(item)
