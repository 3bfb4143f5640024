"""OTLP/JSON Lines out: the Collector file exporter's format, one compact document per line."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_shapecheck.otlp._convert import log_records_to_otlp_json, spans_to_otlp_json

logger = logging.getLogger(__name__)

_SPANS_PER_LINE = 512


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
