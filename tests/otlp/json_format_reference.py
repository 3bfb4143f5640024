"""The OTLP/JSON reader as it was before it read decoded JSON directly: ids rewritten to base64, then
``json_format.ParseDict`` into protobuf messages, then the proto conversion. Kept for the parity tests."""

from __future__ import annotations

import math
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from google.protobuf import json_format
from opentelemetry.proto.logs.v1.logs_pb2 import ResourceLogs
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp import _files
from otel_shapecheck.otlp._convert import log_records_from_message, spans_from_message
from otel_shapecheck.otlp._errors import UnreadableTraceFile
from otel_shapecheck.otlp._ids import InvalidId, ids_as_base64


def _with_base64_ids(document: Any, source: str, number: int) -> Any:
    try:
        return ids_as_base64(document)
    except InvalidId as invalid:
        raise UnreadableTraceFile(source, f"document {number}: {invalid}") from None


def _spans_of(resource_spans: Any, source: str, number: int) -> list[ReadableSpan]:
    _files._check_span_shapes(resource_spans, source, number)
    message = ResourceSpans()
    document = _with_base64_ids(resource_spans, source, number)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as error:
        raise UnreadableTraceFile(source, f"document {number} is not valid OTLP/JSON ({error})") from None
    return list(spans_from_message(message, source, number))


def _log_records_of(resource_logs: Any, source: str, number: int) -> list[ReadWriteLogRecord]:
    if not isinstance(resource_logs, dict):
        raise UnreadableTraceFile(source, f"document {number}: a resourceLogs entry is not an object")
    message = ResourceLogs()
    document = _with_base64_ids(resource_logs, source, number)
    try:
        json_format.ParseDict(document, message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as error:
        raise UnreadableTraceFile(
            source, f"document {number} is not valid OTLP/JSON logs ({error})"
        ) from None
    return list(log_records_from_message(message, rejected=lambda problem: None))


@contextmanager
def json_format_reader() -> Iterator[None]:
    """Read with the json_format path meanwhile (``otel_shapecheck.otlp._files`` patched)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_files, "_spans_of", _spans_of)
        patch.setattr(_files, "_log_records_of", _log_records_of)
        yield


_HIGH = rb"\\u[dD][89abAB][0-9a-fA-F]{2}"
_LOW = rb"\\u[dD][c-fC-F][0-9a-fA-F]{2}"
_SURROGATE = re.compile(rb"%s(?!%s)|(?<!%s)%s" % (_HIGH, _LOW, _HIGH, _LOW))
"""An escaped unpaired surrogate, as ``json.dumps`` writes one; a pair (``\\ud800\\udc00``) is one character
beyond the BMP, which both readers read."""


def read_both(data: bytes) -> tuple[Any, Any]:
    """What each reader makes of ``data``: a description of its telemetry, or ``"refused"``."""
    try:
        new: Any = describe_telemetry(_files.parse_telemetry(data, "parity.json"))
    except UnreadableTraceFile as error:
        assert str(error).startswith("parity.json: ")
        new = "refused"
    try:
        with json_format_reader():
            old: Any = describe_telemetry(_files.parse_telemetry(data, "parity.json"))
    except Exception:  # noqa: BLE001  # a few inputs made it raise OverflowError: refused all the same
        old = "refused"
        if new != "refused" and _SURROGATE.search(data):
            # protobuf refuses an unpaired surrogate wherever it sits (a SystemError from its C parser),
            # even in an entry neither reader reads; ours refuses one only where it reads it. So compare
            # with the document whose surrogates are replaced: the new reader must read it the same.
            old = _read_json_format(_SURROGATE.sub(rb"\\ufffd", data))
    return new, old


def _read_json_format(data: bytes) -> Any:
    try:
        with json_format_reader():
            return describe_telemetry(_files.parse_telemetry(data, "parity.json"))
    except Exception:  # noqa: BLE001
        return "refused"


def describe_telemetry(telemetry: _files.ExportedTelemetry) -> Any:
    return [describe_span(span) for span in telemetry.spans], [
        describe_record(record) for record in telemetry.log_records
    ]


def describe(value: Any) -> Any:
    """A value with its type at every level (``True`` and ``1`` differ), NaN comparable."""
    if isinstance(value, float) and math.isnan(value):
        return ("float", "nan")
    if isinstance(value, tuple | list):
        return (type(value).__name__, tuple(describe(item) for item in value))
    if isinstance(value, dict) or hasattr(value, "items"):
        return ("mapping", tuple((key, describe(item)) for key, item in value.items()))
    return (type(value).__name__, value)


def _context(context: Any) -> Any:
    if context is None:
        return None
    return (
        context.trace_id,
        context.span_id,
        context.is_remote,
        int(context.trace_flags),
        context.trace_state.to_header(),
    )


def _scope(scope: Any) -> Any:
    if scope is None:
        return None
    return (scope.name, scope.version, scope.schema_url, describe(scope.attributes))


def describe_span(span: ReadableSpan) -> Any:
    return (
        describe(span.name),
        _context(span.context),
        _context(span.parent),
        span.kind,
        (span.status.status_code, span.status.description),
        span.start_time,
        span.end_time,
        describe(dict(span.attributes or {})),
        tuple((event.name, describe(dict(event.attributes or {})), event.timestamp) for event in span.events),
        tuple((_context(link.context), describe(dict(link.attributes or {}))) for link in span.links),
        (describe(dict(span.resource.attributes)), span.resource.schema_url),
        _scope(span.instrumentation_scope),
        (span.dropped_attributes, span.dropped_events, span.dropped_links),
    )


def describe_record(record: ReadWriteLogRecord) -> Any:
    log = record.log_record
    observed = log.observed_timestamp
    if observed is not None and abs(observed - time.time_ns()) < 600 * 10**9:
        observed = "now"  # the SDK stamps a record that has no observed time with the current time
    return (
        log.timestamp,
        observed,
        log.trace_id,
        log.span_id,
        int(log.trace_flags) if log.trace_flags is not None else None,
        log.severity_number,
        log.severity_text,
        describe(log.body),
        describe(dict(log.attributes or {})),
        log.event_name,
        (describe(dict(record.resource.attributes)), record.resource.schema_url),
        _scope(record.instrumentation_scope),
    )
