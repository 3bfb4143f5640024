"""A full spool answers with backpressure and retry info; the gateway loses nothing it acknowledged."""

from __future__ import annotations

import threading

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import eventually, grpc_span_exporter, http_span_exporter, running_gateway
from otel_shapecheck.gateway._options import GatewayOptions
from otel_shapecheck.gateway._spool import MemorySpool

CAPACITY = 10
ONE_REQUEST = len(trace_request(plain_spans(8)).SerializeToString())


def _small_spool() -> MemorySpool:
    """A spool with room for one request of eight plain spans, not two."""
    return MemorySpool(ONE_REQUEST + ONE_REQUEST // 2)


def _span_ids(receiver: OTLPReceiver) -> list[str]:
    return [span.span_id for span in receiver.spans]


def _expected_ids(first: int, count: int) -> set[str]:
    return {number.to_bytes(8, "big").hex() for number in range(first, first + count)}


class TestHttpBackpressure:
    def test_full_queue_answers_429_with_retry_after_and_keeps_what_it_acknowledged(
        self, receiver: OTLPReceiver
    ) -> None:
        """While a slow downstream holds the spool, a request that does not fit gets 429 + Retry-After."""
        receiver.behave(delay_seconds=1.0)
        with running_gateway(
            receiver,
            options=GatewayOptions(max_queue_size=CAPACITY, retry_after_millis=1000),
            spool=_small_spool(),
        ) as service:
            first = post(service.http_port, "/v1/traces", trace_request(plain_spans(8)).SerializeToString())
            assert first.status == 200
            assert receiver.wait_for(lambda r: r.requests >= 1)  # the forward of the first 8 is under way
            second_body = trace_request(plain_spans(8, first=9)).SerializeToString()
            refused = post(service.http_port, "/v1/traces", second_body)
            assert refused.status == 429
            assert refused.headers["retry-after"] == "1"
            status = status_pb2.Status.FromString(refused.body)
            assert status.code == code_pb2.RESOURCE_EXHAUSTED
            assert "the spool is full" in status.message
            assert service.gateway.counts().in_flight <= CAPACITY
            receiver.behave()
            assert receiver.wait_for(lambda r: len(r.spans) == 8)
            assert eventually(lambda: service.gateway.counts().in_flight == 0)  # export returned: room again
            retried = post(service.http_port, "/v1/traces", second_body)
            assert retried.status == 200
            assert receiver.wait_for(lambda r: len(r.spans) == 16)
        assert sorted(_span_ids(receiver)) == sorted(_expected_ids(1, 16))
        assert service.gateway.counts().refused_full == 1

    def test_request_larger_than_the_queue_is_refused_for_good(self, receiver: OTLPReceiver) -> None:
        """More spans than the whole queue can never fit: 413 asking for smaller batches, no retry hint."""
        with running_gateway(receiver, options=GatewayOptions(max_queue_size=CAPACITY)) as service:
            answer = post(
                service.http_port, "/v1/traces", trace_request(plain_spans(CAPACITY + 1)).SerializeToString()
            )
            assert answer.status == 413
            assert "retry-after" not in answer.headers
            assert "send smaller batches" in status_pb2.Status.FromString(answer.body).message
        assert receiver.spans == []


class TestGrpcBackpressure:
    def test_full_queue_answers_resource_exhausted_with_retry_info(self, receiver: OTLPReceiver) -> None:
        """The gRPC refusal carries a google.rpc.RetryInfo detail with the configured delay."""
        receiver.behave(delay_seconds=1.0)
        with (
            running_gateway(
                receiver,
                options=GatewayOptions(max_queue_size=CAPACITY, retry_after_millis=250),
                spool=_small_spool(),
            ) as service,
            grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel,
        ):
            stub = trace_service_pb2_grpc.TraceServiceStub(channel)
            stub.Export(trace_request(plain_spans(8)), timeout=10)
            assert receiver.wait_for(lambda r: r.requests >= 1)
            try:
                stub.Export(trace_request(plain_spans(8, first=9)), timeout=10)
            except grpc.RpcError as error:
                refusal = error
            else:
                raise AssertionError("a request past the queue's capacity was accepted")
            assert refusal.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert "the spool is full" in (refusal.details() or "")
            details = dict(refusal.trailing_metadata() or ())["grpc-status-details-bin"]
            status = status_pb2.Status.FromString(details)
            retry_info = error_details_pb2.RetryInfo()
            assert status.details[0].Unpack(retry_info)
            assert retry_info.retry_delay.ToMilliseconds() == 250
            receiver.behave()
        assert sorted(_span_ids(receiver)) == sorted(_expected_ids(1, 8))


def _ended_spans(count: int, name: str) -> list[ReadableSpan]:
    provider = TracerProvider(shutdown_on_exit=False)
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.gateway")
    for number in range(count):
        with tracer.start_as_current_span(f"{name} {number}"):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


class TestSdkExportersRetry:
    def test_sdk_exporters_retry_after_backpressure_and_every_span_arrives_once(
        self, receiver: OTLPReceiver
    ) -> None:
        """The SDK's HTTP and gRPC exporters honour the retry info; all spans arrive, none twice."""
        receiver.behave(delay_seconds=0.5)
        batches = {"grpc": _ended_spans(8, "grpc"), "http": _ended_spans(8, "http")}
        results: dict[str, SpanExportResult] = {}
        with running_gateway(
            receiver,
            options=GatewayOptions(max_queue_size=CAPACITY, retry_after_millis=300),
            spool=_small_spool(),
        ) as service:
            exporters = {"grpc": grpc_span_exporter(service), "http": http_span_exporter(service)}

            def send(kind: str) -> None:
                results[kind] = exporters[kind].export(batches[kind])

            threads = [threading.Thread(target=send, args=(kind,)) for kind in batches]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(30)
            for exporter in exporters.values():
                exporter.shutdown()
            assert results == {"grpc": SpanExportResult.SUCCESS, "http": SpanExportResult.SUCCESS}
            assert receiver.wait_for(lambda r: len(r.spans) == 16)
            assert service.gateway.counts().refused_full >= 1
        sent = {
            f"{span.context.span_id:016x}" for batch in batches.values() for span in batch if span.context
        }
        assert sorted(_span_ids(receiver)) == sorted(sent)


class TestFailingDownstream:
    def test_a_refusing_destination_is_retried_until_it_takes_everything(
        self, receiver: OTLPReceiver
    ) -> None:
        """Batches the destination refuses are tried again; once it accepts, every span arrives."""
        receiver.behave(error_status=400)
        with running_gateway(receiver, options=GatewayOptions(max_queue_size=CAPACITY)) as service:
            body = trace_request(plain_spans(8)).SerializeToString()
            assert post(service.http_port, "/v1/traces", body).status == 200
            assert eventually(lambda: service.gateway.counts().export_retries >= 1, timeout=30)
            assert receiver.spans == []
            assert service.gateway.counts().in_flight == 8  # held, not dropped
            receiver.behave()
            assert receiver.wait_for(lambda r: len(r.spans) == 8, timeout=60)
            assert eventually(lambda: service.gateway.counts().in_flight == 0)
        counts = service.gateway.counts()
        assert (counts.forwarded, counts.dropped, counts.spans_export_failed) == (8, 0, 0)

    def test_given_up_batches_are_dropped_and_counted(self, receiver: OTLPReceiver) -> None:
        """With give_up_after_seconds, a batch refused that long is dropped, counted, and frees its room."""
        receiver.behave(error_status=400)
        with running_gateway(
            receiver, options=GatewayOptions(max_queue_size=CAPACITY), give_up_after_seconds=0.2
        ) as service:
            body = trace_request(plain_spans(8)).SerializeToString()
            assert post(service.http_port, "/v1/traces", body).status == 200
            assert eventually(lambda: service.gateway.counts().dropped == 8, timeout=30)
            assert service.gateway.counts().in_flight == 0
            receiver.behave()
            again = trace_request(plain_spans(8, first=9)).SerializeToString()
            assert post(service.http_port, "/v1/traces", again).status == 200
            assert receiver.wait_for(lambda r: len(r.spans) == 8, timeout=30)
        counts = service.gateway.counts()
        assert (counts.forwarded, counts.dropped, counts.unaccounted) == (8, 8, 0)
