"""Request bodies and answers shared by both transports: gzip read strictly, responses, refusals logged once.

A gzip body must be whole: every member passes its CRC-32 and length check, members that follow one
another are all read (RFC 1952 allows concatenation), and anything else after the last member, or a body
cut before its trailer, is refused. Decompression stops as soon as the output passes the limit, so a
small body that would inflate to gigabytes costs a few milliseconds.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib

from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from otel_shapecheck.gateway._decode import Kind

logger = logging.getLogger(__name__)

_GZIP_MAGIC = b"\x1f\x8b"
_QUIET_SECONDS = 10.0


class DamagedBody(ValueError):
    """A compressed body that does not decompress whole (answered 400)."""


class InflatesTooFar(ValueError):
    """A compressed body whose content is larger than the limit (answered 413)."""


def gunzip(body: bytes, limit: int) -> bytes:
    """The content of a gzip body (one or more members), at most ``limit`` bytes.

    Raises:
        DamagedBody: not gzip, a bad CRC or length, a truncated member, or data after the last member.
        InflatesTooFar: the content passes ``limit``.
    """
    out: list[bytes] = []
    size = 0
    rest = body
    if not rest.startswith(_GZIP_MAGIC):
        raise DamagedBody("damaged gzip body (it does not start like gzip)")
    while rest:
        if not rest.startswith(_GZIP_MAGIC):
            raise DamagedBody(f"damaged gzip body ({len(rest)} bytes of trailing data after the last member)")
        decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            data = decompressor.decompress(rest, limit - size + 1)
        except zlib.error as error:
            raise DamagedBody(f"damaged gzip body ({error})") from None
        size += len(data)
        if size > limit or decompressor.unconsumed_tail:
            raise InflatesTooFar(f"the request body inflates to more than the limit of {limit} bytes")
        if not decompressor.eof:
            raise DamagedBody("damaged gzip body (truncated: it ends before its CRC and length)")
        out.append(data)
        rest = decompressor.unused_data
    return b"".join(out)


def export_response(kind: Kind, rejected: int, message: str) -> Message:
    """The OTLP success response, with ``partial_success`` when items were rejected."""
    if kind == "traces":
        traces = ExportTraceServiceResponse()
        if rejected:
            traces.partial_success.rejected_spans = rejected
            traces.partial_success.error_message = message
        return traces
    logs = ExportLogsServiceResponse()
    if rejected:
        logs.partial_success.rejected_log_records = rejected
        logs.partial_success.error_message = message
    return logs


class QuietLog:
    """Logs one line per kind of refusal per 10 s, with the count of those it kept quiet (no traceback);
    an unexpected failure logs its traceback, once per kind per 10 s."""

    def __init__(self, log: logging.Logger) -> None:
        self._log = log
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._quiet: dict[str, int] = {}

    def note(self, kind: str, message: str) -> None:
        """One refused request of ``kind`` (e.g. ``malformed``), described by ``message``."""
        quiet = self._due(kind)
        if quiet is not None:
            self._log.warning("Refused a %s OTLP request: %s%s", kind, message[:300], _more(quiet))

    def failure(self, kind: str, message: str) -> None:
        """An unexpected error in handling a request (called in its ``except`` block): its traceback."""
        quiet = self._due(f"failure:{kind}")
        if quiet is not None:
            self._log.exception("%s%s", message, _more(quiet))

    def reset(self) -> None:
        """Start a new interval for every kind (what was kept quiet is forgotten)."""
        with self._lock:
            self._last.clear()
            self._quiet.clear()

    def _due(self, kind: str) -> int | None:
        """How many of ``kind`` were kept quiet, when one should be logged now; else ``None``."""
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(kind, -_QUIET_SECONDS) < _QUIET_SECONDS:
                self._quiet[kind] = self._quiet.get(kind, 0) + 1
                return None
            self._last[kind] = now
            return self._quiet.pop(kind, 0)


def _more(quiet: int) -> str:
    return f" ({quiet} more in the last {_QUIET_SECONDS:.0f} s)" if quiet else ""


class QuietFilter(logging.Filter):
    """Keeps one record per message template per 10 s: for loggers that would write one per request or
    per span."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[str, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = str(record.msg)
        now = record.created
        if now - self._last.get(key, -_QUIET_SECONDS) < _QUIET_SECONDS:
            return False
        self._last[key] = now
        return True


def quiet(name: str) -> None:
    """Throttle the logger ``name`` with a :class:`QuietFilter` (once, however often called)."""
    target = logging.getLogger(name)
    if not any(isinstance(existing, QuietFilter) for existing in target.filters):
        target.addFilter(QuietFilter())


refusals = QuietLog(logger)
"""The gateway's one log of refused requests (malformed, unauthenticated) and of requests that failed,
for both transports."""
