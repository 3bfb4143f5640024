"""Hand-built OTLP requests and raw HTTP posts, for tests that need exact bodies and exact answers."""

from __future__ import annotations

import http.client
from dataclasses import dataclass

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

TRACE_ID = bytes.fromhex("4bf92f3577b34da6a3ce929d0e0e4736")


def plain_spans(count: int, first: int = 1, trace_id: bytes = TRACE_ID) -> list[Span]:
    """``count`` ordinary (non-GenAI) spans with span ids ``first``, ``first + 1``, …"""
    return [
        Span(
            name=f"GET /item/{number}",
            trace_id=trace_id,
            span_id=number.to_bytes(8, "big"),
            kind=Span.SPAN_KIND_SERVER,
            start_time_unix_nano=1_700_000_000_000_000_000 + number,
            end_time_unix_nano=1_700_000_000_100_000_000 + number,
            attributes=[KeyValue(key="http.route", value=AnyValue(string_value="/item/{id}"))],
        )
        for number in range(first, first + count)
    ]


def trace_request(spans: list[Span], service: str = "any-language-agent") -> ExportTraceServiceRequest:
    """One export request holding ``spans`` under one resource and scope."""
    resource = Resource(attributes=[KeyValue(key="service.name", value=AnyValue(string_value=service))])
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(spans=spans)])]
    )


@dataclass(frozen=True)
class Answer:
    """An HTTP answer: status, headers (lower-case names) and body."""

    status: int
    headers: dict[str, str]
    body: bytes


def post(port: int, path: str, body: bytes, headers: dict[str, str] | None = None) -> Answer:
    """POST ``body`` to the gateway on 127.0.0.1 and return the answer, whatever its status."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(
            "POST", path, body=body, headers={"Content-Type": "application/x-protobuf", **(headers or {})}
        )
        response = connection.getresponse()
        return Answer(
            response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()
        )
    finally:
        connection.close()
