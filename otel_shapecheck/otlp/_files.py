"""Exported traces on disk into SDK spans and log records: the shapes trace tooling writes.

An OTLP/JSON ``{"resourceSpans": …}`` document (one, or one per line as the Collector's file exporter
writes), Tempo's trace API responses (``{"batches": …}``, and ``{"trace": …}`` from its v2 API) and
Jaeger's OTLP API response (``{"result": {"resourceSpans": …}}``); ``{"resourceLogs": …}`` documents beside
them give log records. Ids may be hex or base64 (:mod:`._ids`); gzip input is inflated. Anything else is
an :class:`UnreadableTraceFile` naming the file and what is wrong with it.
"""

from __future__ import annotations

import gzip
import json
import logging
import sys
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp._convert import log_records_from_message, spans_from_message
from otel_shapecheck.otlp._errors import STDIN, UnreadableTraceFile, display_name
from otel_shapecheck.otlp._ids import InvalidId, ids_as_base64

logger = logging.getLogger(__name__)

# ParseDict reports most shape errors as ParseError, but a value of the wrong JSON type in some places
# surfaces as TypeError or ValueError from the protobuf runtime instead.
_PARSE_ERRORS = (json_format.ParseError, TypeError, ValueError)


_GZIP_MAGIC = b"\x1f\x8b"


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
    _check_span_shapes(resource_spans, source, number)
    message = ResourceSpans()
    document = _with_base64_ids(resource_spans, source, number)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except _PARSE_ERRORS as error:
        raise UnreadableTraceFile(source, f"document {number} is not valid OTLP/JSON ({error})") from None
    yield from spans_from_message(message, source, number)


def _log_records_of(resource_logs: Any, source: str, number: int) -> Iterator[ReadWriteLogRecord]:
    if not isinstance(resource_logs, Mapping):
        raise UnreadableTraceFile(source, f"document {number}: a resourceLogs entry is not an object")
    message = ResourceLogs()
    document = _with_base64_ids(resource_logs, source, number)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except _PARSE_ERRORS as error:
        raise UnreadableTraceFile(
            source, f"document {number} is not valid OTLP/JSON logs ({error})"
        ) from None

    def skip(problem: str) -> None:  # only content matters here; one odd record need not stop the run
        logger.warning("%s: document %d: skipped a %s", display_name(source), number, problem)

    yield from log_records_from_message(message, rejected=skip)


def _check_span_shapes(resource_spans: Any, source: str, number: int) -> None:
    """Refuse the shapes protobuf's parser would report least clearly, naming what is wrong."""
    if not isinstance(resource_spans, Mapping):
        raise UnreadableTraceFile(source, f"document {number}: a resourceSpans entry is not an object")
    scope_spans_list = resource_spans.get("scopeSpans") or []
    if not isinstance(scope_spans_list, list):
        raise UnreadableTraceFile(source, f"document {number}: 'scopeSpans' is not a list")
    for scope_spans in scope_spans_list:
        spans = scope_spans.get("spans") if isinstance(scope_spans, Mapping) else None
        if isinstance(spans, list) and not all(isinstance(span, Mapping) for span in spans):
            raise UnreadableTraceFile(source, f"document {number}: a span is not an object")


def _with_base64_ids(document: Any, source: str, number: int) -> Any:
    try:
        return ids_as_base64(document)
    except InvalidId as invalid:
        raise UnreadableTraceFile(source, f"document {number}: {invalid}") from None
