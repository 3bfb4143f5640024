"""Exported traces on disk into SDK spans and log records: the shapes trace tooling writes.

An OTLP/JSON ``{"resourceSpans": …}`` document (one, or one per line as the Collector's file exporter
writes), Tempo's trace API responses (``{"batches": …}``, and ``{"trace": …}`` from its v2 API) and
Jaeger's OTLP API response (``{"result": {"resourceSpans": …}}``); ``{"resourceLogs": …}`` documents beside
them give log records, and ``{}`` is an export without spans (proto3 JSON leaves empty lists out). Ids
may be hex or base64 (:mod:`._ids`); gzip input is inflated. Anything else is
an :class:`UnreadableTraceFile` naming the file and what is wrong with it.

Documents are decoded with ``json`` and read into SDK telemetry directly (:mod:`._json_read`,
:mod:`._json_logs`), by the same rules protobuf's JSON mapping reads them with, without building
protobuf messages first.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp._errors import STDIN, UnreadableTraceFile, display_name
from otel_shapecheck.otlp._ids import InvalidId
from otel_shapecheck.otlp._json_logs import log_records_from_json
from otel_shapecheck.otlp._json_read import spans_from_json
from otel_shapecheck.otlp._json_values import InvalidOtlp

logger = logging.getLogger(__name__)

_GZIP_MAGIC = b"\x1f\x8b"


def load_spans(source: str, limits: InputLimits | None = None) -> list[ReadableSpan]:
    """Read every span of one input (a file path, or ``-`` for standard input)."""
    return load_telemetry(source, limits).spans


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


DEFAULT_MAX_INPUT_BYTES = 256 * 1024 * 1024
DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class InputLimits:
    """How much one input may hold, so a hostile file costs bounded memory and time.

    ``max_input_bytes`` bounds what is read and what gzip inflates to (a small ``.gz`` of zeros inflates
    a thousandfold); ``max_line_bytes`` bounds one line, which for JSON Lines is one whole document.
    """

    max_input_bytes: int = DEFAULT_MAX_INPUT_BYTES
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    def __post_init__(self) -> None:
        for name in ("max_input_bytes", "max_line_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}={value!r} is not a valid value: it must be a whole number ≥ 1")


def load_telemetry(source: str, limits: InputLimits | None = None) -> ExportedTelemetry:
    """Read every span and log record of one input (a file path, or ``-`` for standard input).

    Only regular files (or standard input) are read: a device or FIFO could stream without end.
    """
    limits = limits or InputLimits()
    return parse_telemetry(_read_bytes(source, limits.max_input_bytes), source, limits)


def parse_telemetry(data: bytes, source: str, limits: InputLimits | None = None) -> ExportedTelemetry:
    """Read every span and log record from the bytes of one input; ``source`` names it in errors."""
    limits = limits or InputLimits()
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, source, limits.max_input_bytes)
    elif len(data) > limits.max_input_bytes:
        raise UnreadableTraceFile(source, _too_large(limits.max_input_bytes))
    _check_lines(data, source, limits.max_line_bytes)
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


def _read_bytes(source: str, limit: int) -> bytes:
    if source == STDIN:
        return _read_at_most(sys.stdin.buffer, source, limit)
    try:
        mode = os.stat(source).st_mode  # follows links: a link to /dev/zero is a device
    except OSError as error:
        raise UnreadableTraceFile(source, f"cannot be read ({error.strerror or error})") from None
    if stat.S_ISDIR(mode):
        raise UnreadableTraceFile(source, "is a directory, expected a file of exported traces")
    if not stat.S_ISREG(mode):
        raise UnreadableTraceFile(source, "is not a regular file (a device, FIFO or socket); not read")
    try:
        with open(source, "rb") as stream:
            return _read_at_most(stream, source, limit)
    except OSError as error:
        raise UnreadableTraceFile(source, f"cannot be read ({error.strerror or error})") from None


def _read_at_most(stream: IO[bytes], source: str, limit: int) -> bytes:
    data: bytes = stream.read(limit + 1)
    if len(data) > limit:
        raise UnreadableTraceFile(source, _too_large(limit))
    return data


def _gunzip(data: bytes, source: str, limit: int) -> bytes:
    """Inflate every gzip member of ``data``, checking each member's CRC and length, at most ``limit``.

    Concatenated members are read whole (``gzip`` allows them); data cut before a member's trailer and
    anything after the last member that is not another member is refused.
    """
    out = bytearray()
    rest = data
    while rest:
        if rest[:2] != _GZIP_MAGIC:
            raise UnreadableTraceFile(source, "damaged gzip data (trailing bytes after the last member)")
        inflater = zlib.decompressobj(wbits=zlib.MAX_WBITS | 16)
        pending = rest
        try:
            while True:
                out += inflater.decompress(pending, limit + 1 - len(out))
                if len(out) > limit:
                    raise UnreadableTraceFile(source, _too_large(limit, inflated=True))
                if inflater.eof:
                    break
                pending = inflater.unconsumed_tail
                if not pending:
                    raise UnreadableTraceFile(source, "damaged gzip data (it ends before its trailer)")
        except zlib.error as error:  # a bad header, block, CRC or length
            raise UnreadableTraceFile(source, f"damaged gzip data ({error})") from None
        rest = inflater.unused_data
    return bytes(out)


def _check_lines(data: bytes, source: str, limit: int) -> None:
    start = 0
    while True:
        newline = data.find(b"\n", start)
        end = len(data) if newline < 0 else newline
        if end - start > limit:
            raise UnreadableTraceFile(
                source,
                f"has a line of more than {limit} bytes (the line limit, --max-line-bytes); "
                "split it or raise the limit",
            )
        if newline < 0:
            return
        start = newline + 1


def _too_large(limit: int, *, inflated: bool = False) -> str:
    what = "inflates to" if inflated else "holds"
    return f"{what} more than {limit} bytes (the input limit, --max-input-bytes); raise it to read this input"


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
        except ValueError as error:  # a number past Python's 4 300-digit conversion limit
            raise UnreadableTraceFile(source, f"a JSON number no exporter writes ({error})") from None
        yield document


def _resource_spans_of(document: Any, source: str, number: int) -> list[Any]:
    """The ``resourceSpans`` list of one document, whichever of the accepted shapes it has."""
    if isinstance(document, Mapping):
        if not document:  # proto3 JSON leaves out empty fields: an export without spans is {}
            return []
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
    scope_spans_list = batch["instrumentationLibrarySpans"]
    if not isinstance(scope_spans_list, list | None):
        renamed["scopeSpans"] = scope_spans_list  # refused as "not a list" with the other shapes
        return renamed
    renamed["scopeSpans"] = [
        {("scope" if key == "instrumentationLibrary" else key): value for key, value in scope_spans.items()}
        if isinstance(scope_spans, Mapping)
        else scope_spans
        for scope_spans in scope_spans_list or ()
    ]
    return renamed


def _spans_of(resource_spans: Any, source: str, number: int) -> list[ReadableSpan]:
    _check_span_shapes(resource_spans, source, number)
    try:
        return spans_from_json(resource_spans, source, number)
    except InvalidId as invalid:
        raise UnreadableTraceFile(source, f"document {number}: {invalid}") from None
    except InvalidOtlp as error:
        raise UnreadableTraceFile(source, f"document {number} is not valid OTLP/JSON ({error})") from None


def _log_records_of(resource_logs: Any, source: str, number: int) -> list[ReadWriteLogRecord]:
    if not isinstance(resource_logs, Mapping):
        raise UnreadableTraceFile(source, f"document {number}: a resourceLogs entry is not an object")

    def skip(problem: str) -> None:  # only content matters here; one odd record need not stop the run
        logger.warning("%s: document %d: skipped a %s", display_name(source), number, problem)

    try:
        return log_records_from_json(resource_logs, rejected=skip)
    except InvalidId as invalid:
        raise UnreadableTraceFile(source, f"document {number}: {invalid}") from None
    except InvalidOtlp as error:
        raise UnreadableTraceFile(
            source, f"document {number} is not valid OTLP/JSON logs ({error})"
        ) from None


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
