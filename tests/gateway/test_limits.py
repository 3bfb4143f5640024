"""Request limits and malformed requests: clear errors in the request's own encoding, nothing forwarded."""

from __future__ import annotations

import gzip
import json
import random

import grpc
import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import running_gateway
from otel_shapecheck.gateway._options import GatewayOptions

LIMIT = 4096


def _message(body: bytes) -> str:
    return str(status_pb2.Status.FromString(body).message)


class TestSizeLimits:
    def test_http_body_over_the_limit_is_413_naming_sizes(self, receiver: OTLPReceiver) -> None:
        """A body larger than the limit is refused before it is read, with both sizes in the message."""
        body = trace_request(plain_spans(80)).SerializeToString()
        assert len(body) > LIMIT
        with running_gateway(receiver, options=GatewayOptions(max_request_bytes=LIMIT)) as service:
            answer = post(service.http_port, "/v1/traces", body)
        assert answer.status == 413
        assert _message(answer.body) == (
            f"the request body has {len(body)} bytes, more than the limit of {LIMIT} bytes"
        )
        assert receiver.spans == []

    def test_gzip_body_inflating_past_the_limit_is_413(self, receiver: OTLPReceiver) -> None:
        """The limit applies after decompression: a small gzip body that inflates past it is refused."""
        bomb = gzip.compress(b"\0" * 1_000_000)
        assert len(bomb) < LIMIT
        with running_gateway(receiver, options=GatewayOptions(max_request_bytes=LIMIT)) as service:
            answer = post(service.http_port, "/v1/traces", bomb, {"Content-Encoding": "gzip"})
        assert answer.status == 413
        assert "inflates to more than the limit of 4096 bytes" in _message(answer.body)

    def test_gzip_body_within_the_limit_is_read(self, receiver: OTLPReceiver) -> None:
        """A gzip-compressed protobuf body is decompressed and forwarded."""
        body = gzip.compress(trace_request(plain_spans(3)).SerializeToString())
        with running_gateway(receiver, options=GatewayOptions(max_request_bytes=LIMIT)) as service:
            answer = post(service.http_port, "/v1/traces", body, {"Content-Encoding": "gzip"})
            assert answer.status == 200
            assert receiver.wait_for(lambda r: len(r.spans) == 3)

    def test_grpc_message_over_the_limit_is_refused_by_size(self, receiver: OTLPReceiver) -> None:
        """gRPC refuses a message past the limit with RESOURCE_EXHAUSTED naming both sizes."""
        request = trace_request(plain_spans(80))
        with (
            running_gateway(receiver, options=GatewayOptions(max_request_bytes=LIMIT)) as service,
            grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel,
            pytest.raises(grpc.RpcError) as refused,
        ):
            trace_service_pb2_grpc.TraceServiceStub(channel).Export(request, timeout=10)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"vs. {LIMIT}" in (refused.value.details() or "")
        assert receiver.spans == []


class TestMalformedRequests:
    @pytest.mark.parametrize(
        ("path", "body", "headers", "status", "says"),
        [
            ("/v1/metrics", b"", {}, 404, "no OTLP endpoint at /v1/metrics"),
            ("/v1/traces", b"\xff\xff\xff", {}, 400, "not a protobuf ExportTraceServiceRequest"),
            ("/v1/traces", b"spans", {"Content-Type": "text/plain"}, 415, "'text/plain' is not supported"),
            ("/v1/traces", b"x", {"Content-Encoding": "br"}, 415, "Content-Encoding 'br' is not supported"),
            ("/v1/traces", b"\x1f\x8b broken", {"Content-Encoding": "gzip"}, 400, "damaged gzip body"),
        ],
        ids=["unknown-path", "not-protobuf", "content-type", "encoding", "broken-gzip"],
    )
    def test_protobuf_errors_say_what_is_wrong(
        self, receiver: OTLPReceiver, path: str, body: bytes, headers: dict[str, str], status: int, says: str
    ) -> None:
        """Each malformed request gets its status and a google.rpc.Status message naming the problem."""
        with running_gateway(receiver) as service:
            answer = post(service.http_port, path, body, headers)
        assert answer.status == status
        assert says in _message(answer.body)

    @pytest.mark.parametrize(
        "body",
        [
            b'{"resourceSpans": [null]}',
            b'{"resourceSpans": [5]}',
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 123}]}]}]}',
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "soon"}]}]}]}',
            b"[]",
            b"{not json",
        ],
        ids=["null-entry", "number-entry", "number-id", "text-time", "array", "not-json"],
    )
    def test_malformed_json_shapes_are_400_not_server_errors(
        self, receiver: OTLPReceiver, body: bytes
    ) -> None:
        """Every malformed OTLP/JSON shape is the sender's error (400), never a gateway failure (500)."""
        with running_gateway(receiver) as service:
            answer = post(service.http_port, "/v1/traces", body, {"Content-Type": "application/json"})
        assert answer.status == 400
        assert json.loads(answer.body)["message"].startswith("not ")

    def test_json_errors_are_answered_in_json(self, receiver: OTLPReceiver) -> None:
        """A malformed OTLP/JSON body gets 400 with a JSON google.rpc.Status."""
        with running_gateway(receiver) as service:
            answer = post(
                service.http_port, "/v1/traces", b'{"resourceSpans": 7}', {"Content-Type": "application/json"}
            )
        assert answer.status == 400
        assert answer.headers["content-type"] == "application/json"
        assert "not an OTLP/JSON ExportTraceServiceRequest" in json.loads(answer.body)["message"]


class TestHostileBodies:
    def test_random_and_mutated_bodies_never_fail_the_gateway(self, receiver: OTLPReceiver) -> None:
        """Random bytes and byte-flipped real requests get 200 or 400, never 500; the gateway serves on."""
        generator = random.Random(20261129)
        valid = trace_request(plain_spans(3)).SerializeToString()
        bodies = [generator.randbytes(generator.randrange(1, 300)) for _ in range(60)]
        for _ in range(60):
            mutated = bytearray(valid)
            for _ in range(generator.randrange(1, 6)):
                mutated[generator.randrange(len(mutated))] = generator.randrange(256)
            bodies.append(bytes(mutated))
        with running_gateway(receiver) as service:
            statuses = {post(service.http_port, "/v1/traces", body).status for body in bodies}
            assert post(service.http_port, "/v1/traces", valid).status == 200
        assert statuses <= {200, 400}
