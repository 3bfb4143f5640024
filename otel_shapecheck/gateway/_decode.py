"""OTLP export requests into SDK telemetry: spans as ``ReadableSpan``, log records as ``ReadWriteLogRecord``.

Both transports of the gateway end here: gRPC and HTTP/protobuf hand over the parsed request message,
HTTP/JSON its body (OTLP/JSON, with hex ids as the specification writes them), which becomes the same
message first. Spans and log records are rebuilt by the OTLP/JSON loader's conversions; an item that
cannot be read (no trace id or span id, a severity the SDK does not know) is rejected alone and counted,
as OTLP's partial success expects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp._convert import log_records_from_message, spans_from_message
from otel_shapecheck.otlp._errors import UnreadableTraceFile
from otel_shapecheck.otlp._ids import InvalidId, ids_as_base64

_SOURCE = "export request"
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
    except RecursionError:
        raise UnreadableRequest("not JSON that an export could be (nested too deeply)") from None
    if not isinstance(document, dict):
        raise UnreadableRequest(f"not an OTLP/JSON {message_type.__name__} (the document is not an object)")
    message = message_type()
    try:
        json_format.ParseDict(ids_as_base64(document), message, ignore_unknown_fields=True)
    except InvalidId as invalid:
        raise UnreadableRequest(f"not an OTLP/JSON {message_type.__name__} ({invalid})") from None
    except (json_format.ParseError, TypeError, ValueError) as error:  # ParseDict raises all three
        raise UnreadableRequest(f"not an OTLP/JSON {message_type.__name__} ({error})") from None
    except RecursionError:  # nested deeper than any export: a bad request, not a server error
        raise UnreadableRequest(f"not an OTLP/JSON {message_type.__name__} (nested too deeply)") from None
    return message


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
