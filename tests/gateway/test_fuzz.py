"""Hypothesis-generated requests to the OTLP/HTTP application: answered 2xx or 4xx, never 500.

The application is called directly through ASGI (no sockets), so thousands of bodies run in seconds;
every answer must be a status the OTLP specification gives a sender.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from gateway.otlp_requests import TRACE_ID, plain_spans, trace_request
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._http import OTLPApplication
from otel_shapecheck.gateway._options import GatewayOptions

VALID = trace_request(plain_spans(3)).SerializeToString()
CONTENT_TYPES = st.sampled_from(["application/x-protobuf", "application/json", "text/plain", ""])
ENCODINGS = st.sampled_from(["", "gzip", "identity", "br"])
ALLOWED = {200, 400, 404, 405, 408, 411, 413, 415, 429, 503}


@pytest.fixture(name="app", scope="module")
def _app() -> Iterator[OTLPApplication]:
    gateway = Gateway(
        InMemorySpanExporter(),
        evaluate=False,
        schedule_delay_millis=50,
        options=GatewayOptions(max_request_bytes=1 << 16),
    )
    app = OTLPApplication(gateway, workers=2)
    yield app
    gateway.shutdown(5)
    app.executor.shutdown()


def _call(app: OTLPApplication, path: str, body: bytes, headers: dict[str, str]) -> int:
    status: list[int] = []
    chunks = [body[i : i + 7000] for i in range(0, len(body), 7000)] or [b""]

    async def receive() -> dict[str, Any]:
        chunk = chunks.pop(0) if chunks else b""
        return {"type": "http.request", "body": chunk, "more_body": bool(chunks)}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            status.append(message["status"])

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(name.lower().encode(), value.encode()) for name, value in headers.items()]
        + [(b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 1),
    }
    asyncio.run(app(scope, receive, send))
    return status[0]


def _json_values() -> st.SearchStrategy[Any]:
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
        max_leaves=30,
    )


def _otlp_json() -> st.SearchStrategy[bytes]:
    ids = st.sampled_from([TRACE_ID.hex(), "00f067aa0ba902b7", "", "zz", "AAAA", TRACE_ID.hex()[:-2]])
    span = st.fixed_dictionaries(
        {"traceId": ids, "spanId": ids, "name": st.text(max_size=10)},
        optional={"parentSpanId": ids, "attributes": _json_values(), "links": _json_values()},
    )
    document = st.fixed_dictionaries(
        {
            "resourceSpans": st.lists(
                st.fixed_dictionaries(
                    {
                        "scopeSpans": st.lists(
                            st.fixed_dictionaries({"spans": st.lists(span, max_size=3)}), max_size=2
                        )
                    }
                ),
                max_size=2,
            )
        }
    )
    return document.map(lambda d: json.dumps(d).encode())


def _mutated() -> st.SearchStrategy[bytes]:
    return st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=6).map(
        lambda flips: bytes(_flip(bytearray(VALID), flips))
    )


def _flip(body: bytearray, flips: list[tuple[int, int]]) -> bytearray:
    for index, value in flips:
        body[index] = value
    return body


BODIES = st.one_of(
    st.binary(max_size=400), _mutated(), _otlp_json(), _json_values().map(lambda v: json.dumps(v).encode())
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    body=BODIES,
    content_type=CONTENT_TYPES,
    encoding=ENCODINGS,
    compress=st.booleans(),
    path=st.sampled_from(["/v1/traces", "/v1/logs", "/v1/metrics"]),
)
def test_generated_requests_never_get_a_server_error(
    app: OTLPApplication, body: bytes, content_type: str, encoding: str, compress: bool, path: str
) -> None:
    """Whatever the body, headers and path, the answer is one OTLP gives senders, never 500."""
    if compress:
        body = gzip.compress(body)
    headers = {"content-type": content_type}
    if encoding:
        headers["content-encoding"] = encoding
    assert _call(app, path, body, headers) in ALLOWED
