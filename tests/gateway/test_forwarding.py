"""Real OTLP into a running gateway, forwarded enriched to a receiver: SDK exporters, OTLP/JSON, logs."""

from __future__ import annotations

import base64
import json
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
from opentelemetry.exporter.otlp.proto.grpc.exporter import Compression as GrpcCompression
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs, SeverityNumber
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OTLPReceiver, ReceivedSpan
from pipeline.export.agent_turn import UNSUPPORTED, instrumented, run_capacity_turn

from gateway.otlp_requests import post
from gateway.running import (
    FAST_MILLIS,
    eventually,
    grpc_span_exporter,
    hashing_checks,
    http_span_exporter,
    logs_url,
    running_gateway,
    traces_url,
)
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.otlp._convert import spans_to_otlp_json
from otel_shapecheck.outputs._events import EvaluationEventEmitter

AGENT_RESOURCE = {"service.name": "capacity-agent", "deployment.environment.name": "test"}


@contextmanager
def agent_provider(
    exporter: SpanExporter | None, schedule_delay_millis: int = 50
) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """An agent's tracer provider exporting to the gateway, keeping its own copy of every span it ended."""
    provider = TracerProvider(resource=Resource(AGENT_RESOURCE), shutdown_on_exit=False)
    originals = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(originals))
    if exporter is not None:
        provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=schedule_delay_millis))
    try:
        yield provider, originals
    finally:
        provider.shutdown()


def _ids(spans: list[ReadableSpan]) -> set[tuple[str, str, str]]:
    return {
        (
            f"{span.context.trace_id:032x}",
            f"{span.context.span_id:016x}",
            f"{span.parent.span_id:016x}" if span.parent else "",
        )
        for span in spans
        if span.context is not None
    }


def _received_ids(spans: list[ReceivedSpan]) -> set[tuple[str, str, str]]:
    return {(span.trace_id, span.span_id, span.parent_span_id) for span in spans}


def _assert_enriched_and_parented(receiver: OTLPReceiver, originals: list[ReadableSpan]) -> None:
    """Every span arrived once with its ids and resource; the answer is flagged; its event is parented."""
    assert receiver.wait_for(lambda r: len(r.spans) >= len(originals))
    assert receiver.wait_for(lambda r: any(rec.event_name == attrs.EVALUATION_EVENT for rec in r.log_records))
    received = receiver.spans
    assert len(received) == len(originals)
    assert _received_ids(received) == _ids(originals)
    assert all(span.resource.items() >= AGENT_RESOURCE.items() for span in received)
    flagged = [span for span in received if span.attributes.get(attrs.FIGURES_UNSUPPORTED_COUNT)]
    assert len(flagged) == 1
    assert flagged[0].attributes[attrs.FIGURES_UNSUPPORTED_COUNT] == 1
    assert flagged[0].attributes[attrs.FLAGGED] is True
    # Values appear only on a span whose instrumentation put content on it (not with log-event content).
    values = flagged[0].attributes.get(attrs.FIGURES_UNSUPPORTED)
    assert values in ((UNSUPPORTED,), None)
    assert attrs.EVALUATION_EVENT in {name for name, _ in flagged[0].events}
    events = [rec for rec in receiver.log_records if rec.event_name == attrs.EVALUATION_EVENT]
    figures = [rec for rec in events if rec.attributes[attrs.EVALUATION_NAME] == attrs.EVALUATION_FIGURES]
    assert [(rec.trace_id, rec.span_id) for rec in figures] == [(flagged[0].trace_id, flagged[0].span_id)]


class TestSdkExporters:
    def test_grpc_exporter_spans_arrive_enriched_with_ids_resources_and_parented_events(
        self, receiver: OTLPReceiver
    ) -> None:
        """The SDK's gRPC exporter → gateway → receiver: same ids and resource, verdicts on the answer."""
        with running_gateway(receiver) as service:
            with agent_provider(grpc_span_exporter(service)) as (provider, originals), instrumented(provider):
                run_capacity_turn(provider)
                provider.force_flush()
            _assert_enriched_and_parented(receiver, originals.get_finished_spans())
            assert service.gateway.counts().spans_accepted == len(originals.get_finished_spans())

    def test_http_exporter_with_gzip_spans_arrive_enriched(self, receiver: OTLPReceiver) -> None:
        """The SDK's HTTP/protobuf exporter with gzip → gateway → receiver, enriched as over gRPC."""
        with running_gateway(receiver) as service:
            exporter = http_span_exporter(service, compression=Compression.Gzip)
            with agent_provider(exporter) as (provider, originals), instrumented(provider):
                run_capacity_turn(provider)
                provider.force_flush()
            _assert_enriched_and_parented(receiver, originals.get_finished_spans())

    def test_otlp_json_body_arrives_enriched_and_is_answered_in_json(self, receiver: OTLPReceiver) -> None:
        """An OTLP/JSON body (hex ids, as other SDKs and the Collector write it) is read like protobuf."""
        with agent_provider(None) as (provider, originals), instrumented(provider):
            run_capacity_turn(provider)
        spans = originals.get_finished_spans()
        body = json.dumps(spans_to_otlp_json(spans)).encode()
        with running_gateway(receiver) as service:
            request = urllib.request.Request(
                traces_url(service), data=body, headers={"Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                assert response.status == 200
                assert response.headers["Content-Type"] == "application/json"
                assert json.loads(response.read()) == {}
            _assert_enriched_and_parented(receiver, list(spans))

    def test_content_in_log_events_reaches_the_checks_and_the_logs_are_forwarded(
        self, receiver: OTLPReceiver
    ) -> None:
        """Event-mode content sent as OTLP logs feeds the checks; the records go on downstream, parented."""
        with running_gateway(receiver) as service:
            logger_provider = LoggerProvider(resource=Resource(AGENT_RESOURCE), shutdown_on_exit=False)
            logger_provider.add_log_record_processor(
                BatchLogRecordProcessor(HttpLogExporter(endpoint=logs_url(service), timeout=10))
            )
            try:
                with (
                    # Spans leave only at the flush below, after the logs, as the SDK defaults make it
                    # likely (logs every 1 s, spans every 5 s); see docs/gateway.md.
                    agent_provider(grpc_span_exporter(service), 60_000) as (provider, originals),
                    instrumented(provider, logger_provider, content="EVENT_ONLY"),
                ):
                    run_capacity_turn(provider)
                    logger_provider.force_flush()
                    provider.force_flush()
            finally:
                logger_provider.shutdown()
            spans = originals.get_finished_spans()
            assert all(attrs.FIGURES_UNSUPPORTED not in (span.attributes or {}) for span in spans)
            _assert_enriched_and_parented(receiver, spans)
            content = [rec for rec in receiver.log_records if rec.event_name != attrs.EVALUATION_EVENT]
            assert content, "the content log records were forwarded"
            assert {(rec.trace_id, rec.span_id) for rec in content} <= {(s, p) for s, p, _ in _ids(spans)}
            assert all(rec.resource.items() >= AGENT_RESOURCE.items() for rec in content)


def _request(*spans: Span) -> trace_service_pb2.ExportTraceServiceRequest:
    return trace_service_pb2.ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=list(spans))])]
    )


def _span(name: str, trace_id: bytes = b"\x01" * 16, span_id: bytes = b"\x02" * 8) -> Span:
    return Span(name=name, trace_id=trace_id, span_id=span_id, start_time_unix_nano=1, end_time_unix_nano=2)


class TestGrpcCompression:
    def test_grpc_exporter_with_gzip_is_read(self, receiver: OTLPReceiver) -> None:
        """The SDK's gRPC exporter with gzip compression: gRPC decompresses, the spans arrive."""
        with running_gateway(receiver) as service:
            exporter = grpc_span_exporter(service, compression=GrpcCompression.Gzip)
            with agent_provider(exporter) as (provider, originals):
                with provider.get_tracer("tests.gateway").start_as_current_span("parent"):
                    for number in range(5):
                        provider.get_tracer("tests.gateway").start_span(f"child {number}").end()
                provider.force_flush()
            assert receiver.wait_for(lambda r: len(r.spans) == 6)
        assert _received_ids(receiver.spans) == _ids(originals.get_finished_spans())


class TestPartialSuccess:
    def test_grpc_answers_partial_success_for_a_span_without_ids(self, receiver: OTLPReceiver) -> None:
        """A span without a trace id is rejected alone and counted; the valid one is forwarded."""
        with (
            running_gateway(receiver) as service,
            grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel,
        ):
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            response = stub.Export(_request(_span("kept"), _span("no ids", trace_id=b"")), timeout=10)
            assert response.partial_success.rejected_spans == 1
            assert "no trace id" in response.partial_success.error_message
            assert receiver.wait_for(lambda r: len(r.spans) == 1)
            assert [span.name for span in receiver.spans] == ["kept"]
            assert service.gateway.counts().rejected == 1

    def test_http_answers_partial_success_in_protobuf(self, receiver: OTLPReceiver) -> None:
        """The same over HTTP/protobuf: 200 with ``partial_success`` naming the rejected span."""
        body = _request(_span("kept"), _span("no ids", span_id=b"")).SerializeToString()
        with running_gateway(receiver) as service:
            request = urllib.request.Request(
                traces_url(service), data=body, headers={"Content-Type": "application/x-protobuf"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                answer = trace_service_pb2.ExportTraceServiceResponse.FromString(response.read())
            assert answer.partial_success.rejected_spans == 1
            assert "'no ids'" in answer.partial_success.error_message
            assert receiver.wait_for(lambda r: len(r.spans) == 1)

    def test_logs_answer_partial_success_for_a_record_the_sdk_cannot_hold(
        self, receiver: OTLPReceiver
    ) -> None:
        """A log record with an unknown severity number is rejected alone; its neighbour is forwarded."""
        records = [
            LogRecord(
                time_unix_nano=1, severity_number=SeverityNumber.SEVERITY_NUMBER_INFO, event_name="kept"
            ),
            LogRecord(time_unix_nano=2, severity_number=99, event_name="unknown severity"),
        ]
        request = logs_service_pb2.ExportLogsServiceRequest(
            resource_logs=[ResourceLogs(scope_logs=[ScopeLogs(log_records=records)])]
        )
        with (
            running_gateway(receiver) as service,
            grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel,
        ):
            response = logs_service_pb2_grpc.LogsServiceStub(channel).Export(request, timeout=10)
            assert response.partial_success.rejected_log_records == 1
            assert "99" in response.partial_success.error_message
            assert receiver.wait_for(lambda r: len(r.log_records) == 1)
        assert [record.event_name for record in receiver.log_records] == ["kept"]


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai_v2"


class TestOtlpJsonFixtures:
    def test_fixture_files_posted_as_json_are_checked_with_their_content_events(
        self, receiver: OTLPReceiver
    ) -> None:
        """Recorded openai-v2 telemetry (content only in log events) posted as OTLP/JSON gets verdicts."""
        logs = (FIXTURES / "events.logs.json").read_bytes()
        spans = (FIXTURES / "events.spans.json").read_bytes()
        json_body = {"Content-Type": "application/json"}
        with running_gateway(receiver) as service:
            assert post(service.http_port, "/v1/logs", logs, json_body).status == 200
            assert post(service.http_port, "/v1/traces", spans, json_body).status == 200
        # Leaving the block drained the gateway: everything is downstream now.
        expected_spans = json.loads(spans)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        expected_records = json.loads(logs)["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
        received = receiver.spans
        # These files were written with protobuf's own JSON mapping (base64 ids), which is read as well.
        expected_ids = sorted(base64.b64decode(span["spanId"]).hex() for span in expected_spans)
        assert sorted(span.span_id for span in received) == expected_ids
        content = [record for record in receiver.log_records if record.event_name != attrs.EVALUATION_EVENT]
        assert len(content) == len(expected_records)
        # The spans carry no content: the chosen tool is known only from the gen_ai.choice log event, and
        # with no menu to name it, it is what the model wrote: content, which stays off the span.
        request, answer = sorted(received, key=lambda span: attrs.FIGURES_CHECKED in span.attributes)
        assert attrs.TOOL_CHOICE_CHOSEN not in request.attributes
        assert request.attributes[attrs.TOOL_CHOICE_SKIPPED] == "no-menu"  # openai-v2 records no definitions
        assert answer.attributes[attrs.FIGURES_UNSUPPORTED_COUNT] == 0
        assert attrs.FIGURES_UNSUPPORTED not in answer.attributes
        assert not any(span.attributes[attrs.FLAGGED] for span in received)


class TestChainedGateways:
    def test_spans_evaluated_upstream_pass_a_second_gateway_unchanged(self, receiver: OTLPReceiver) -> None:
        """Gateway A → gateway B → receiver: B forwards A's verdicts as they are, with no second event."""
        with running_gateway(receiver) as second:
            first = Gateway(
                GrpcSpanExporter(endpoint=f"127.0.0.1:{second.grpc_port}", insecure=True, timeout=5),
                HttpLogExporter(endpoint=logs_url(second), timeout=5),
                events=EvaluationEventEmitter(
                    HttpLogExporter(endpoint=receiver.logs_url, timeout=5), schedule_delay_millis=FAST_MILLIS
                ),
                checks=hashing_checks(),
                schedule_delay_millis=FAST_MILLIS,
            )
            with (
                GatewayService(first, grpc_address="127.0.0.1:0") as front,
                agent_provider(grpc_span_exporter(front)) as (provider, originals),
                instrumented(provider),
            ):
                run_capacity_turn(provider)
                provider.force_flush()
            _assert_enriched_and_parented(receiver, originals.get_finished_spans())
            assert eventually(lambda: second.gateway.counts().spans_accepted == len(receiver.spans))
        for span in receiver.spans:  # one event per verdict, as gateway A wrote them: none repeated
            names = [
                event[attrs.EVALUATION_NAME] for name, event in span.events if name == attrs.EVALUATION_EVENT
            ]
            assert len(names) == len(set(names))
        events = [record for record in receiver.log_records if record.event_name == attrs.EVALUATION_EVENT]
        assert len(events) == 1
