"""OTLP export request bodies, validated at the door; spooled requests into SDK spans and log records.

Both transports of the gateway end here. :func:`read_request` turns a (decompressed) body into the
request message (OTLP/JSON becomes the same protobuf message first) and checks every item before
anything is acknowledged: trace ids of 16 bytes and span ids of 8 in spans, their parents and links,
and in log records (where both may be absent), severities the SDK knows. An item that fails is removed
and counted, for OTLP's partial success, so it can never reach a forwarded batch. What is left is what
the spool stores, serialized, and what :func:`spans_of` and :func:`log_records_of` later rebuild as SDK
telemetry with the OTLP/JSON loader's conversions.

Nesting is bounded the way the protobuf parser bounds it (100 levels of messages): a JSON document
nested deeper than :data:`MAX_JSON_DEPTH` is refused, so every stored request parses again on replay.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from google.protobuf import json_format
from google.protobuf.message import Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp._convert import log_records_from_message, spans_from_message
from otel_shapecheck.otlp._ids import InvalidId, ids_as_base64

Kind = Literal["traces", "logs"]
REQUEST_TYPES: dict[Kind, type[Message]] = {
    "traces": ExportTraceServiceRequest,
    "logs": ExportLogsServiceRequest,
}
MAX_JSON_DEPTH = 96
"""Deepest OTLP/JSON document read: below the protobuf parser's 100 levels, so a stored request parses."""
_MAX_PROBLEMS = 3
_TRACESTATE_MEMBER = re.compile(  # W3C Trace Context, "tracestate" list-member: key "=" value
    r"([a-z][_0-9a-z\-*/]{0,255}|[a-z0-9][_0-9a-z\-*/]{0,240}@[a-z][_0-9a-z\-*/]{0,13})"
    r"=([\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e])"
)
_TRACESTATE_MAX_MEMBERS = 32
_MAX_SEVERITY = 24
_SOURCE = "export request"


class UnreadableRequest(ValueError):
    """A request body that is not an OTLP export request of the expected kind (answered 400)."""


@dataclass
class Validated:
    """A request that passed the door: its message (bad items removed), serialized, and what was removed."""

    kind: Kind
    message: Message
    body: bytes
    """The message serialized: what the spool stores."""
    items: int
    """Spans or log records that passed."""
    rejected: int = 0
    problems: list[str] = field(default_factory=list)
    tracestates_dropped: int = 0
    """Tracestates (of spans and links) that broke the W3C grammar: removed, the span kept."""

    @property
    def error_message(self) -> str:
        """The partial-success message: how many items were rejected and the first reasons."""
        if not self.rejected:
            return ""
        return f"{self.rejected} rejected: {'; '.join(self.problems)}"


def read_request(kind: Kind, body: bytes, *, as_json: bool = False) -> Validated:
    """The validated request message of a decompressed OTLP/HTTP or OTLP/gRPC body.

    Raises:
        UnreadableRequest: the body is not an export request of ``kind`` (malformed, nested too deeply).
    """
    message_type = REQUEST_TYPES[kind]
    try:
        message = _parse_json(body, message_type) if as_json else _parse_protobuf(body, message_type)
    except UnreadableRequest:
        raise
    except Exception as error:  # whatever else decoding raises is the body's fault, not the gateway's
        raise UnreadableRequest(
            f"not an {'OTLP/JSON' if as_json else 'OTLP protobuf'} {message_type.__name__} "
            f"({type(error).__name__}: {str(error)[:200]})"
        ) from None
    problems: list[str] = []
    dropped = 0
    if kind == "traces":
        assert isinstance(message, ExportTraceServiceRequest)
        items, rejected = _check_spans(message, problems)
        dropped = _drop_bad_tracestates(message)
    else:
        assert isinstance(message, ExportLogsServiceRequest)
        items, rejected = _check_log_records(message, problems)
    changed = rejected or dropped or as_json
    stored = message.SerializeToString() if changed else body
    return Validated(kind, message, stored, items, rejected, problems, dropped)


def parse_stored(kind: Kind, body: bytes) -> Message:
    """The message of a request the spool holds (validated when it was accepted)."""
    return _parse_protobuf(body, REQUEST_TYPES[kind])


def _parse_protobuf(body: bytes, message_type: type[Message]) -> Message:
    message = message_type()
    try:
        message.ParseFromString(body)
    except Exception as error:  # DecodeError, and RuntimeWarning-like errors on some inputs
        raise UnreadableRequest(
            f"not a protobuf {message_type.__name__} (malformed, or nested more than 100 levels deep: "
            f"{str(error).split(':')[0]})"
        ) from None
    return message


def _parse_json(body: bytes, message_type: type[Message]) -> Message:
    name = message_type.__name__
    try:
        document = json.loads(body)
    except ValueError as error:  # not JSON, not UTF-8, or a number past int's digit limit
        raise UnreadableRequest(f"not JSON ({str(error)[:200]})") from None
    except RecursionError:
        raise UnreadableRequest(
            f"not JSON that an export could be (nested deeper than {MAX_JSON_DEPTH})"
        ) from None
    if not isinstance(document, dict):
        raise UnreadableRequest(f"not an OTLP/JSON {name} (the document is not an object)")
    if _too_deep(document):
        raise UnreadableRequest(f"not an OTLP/JSON {name} (nested deeper than {MAX_JSON_DEPTH} levels)")
    message = message_type()
    try:
        json_format.ParseDict(ids_as_base64(document, strict=False), message, ignore_unknown_fields=True)
    except InvalidId as invalid:
        raise UnreadableRequest(f"not an OTLP/JSON {name} ({invalid})") from None
    except (json_format.ParseError, TypeError, ValueError, RecursionError) as error:
        raise UnreadableRequest(f"not an OTLP/JSON {name} ({error})") from None
    return message


def _too_deep(document: object) -> bool:
    """Whether a decoded JSON document nests containers deeper than :data:`MAX_JSON_DEPTH` (iteratively)."""
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _note(problems: list[str], problem: str) -> None:
    if len(problems) < _MAX_PROBLEMS:
        problems.append(problem)


def _id_problem(value: bytes, size: int, what: str, *, optional: bool = False) -> str | None:
    if optional and not any(value) and len(value) in (0, size):  # absent (some SDKs send zeros)
        return None
    if not value:
        return f"no {what}"
    if len(value) != size:
        return f"a {len(value)}-byte {what} (it must be {size} bytes{' or absent' if optional else ''})"
    if not any(value):
        return f"an all-zero {what}"
    return None


_ZERO_TRACE_ID = bytes(16)
_ZERO_SPAN_ID = bytes(8)


def _span_problem(span: Span) -> str | None:
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if (  # the common case in a few C-level comparisons; the details only when something is off
        len(trace_id) == 16
        and len(span_id) == 8
        and trace_id != _ZERO_TRACE_ID
        and span_id != _ZERO_SPAN_ID
        and len(parent) in (0, 8)
        and not len(span.links)
    ):
        return None
    problem = (
        _id_problem(span.trace_id, 16, "trace id")
        or _id_problem(span.span_id, 8, "span id")
        or _id_problem(span.parent_span_id, 8, "parent span id", optional=True)
    )
    if problem is None:
        for link in span.links:
            problem = _id_problem(link.trace_id, 16, "link trace id") or _id_problem(
                link.span_id, 8, "link span id"
            )
            if problem is not None:
                break
    return f"span {span.name[:80]!r} has {problem}" if problem is not None else None


def _check_spans(message: ExportTraceServiceRequest, problems: list[str]) -> tuple[int, int]:
    items = rejected = 0
    for resource_spans in message.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            bad = []
            for index, span in enumerate(scope_spans.spans):
                problem = _span_problem(span)
                if problem is not None:
                    bad.append(index)
                    _note(problems, problem)
            for index in reversed(bad):
                del scope_spans.spans[index]
            rejected += len(bad)
            items += len(scope_spans.spans)
    return items, rejected


def valid_tracestate(header: str) -> bool:
    """Whether a tracestate follows the W3C grammar: at most 32 list-members ``key=value``, keys unique
    (empty members allowed), so the SDK takes it whole instead of warning and emptying it."""
    keys = set()
    for member in header.split(","):
        member = member.strip(" \t")
        if not member:
            continue
        found = _TRACESTATE_MEMBER.fullmatch(member)
        if found is None or found.group(1) in keys:
            return False
        keys.add(found.group(1))
    return len(keys) <= _TRACESTATE_MAX_MEMBERS


def _drop_bad_tracestates(message: ExportTraceServiceRequest) -> int:
    """Empty every span's and link's tracestate that is not valid; how many were."""
    dropped = 0
    for resource_spans in message.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if span.trace_state and not valid_tracestate(span.trace_state):
                    span.trace_state = ""
                    dropped += 1
                for link in span.links:
                    if link.trace_state and not valid_tracestate(link.trace_state):
                        link.trace_state = ""
                        dropped += 1
    return dropped


def _check_log_records(message: ExportLogsServiceRequest, problems: list[str]) -> tuple[int, int]:
    items = rejected = 0
    for resource_logs in message.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            bad = []
            for index, record in enumerate(scope_logs.log_records):
                problem = _id_problem(record.trace_id, 16, "trace id", optional=True) or _id_problem(
                    record.span_id, 8, "span id", optional=True
                )
                if problem is None and not 0 <= record.severity_number <= _MAX_SEVERITY:
                    problem = f"severity number {record.severity_number} (it must be 0 to {_MAX_SEVERITY})"
                if problem is not None:
                    bad.append(index)
                    _note(problems, f"log record has {problem}")
            for index in reversed(bad):
                del scope_logs.log_records[index]
            rejected += len(bad)
            items += len(scope_logs.log_records)
    return items, rejected


def spans_of(message: Message) -> Iterator[tuple[int, ReadableSpan]]:
    """Every span of a stored trace request as an SDK ``ReadableSpan``, with its index in the request."""
    assert isinstance(message, ExportTraceServiceRequest)
    index = 0
    for number, resource_spans in enumerate(message.resource_spans, start=1):
        for span in spans_from_message(resource_spans, _SOURCE, number):
            yield index, span
            index += 1


def log_records_of(message: Message) -> Iterator[tuple[int, ReadWriteLogRecord]]:
    """Every log record of a stored logs request as an SDK ``ReadWriteLogRecord``, with its index."""
    assert isinstance(message, ExportLogsServiceRequest)
    index = 0
    for resource_logs in message.resource_logs:
        for record in log_records_from_message(resource_logs):
            yield index, record
            index += 1
