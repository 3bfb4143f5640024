"""What the gateway forwards is what it received: every OTLP field of spans and log records survives."""

from __future__ import annotations

from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from gateway.otlp_requests import post
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._service import GatewayService


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

    def test_forwarded_log_records_encode_to_the_received_request(self) -> None:
        """The same for log records: ids, event name, severity, body, attributes, resource and scope."""
        records = InMemoryLogRecordExporter()
        logger_provider = LoggerProvider(
            resource=Resource({"service.name": "fidelity"}), shutdown_on_exit=False
        )
        logger_provider.add_log_record_processor(SimpleLogRecordProcessor(records))
        tracer_provider = TracerProvider(shutdown_on_exit=False)
        logger = logger_provider.get_logger("tests.fidelity", "0.9")
        with tracer_provider.get_tracer("tests.fidelity").start_as_current_span("chat"):
            logger.emit(
                event_name="gen_ai.user.message",
                severity_number=SeverityNumber.INFO,
                severity_text="INFO",
                body={"content": "How much storage?", "parts": ["a", 1]},
                attributes={"gen_ai.system": "openai", "n": 2},
            )
        logger.emit(body="no span around this one", severity_number=SeverityNumber.WARN)
        logger_provider.shutdown()
        tracer_provider.shutdown()
        request = encode_logs(records.get_finished_logs())
        forwarded = InMemoryLogRecordExporter()
        gateway = Gateway(InMemorySpanExporter(), forwarded, schedule_delay_millis=50)
        with GatewayService(gateway, http_address="127.0.0.1:0") as service:
            assert post(service.http_port, "/v1/logs", request.SerializeToString()).status == 200
        assert len(forwarded.get_finished_logs()) == 2
        assert encode_logs(forwarded.get_finished_logs()) == request
