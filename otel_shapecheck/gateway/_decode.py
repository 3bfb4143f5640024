"""OTLP export requests into SDK telemetry: spans as ``ReadableSpan``, log records as ``ReadWriteLogRecord``.

Both transports of the gateway end here: gRPC and HTTP/protobuf hand over the parsed request message,
HTTP/JSON its body (OTLP/JSON, with hex ids as the specification writes them), which becomes the same
message first. Spans and log records are rebuilt by the OTLP/JSON loader's conversions; an item that
cannot be read (no trace id or span id, a severity the SDK does not know) is rejected alone and counted,
as OTLP's partial success expects.
"""

from __future__ import annotations

import base64
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp._json import UnreadableTraceFile, log_records_from_message, spans_from_message

_SOURCE = "export request"
_ID_HEX_LENGTHS = {"traceId": 32, "spanId": 16, "parentSpanId": 16}
_MessageT = TypeVar("_MessageT", bound=Message)


class UnreadableRequest(ValueError):
    """A request body that is not an OTLP export request of the expected kind (answered 400)."""


@dataclass
class Decoded:
    """What one export request holds: the items that could be read, and how many could not, and why."""

    spans: list[ReadableSpan] = field(default_factory=list)
    log_records: list[ReadWriteLogRecord] = field(default_factory=list)
    rejected: int = 0
    problems: list[str] = field(default_factory=list)

    def reject(self, problem: str) -> None:
        """Count one item that could not be read; the first few problems are kept for the reply."""
        self.rejected += 1
        if len(self.problems) < 3:
            self.problems.append(problem)

    @property
    def error_message(self) -> str:
        """The partial-success message: how many items were rejected and the first reasons."""
        if not self.rejected:
            return ""
        return f"{self.rejected} rejected: {'; '.join(self.problems)}"


def parse_protobuf(body: bytes, message_type: type[_MessageT]) -> _MessageT:
    """The request message of an OTLP/HTTP protobuf body."""
    message = message_type()
    try:
        message.ParseFromString(body)
    except Exception as error:  # protobuf raises DecodeError, and RuntimeWarning-like errors on some inputs
        raise UnreadableRequest(f"not a protobuf {message_type.__name__} ({error})") from None
    return message


def parse_json(body: bytes, message_type: type[_MessageT]) -> _MessageT:
    """The request message of an OTLP/HTTP JSON body (hex ids, as OTLP/JSON writes them)."""
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UnreadableRequest(f"not JSON ({error})") from None
    if not isinstance(document, dict):
        raise UnreadableRequest(f"not an OTLP/JSON {message_type.__name__} (the document is not an object)")
    message = message_type()
    try:
        json_format.ParseDict(_ids_as_base64(document), message, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError) as error:  # ParseDict raises all three
        raise UnreadableRequest(f"not an OTLP/JSON {message_type.__name__} ({error})") from None
    return message


def _ids_as_base64(node: Any) -> Any:
    """A copy of the document with hex trace and span ids in the base64 form protobuf's JSON mapping reads.

    Ids already in base64 (protobuf's own mapping) are left as they are.
    """
    if isinstance(node, list):
        return [_ids_as_base64(item) for item in node]
    if not isinstance(node, dict):
        return node
    copy: dict[str, Any] = {}
    for key, value in node.items():
        length = _ID_HEX_LENGTHS.get(key)
        if length is not None and isinstance(value, str) and len(value) == length:
            with contextlib.suppress(ValueError):  # not hex after all: left for protobuf to judge
                value = base64.b64encode(bytes.fromhex(value)).decode("ascii")
        copy[key] = _ids_as_base64(value)
    return copy


def decode_spans(request: ExportTraceServiceRequest) -> Decoded:
    """Every span of a trace export request as an SDK ``ReadableSpan``; unreadable spans are counted."""
    decoded = Decoded()
    reject: Callable[[UnreadableTraceFile], None] = lambda problem: decoded.reject(problem.problem)  # noqa: E731
    for number, resource_spans in enumerate(request.resource_spans, start=1):
        decoded.spans.extend(spans_from_message(resource_spans, _SOURCE, number, rejected=reject))
    return decoded


def decode_log_records(request: ExportLogsServiceRequest) -> Decoded:
    """Every log record of a logs export request as an SDK ``ReadWriteLogRecord``, parented as it came."""
    decoded = Decoded()
    for resource_logs in request.resource_logs:
        decoded.log_records.extend(log_records_from_message(resource_logs, rejected=decoded.reject))
    return decoded
