"""Pass-through: spans that need no evaluation reach the destination as the protobuf the gateway received.

Real parts throughout: the gateway with its gRPC and HTTP listeners, the SDK's OTLP exporters on both
sides, and a real OTLP receiver on 127.0.0.1 that keeps every trace request as it arrived, so the tests
compare messages field for field (ids, attributes, resource, scope, schema URLs).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.exporter.otlp.proto.http.version import __version__ as exporter_version
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from otlp_receiver import OTLPReceiver
from pipeline.export.agent_turn import instrumented, run_capacity_turn

from gateway.otlp_requests import post
from gateway.running import FAST_MILLIS, build_gateway, eventually, hashing_checks, offer
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._passthrough import _MARKERS, raw_sender, split_request
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.gateway._spool_entry import bitmap, set_bit
from otel_shapecheck.readers._classify import CLASSIFYING_KEYS
from otel_shapecheck.readers._genai import EXECUTE_TOOL_SPAN_PREFIX

_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_HTTP_TRANSPORT_CLIENT = tuple(int(part) for part in exporter_version.split(".")[:2]) >= (1, 45)
"""Whether the installed OTLP/HTTP exporter has the transport client the raw sender uses."""
_PLAIN_SCOPE = "tests.http"


def _plain_spans(traces: int = 3) -> list[ReadableSpan]:
    """Ordinary server and client spans (nothing to evaluate) from a real tracer, two scopes."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource({"service.name": "orders", "service.version": "2.1"}, "https://schema/r"),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    http = provider.get_tracer(_PLAIN_SCOPE, "1.0", schema_url="https://schema/s")
    database = provider.get_tracer("tests.db", "0.3", attributes={"db.library": "x"})
    for number in range(traces):
        with http.start_as_current_span(
            "GET /orders", kind=SpanKind.SERVER, attributes={"http.route": "/orders", "n": number}
        ) as root:
            root.add_event("cache.miss", {"key": f"k{number}"})
            with database.start_as_current_span("SELECT orders", kind=SpanKind.CLIENT) as query:
                query.set_attribute("db.statement", "SELECT * FROM orders")
    provider.shutdown()
    return list(memory.get_finished_spans())


def _turn_with_plain_spans() -> tuple[list[ReadableSpan], int]:
    """A real instrumented agent turn and, from another scope of the same provider, plain spans."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "capacity-agent"}), shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with instrumented(provider):
        run_capacity_turn(provider)
    turn = len(memory.get_finished_spans())
    tracer = provider.get_tracer(_PLAIN_SCOPE)
    for number in range(4):
        with tracer.start_as_current_span(f"GET /health/{number}", kind=SpanKind.SERVER):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans()), turn


def _send_grpc(port: int, body: bytes) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        channel.unary_unary(_EXPORT, request_serializer=None, response_deserializer=None)(body, timeout=10)


def _scope_groups(requests: list[ExportTraceServiceRequest]) -> dict[str, list[ScopeSpans]]:
    groups: dict[str, list[ScopeSpans]] = {}
    for request in requests:
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                groups.setdefault(scope_spans.scope.name, []).append(scope_spans)
    return groups


@contextmanager
def _service(gateway: Gateway) -> Iterator[GatewayService]:
    with GatewayService(gateway, grpc_address="127.0.0.1:0", http_address="127.0.0.1:0") as service:
        yield service


def _http_gateway(receiver: OTLPReceiver, **options: Any) -> Gateway:
    return Gateway(
        HttpSpanExporter(endpoint=receiver.traces_url, timeout=5),
        schedule_delay_millis=FAST_MILLIS,
        checks=hashing_checks(),
        **options,
    )


class TestExporterFields:
    def test_the_sdk_exporter_fields_the_sender_reads_exist(self, receiver: OTLPReceiver) -> None:
        """The gRPC exporter's channel, metadata, timeout; the HTTP exporter's transport client (SDK
        internals; the client arrived with opentelemetry-exporter-otlp-proto-http 1.45, and before it the
        HTTP exporter has no raw sender: the gateway converts and exports passed-through spans)."""
        grpc_exporter = GrpcSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5)
        http_exporter = HttpSpanExporter(endpoint=receiver.traces_url, timeout=5)
        http_client = getattr(http_exporter, "_client", None)
        try:
            assert grpc_exporter._channel is not None
            assert isinstance(grpc_exporter._headers, tuple)
            assert grpc_exporter._timeout == 5
            assert grpc_exporter._shutdown is False
            assert http_exporter._shutdown is False
            senders = [grpc_exporter]
            if _HTTP_TRANSPORT_CLIENT:
                assert callable(http_client.export)
                senders.append(http_exporter)
            else:
                assert raw_sender(http_exporter) is None
            body = encode_spans(_plain_spans(1)).SerializeToString()
            for exporter in senders:
                send = raw_sender(exporter)
                assert send is not None and send(body)
            assert receiver.wait_for(lambda r: len(r.trace_requests) == len(senders))
            assert all(request.SerializeToString() == body for request in receiver.trace_requests)
        finally:
            grpc_exporter.shutdown()
            http_exporter.shutdown()

    def test_every_classifying_key_holds_a_marker(self) -> None:
        """The byte test cannot miss a GenAI span: each key the classifier reads contains a marker."""
        assert all(any(marker in key.encode() for marker in _MARKERS) for key in CLASSIFYING_KEYS)
        assert any(marker in EXECUTE_TOOL_SPAN_PREFIX.encode() for marker in _MARKERS)

    def test_another_exporter_has_no_raw_sender(self) -> None:
        assert raw_sender(InMemorySpanExporter()) is None


class TestPassThrough:
    def test_no_checks_forwards_the_received_request_unchanged(self, receiver: OTLPReceiver) -> None:
        """With --no-checks a request arrives as it was sent: the same message, byte for byte."""
        request = encode_spans(_plain_spans())
        body = request.SerializeToString()
        with _service(build_gateway(receiver, evaluate=False)) as service:
            _send_grpc(service.grpc_port, body)
            assert receiver.wait_for(lambda r: len(r.trace_requests) == 1)
        counts = service.gateway.counts()
        assert receiver.trace_requests[0] == request
        assert receiver.trace_requests[0].SerializeToString() == body
        assert counts.spans_passed_through == counts.spans_exported == 6
        assert counts.forwarded == 6 and counts.unaccounted == 0 and counts.left_in_spool == 0

    def test_plain_traffic_under_checks_is_not_converted(self, receiver: OTLPReceiver) -> None:
        """Under checks, a request without GenAI spans passes through whole; the processor never sees it."""
        request = encode_spans(_plain_spans())
        gateway = build_gateway(receiver)
        with _service(gateway) as service:
            assert post(service.http_port, "/v1/traces", request.SerializeToString()).status == 200
            assert receiver.wait_for(lambda r: len(r.trace_requests) == 1)
            assert gateway._shapecheck is not None
            assert gateway._shapecheck.counts().seen == 0
        assert receiver.trace_requests[0] == request
        assert gateway.counts().spans_passed_through == 6

    def test_http_forwarding_passes_through_too(self, receiver: OTLPReceiver) -> None:
        request = encode_spans(_plain_spans(2))
        with _service(_http_gateway(receiver)) as service:
            _send_grpc(service.grpc_port, request.SerializeToString())
            assert receiver.wait_for(lambda r: len(r.trace_requests) == 1)
        assert receiver.trace_requests[0] == request
        assert receiver.spans[0].transport == "http"

    def test_mixed_request_plain_groups_pass_and_genai_spans_get_verdicts(
        self, receiver: OTLPReceiver
    ) -> None:
        """One request, a real agent turn and plain spans: the plain scope group arrives as received,
        every span arrives once, and the turn's answer carries its verdict."""
        spans, turn = _turn_with_plain_spans()
        request = encode_spans(spans)
        sent = _scope_groups([request])
        assert len(sent) >= 3  # the agent's scope, the instrumentation's, the plain one
        gateway = build_gateway(receiver)
        with _service(gateway) as service:
            _send_grpc(service.grpc_port, request.SerializeToString())
            assert receiver.wait_for(lambda r: len(r.spans) == len(spans))
            assert receiver.wait_for(lambda r: any(span.attributes.get(attrs.FLAGGED) for span in r.spans))
        received = _scope_groups(receiver.trace_requests)
        assert received[_PLAIN_SCOPE] == sent[_PLAIN_SCOPE]
        assert sorted((s.trace_id, s.span_id) for s in receiver.spans) == sorted(
            (f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in spans if s.context
        )
        flagged = [span for span in receiver.spans if span.attributes.get(attrs.FIGURES_UNSUPPORTED_COUNT)]
        assert len(flagged) == 1
        counts = gateway.counts()
        assert counts.spans_passed_through == len(spans) - turn
        assert counts.forwarded == len(spans) and counts.unaccounted == 0

    def test_a_plain_parent_of_a_genai_span_in_the_request_is_evaluated_with_it(
        self, receiver: OTLPReceiver
    ) -> None:
        """The turn's ``invoke_agent`` span has no GenAI attribute but parents the LLM calls: its scope
        group goes through the processor (which waits for a parent's end), not around it."""
        spans, turn = _turn_with_plain_spans()
        request = encode_spans(spans)
        gateway = build_gateway(receiver)
        with _service(gateway):
            assert offer(gateway, request).accepted == len(spans)
            assert eventually(lambda: gateway.counts().forwarded == len(spans))
            assert gateway._shapecheck is not None
            assert gateway._shapecheck.counts().seen == turn


class TestAccounting:
    def test_a_destination_that_refuses_then_takes_gets_every_span_once(self, receiver: OTLPReceiver) -> None:
        """Passed-through requests are retried under the gateway's policy and leave the spool only when
        the destination took them."""
        receiver.behave(error_status=503)
        request = encode_spans(_plain_spans())
        gateway = build_gateway(receiver, evaluate=False)
        with _service(gateway):
            assert offer(gateway, request).accepted == 6
            assert receiver.wait_for(lambda r: r.requests >= 2)
            assert gateway.counts().forwarded == 0 and gateway.spool.remaining_items() == 6
            receiver.behave()
            assert eventually(lambda: gateway.counts().forwarded == 6)
        assert receiver.trace_requests == [request]
        counts = gateway.counts()
        assert counts.export_retries >= 1 and counts.left_in_spool == 0 and counts.unaccounted == 0

    def test_spans_already_done_are_left_out_of_a_carried_over_request(self) -> None:
        """A request a previous run half forwarded passes on only the spans it did not confirm."""
        request = encode_spans(_plain_spans(2))
        done = bitmap(4)
        set_bit(done, 0)
        set_bit(done, 3)
        split = split_request(request, request.SerializeToString(), done, None)
        assert split.raw_indices == [1, 2] and split.evaluated is None
        assert split.raw is not None
        forwarded = ExportTraceServiceRequest.FromString(split.raw)
        names = [s.name for r in forwarded.resource_spans for g in r.scope_spans for s in g.spans]
        flat = [s.name for r in request.resource_spans for g in r.scope_spans for s in g.spans]
        assert names == [flat[1], flat[2]]
        assert forwarded.resource_spans[0].resource == request.resource_spans[0].resource

    def test_without_an_otlp_exporter_every_span_is_converted(self) -> None:
        """A gateway forwarding to another exporter keeps the converting path (nothing to pass through)."""
        forwarded = InMemorySpanExporter()
        gateway = Gateway(forwarded, evaluate=False, schedule_delay_millis=FAST_MILLIS)
        try:
            assert offer(gateway, encode_spans(_plain_spans(1))).accepted == 2
            assert eventually(lambda: len(forwarded.get_finished_spans()) == 2)
        finally:
            gateway.shutdown()
        assert gateway.counts().spans_passed_through == 0
