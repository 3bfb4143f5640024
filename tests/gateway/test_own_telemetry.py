"""The gateway's own exports leave no spans in an instrumented HTTP client of the same process.

The SDK's batch processors suppress instrumentation around their exports; the gateway also sends on its
own (passed-through requests, retried forwarding), so it must do the same. The requests instrumentation
(what the SDK's OTLP/HTTP exporters send with) records into its own provider here; after real traffic
through the gateway to a real receiver, that provider must have recorded nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.instrumentation.requests import RequestsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OTLPReceiver
from pipeline.export.agent_turn import instrumented, run_capacity_turn

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import FAST_MILLIS, hashing_checks
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.outputs._events import EvaluationEventEmitter


@pytest.fixture(name="client_spans")
def _client_spans() -> Iterator[InMemorySpanExporter]:
    """What an instrumented requests client in this process records, while the test runs."""
    recorded = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(recorded))
    instrumentor = RequestsInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield recorded
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def _agent_turn_request() -> bytes:
    memory = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with instrumented(provider):
        run_capacity_turn(provider)
    provider.shutdown()
    return encode_spans(memory.get_finished_spans()).SerializeToString()


def test_forwarding_and_events_over_http_record_no_client_spans(
    receiver: OTLPReceiver, client_spans: InMemorySpanExporter
) -> None:
    events = EvaluationEventEmitter(
        HttpLogExporter(endpoint=receiver.logs_url, timeout=5), schedule_delay_millis=FAST_MILLIS
    )
    gateway = Gateway(
        HttpSpanExporter(endpoint=receiver.traces_url, timeout=5),
        HttpLogExporter(endpoint=receiver.logs_url, timeout=5),
        events=events,
        checks=hashing_checks(),
        schedule_delay_millis=FAST_MILLIS,
    )
    with GatewayService(gateway, grpc_address="127.0.0.1:0", http_address="127.0.0.1:0") as service:
        # Plain spans (passed through as received) and an agent turn (evaluated, flagged, an event).
        plain = trace_request(plain_spans(3)).SerializeToString()
        assert post(service.http_port, "/v1/traces", plain).status == 200
        assert post(service.http_port, "/v1/traces", _agent_turn_request()).status == 200
        assert receiver.wait_for(
            lambda r: any(span.attributes.get(attrs.FLAGGED) for span in r.spans) and len(r.log_records) >= 1
        )
    assert receiver.spans and receiver.log_records
    assert client_spans.get_finished_spans() == ()
