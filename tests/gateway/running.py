"""A running gateway for the tests: in front of a downstream receiver, on 127.0.0.1 ports from 0."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from google.protobuf.message import Message
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from otlp_receiver import OTLPReceiver

from otel_shapecheck import ConformanceCheck, FiguresCheck, HashingEmbedder, ToolChoiceCheck
from otel_shapecheck.gateway._counts import ExportAnswer
from otel_shapecheck.gateway._decode import Kind, read_request
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.outputs._events import EvaluationEventEmitter

FAST_MILLIS = 50
_SERVICE_OPTIONS = (
    "tls",
    "tokens",
    "request_timeout_seconds",
    "idle_timeout_seconds",
    "max_connections",
    "tls_handshake_timeout_seconds",
)


def hashing_checks() -> list[Any]:
    """The built-in checks, tool choice scored by the fast hashing embedder."""
    return [ToolChoiceCheck(embedder=HashingEmbedder()), ConformanceCheck(), FiguresCheck()]


def build_gateway(receiver: OTLPReceiver, *, evaluate: bool = True, **options: Any) -> Gateway:
    """A gateway forwarding spans over gRPC and log records and events over HTTP to ``receiver``."""
    events = None
    if evaluate:
        events = EvaluationEventEmitter(
            HttpLogExporter(endpoint=receiver.logs_url, timeout=5), schedule_delay_millis=FAST_MILLIS
        )
    options.setdefault("schedule_delay_millis", FAST_MILLIS)
    return Gateway(
        GrpcSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5),
        HttpLogExporter(endpoint=receiver.logs_url, timeout=5),
        events=events,
        checks=hashing_checks() if evaluate else None,
        evaluate=evaluate,
        **options,
    )


@contextmanager
def running_gateway(receiver: OTLPReceiver, **options: Any) -> Iterator[GatewayService]:
    """A gateway listening on 127.0.0.1 (gRPC and HTTP, ports from the OS), stopped on exit."""
    listening = {name: options.pop(name) for name in _SERVICE_OPTIONS if name in options}
    service = GatewayService(
        build_gateway(receiver, **options),
        grpc_address="127.0.0.1:0",
        http_address="127.0.0.1:0",
        **listening,
    )
    with service:
        yield service


def grpc_span_exporter(service: GatewayService, **options: Any) -> GrpcSpanExporter:
    """The SDK's gRPC span exporter pointed at the gateway."""
    return GrpcSpanExporter(endpoint=f"127.0.0.1:{service.grpc_port}", insecure=True, timeout=10, **options)


def http_span_exporter(service: GatewayService, **options: Any) -> HttpSpanExporter:
    """The SDK's HTTP span exporter pointed at the gateway."""
    return HttpSpanExporter(endpoint=traces_url(service), timeout=10, **options)


def traces_url(service: GatewayService) -> str:
    """The gateway's OTLP/HTTP traces URL."""
    return f"http://127.0.0.1:{service.http_port}/v1/traces"


def logs_url(service: GatewayService) -> str:
    """The gateway's OTLP/HTTP logs URL."""
    return f"http://127.0.0.1:{service.http_port}/v1/logs"


def eventually(condition: Callable[[], bool], timeout: float = 10.0) -> bool:
    """Poll ``condition`` until it holds; False if it still does not after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def offer(gateway: Gateway, request: Message, kind: Kind = "traces") -> ExportAnswer:
    """Hand one export request to the gateway as a transport would: door, validation, spool."""
    body = request.SerializeToString()
    opened = gateway.open_request(len(body))
    if isinstance(opened, ExportAnswer):
        return opened
    try:
        return gateway.accept(read_request(kind, body), opened)
    finally:
        gateway.close_request(opened)
