"""What the gateway forwards is what it received: every OTLP field of a span survives the trip."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from gateway.otlp_requests import post
from otel_shapecheck._gateway import Gateway
from otel_shapecheck._gateway_service import GatewayService


def _varied_spans() -> InMemorySpanExporter:
    """Spans using every field: kinds, links with attributes, events, error status, trace state, scope."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource({"service.name": "fidelity", "service.version": "1.2.3"}, "https://schema/1"),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer(
        "tests.fidelity", "0.9", schema_url="https://schema/2", attributes={"lib": "x"}
    )
    remote = SpanContext(
        0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(1), trace_state=TraceState([("vendor", "v1")])
    )
    with tracer.start_as_current_span(
        "root", kind=SpanKind.SERVER, attributes={"s": "text", "i": 7, "f": 0.5, "b": True, "a": ("x", "y")}
    ) as root:
        root.add_event("cache.miss", {"key": "k1", "tries": 3})
        with tracer.start_as_current_span(
            "child", kind=SpanKind.CLIENT, links=[Link(remote, {"link.reason": "batch"})]
        ) as child:
            child.set_status(Status(StatusCode.ERROR, "upstream timed out"))
        with tracer.start_as_current_span("producer", kind=SpanKind.PRODUCER) as producer:
            producer.set_status(Status(StatusCode.OK))
    provider.shutdown()
    return memory


class TestFidelity:
    def test_forwarded_spans_encode_to_the_received_request(self) -> None:
        """Re-encoding what the gateway exported gives back the request it received, field for field."""
        request: ExportTraceServiceRequest = encode_spans(_varied_spans().get_finished_spans())
        forwarded = InMemorySpanExporter()
        gateway = Gateway(forwarded, schedule_delay_millis=50)
        with GatewayService(gateway, http_address="127.0.0.1:0") as service:
            assert post(service.http_port, "/v1/traces", request.SerializeToString()).status == 200
        assert len(forwarded.get_finished_spans()) == 3
        assert encode_spans(forwarded.get_finished_spans()) == request
