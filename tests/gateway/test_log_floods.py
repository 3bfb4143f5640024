"""Requests that fail (in decoding, or by a bug) are answered, and logged once per interval, not each."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import grpc
import pytest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import running_gateway
from gateway.serve_process import ServeProcess

_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
HUGE_NUMBER = json.dumps({"resourceSpans": []})[:-1] + ', "x": ' + "7" * 5000 + "}"
"""Valid JSON whose number has more digits than ``int`` parses (4 300): ``json.loads`` raises ValueError."""


class TestDecodingFailures:
    def test_a_number_past_the_digit_limit_is_400_with_one_log_line(
        self, receiver: OTLPReceiver, tmp_path: Path
    ) -> None:
        """200 OTLP/JSON requests carrying a 5 000-digit number: each is answered 400, and the gateway's
        log holds no traceback and a handful of lines, not one per request."""
        with ServeProcess(f"http://{receiver.grpc_endpoint}", tmp_path / "spool", "--no-checks") as serve:
            statuses = {
                post(
                    serve.ports["http"],
                    "/v1/traces",
                    HUGE_NUMBER.encode(),
                    {"Content-Type": "application/json"},
                ).status
                for _ in range(200)
            }
            body = trace_request(plain_spans(2)).SerializeToString()
            assert post(serve.ports["http"], "/v1/traces", body).status == 200
            assert serve.stop() == 0
        assert statuses == {400}
        assert "Traceback" not in serve.stderr
        refused = [line for line in serve.stderr.splitlines() if "Refused a malformed" in line]
        assert len(refused) == 1, serve.stderr[-2000:]
        assert len(serve.stderr.splitlines()) < 20, serve.stderr[-2000:]


class TestUnexpectedErrors:
    def test_a_failing_request_is_answered_500_and_logged_once_per_interval(
        self, receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bug in handling (here: storing raises) answers every request 500 (HTTP) or INTERNAL (gRPC)
        and logs one traceback per transport, the others counted, not 50 tracebacks."""
        body = trace_request(plain_spans(2)).SerializeToString()
        with running_gateway(receiver) as service, caplog.at_level(logging.WARNING):

            def broken(*args: object) -> object:
                raise RuntimeError("a bug")

            monkeypatch.setattr(service.gateway, "accept", broken)
            statuses = {post(service.http_port, "/v1/traces", body).status for _ in range(50)}
            codes = set()
            with grpc.insecure_channel(f"127.0.0.1:{service.grpc_port}") as channel:
                export = channel.unary_unary(_EXPORT, request_serializer=None, response_deserializer=None)
                for _ in range(50):
                    try:
                        export(body, timeout=10)
                    except grpc.RpcError as error:
                        codes.add(error.code())
        assert statuses == {500}
        assert codes == {grpc.StatusCode.INTERNAL}
        tracebacks = [record for record in caplog.records if record.exc_info]
        assert len(tracebacks) == 2, [record.getMessage() for record in caplog.records]


def _chat_spans(count: int, trace_state: str) -> list[Span]:
    """GenAI chat spans (converted and evaluated, not passed through) carrying ``trace_state``."""
    spans = plain_spans(count)
    for span in spans:
        span.name = "chat gpt-4o-mini"
        span.trace_state = trace_state
        del span.attributes[:]
        span.attributes.append(KeyValue(key="gen_ai.operation.name", value=AnyValue(string_value="chat")))
    return spans


class TestInvalidTracestate:
    def test_a_bad_tracestate_is_dropped_at_the_door_and_counted_not_logged_per_span(
        self, receiver: OTLPReceiver, tmp_path: Path
    ) -> None:
        """300 evaluated spans whose tracestate breaks the W3C grammar: every span is forwarded, the
        tracestate dropped and counted in the exit summary, and the log holds no line per span."""
        with ServeProcess(f"http://{receiver.grpc_endpoint}", tmp_path / "spool") as serve:
            for first in range(0, 300, 100):
                spans = _chat_spans(100, "Bad Key=1,ok=2")
                for number, span in enumerate(spans):
                    span.span_id = (1 + first + number).to_bytes(8, "big")
                body = trace_request(spans).SerializeToString()
                assert post(serve.ports["http"], "/v1/traces", body).status == 200
            good_span = trace_request(_chat_spans(1, "vendor=value"))
            good_span.resource_spans[0].scope_spans[0].spans[0].span_id = (999).to_bytes(8, "big")
            assert post(serve.ports["http"], "/v1/traces", good_span.SerializeToString()).status == 200
            assert serve.stop() == 0, serve.stderr
        assert len({span.span_id for span in receiver.spans}) == 301
        assert "300 invalid tracestates dropped" in serve.stderr
        assert len(serve.stderr.splitlines()) < 20, serve.stderr[-3000:]
