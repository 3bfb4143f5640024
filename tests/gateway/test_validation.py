"""Validation at the door: bad ids never reach a batch; deep nesting and damaged gzip are 400, logged once."""

from __future__ import annotations

import gzip
import json
import logging

import pytest
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import TRACE_ID, plain_spans, post, trace_request
from gateway.running import running_gateway
from otel_shapecheck.gateway._body import DamagedBody, InflatesTooFar, gunzip
from otel_shapecheck.gateway._decode import MAX_JSON_DEPTH, read_request


def _partial(body: bytes) -> trace_service_pb2.ExportTraceServiceResponse:
    return trace_service_pb2.ExportTraceServiceResponse.FromString(body)


def _nested(depth: int) -> AnyValue:
    value = AnyValue(string_value="leaf")
    for _ in range(depth):
        outer = AnyValue()
        outer.kvlist_value.values.add(key="k").value.CopyFrom(value)
        value = outer
    return value


class TestIds:
    @pytest.mark.parametrize(
        ("field", "value"),
        [("trace_id", b"\x01" * 15), ("span_id", b"\x01" * 9), ("parent_span_id", b"\x02" * 4)],
        ids=["short-trace-id", "long-span-id", "short-parent"],
    )
    def test_a_bad_span_id_rejects_that_span_only(
        self, receiver: OTLPReceiver, field: str, value: bytes
    ) -> None:
        """1000 good spans and one with a wrong-length id: partial success of 1, all 1000 forwarded."""
        bad = Span(name="bad", trace_id=TRACE_ID, span_id=(5000).to_bytes(8, "big"))
        setattr(bad, field, value)
        body = trace_request([*plain_spans(1000), bad]).SerializeToString()
        with running_gateway(receiver) as service:
            answer = post(service.http_port, "/v1/traces", body)
            assert answer.status == 200
            response = _partial(answer.body)
            assert response.partial_success.rejected_spans == 1
            assert "span 'bad' has a" in response.partial_success.error_message
            assert receiver.wait_for(lambda r: len(r.spans) == 1000, timeout=30)
        assert "bad" not in {span.name for span in receiver.spans}

    def test_a_bad_id_in_a_link_rejects_its_span(self, receiver: OTLPReceiver) -> None:
        """A link with a 3-byte span id rejects the span carrying it; the other 500 are forwarded."""
        linked = Span(name="linked", trace_id=TRACE_ID, span_id=(7000).to_bytes(8, "big"))
        linked.links.add(trace_id=TRACE_ID, span_id=b"\x01\x02\x03")
        body = trace_request([*plain_spans(500), linked]).SerializeToString()
        with running_gateway(receiver) as service:
            response = _partial(post(service.http_port, "/v1/traces", body).body)
            assert response.partial_success.rejected_spans == 1
            assert "link span id" in response.partial_success.error_message
            assert receiver.wait_for(lambda r: len(r.spans) == 500, timeout=30)

    def test_log_records_with_bad_ids_are_rejected_and_records_without_ids_pass(self) -> None:
        """A log record may have no ids; one with a 5-byte trace id or a 2-byte span id is rejected."""
        request = ExportLogsServiceRequest()
        records = request.resource_logs.add().scope_logs.add().log_records
        records.extend(
            [
                LogRecord(body=AnyValue(string_value="uncorrelated")),
                LogRecord(trace_id=TRACE_ID, span_id=b"\x01" * 8),
                LogRecord(trace_id=b"\x01" * 5),
                LogRecord(trace_id=TRACE_ID, span_id=b"\x01\x02"),
            ]
        )
        validated = read_request("logs", request.SerializeToString())
        assert (validated.items, validated.rejected) == (2, 2)
        assert "5-byte trace id" in validated.error_message
        stored = ExportLogsServiceRequest.FromString(validated.body)
        assert len(stored.resource_logs[0].scope_logs[0].log_records) == 2

    def test_json_ids_of_the_wrong_size_are_rejected_one_by_one(self) -> None:
        """OTLP/JSON: a 30-hex-digit trace id or an unreadable one rejects its span, not the request."""
        spans = [
            {"traceId": TRACE_ID.hex(), "spanId": "00f067aa0ba902b7", "name": "good"},
            {"traceId": TRACE_ID.hex()[:30], "spanId": "00f067aa0ba902b8", "name": "short"},
            {"traceId": "not an id at all", "spanId": "00f067aa0ba902b9", "name": "garbage"},
        ]
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).encode()
        validated = read_request("traces", body, as_json=True)
        assert (validated.items, validated.rejected) == (1, 2)
        assert "span 'short' has a 15-byte trace id" in validated.error_message


class TestNesting:
    def test_deep_json_is_400_with_one_log_line_and_no_traceback(
        self, receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
    ) -> None:
        """JSON nested hundreds of levels deep: 400 naming the limit, at most one log line, no traceback."""
        value: object = {"stringValue": "leaf"}
        for _ in range(150):
            value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
        span = {"traceId": TRACE_ID.hex(), "spanId": "00f067aa0ba902b7", "name": "deep"}
        span["attributes"] = [{"key": "k", "value": value}]
        body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
        with caplog.at_level(logging.INFO), running_gateway(receiver) as service:
            answers = [
                post(service.http_port, "/v1/traces", body, {"Content-Type": "application/json"})
                for _ in range(20)
            ]
        assert {answer.status for answer in answers} == {400}
        assert f"nested deeper than {MAX_JSON_DEPTH} levels" in json.loads(answers[0].body)["message"]
        refused = [record for record in caplog.records if "Refused a malformed" in record.getMessage()]
        assert len(refused) == 1
        assert not any(record.exc_info for record in caplog.records)

    def test_deep_protobuf_is_400(self, receiver: OTLPReceiver) -> None:
        """A protobuf log body nested past the parser's limit is a bad request, not a server error."""
        request = ExportLogsServiceRequest()
        request.resource_logs.add().scope_logs.add().log_records.add().body.CopyFrom(_nested(200))
        with running_gateway(receiver) as service:
            answer = post(service.http_port, "/v1/logs", request.SerializeToString())
        assert answer.status == 400
        assert "nested more than 100 levels deep" in status_pb2.Status.FromString(answer.body).message

    def test_what_the_door_accepts_parses_again_from_the_spool(self) -> None:
        """A JSON document just within the depth limit is stored in a form that parses back."""
        value: object = {"stringValue": "leaf"}
        for _ in range(20):
            value = {"kvlistValue": {"values": [{"key": "k", "value": value}]}}
        record = {"traceId": TRACE_ID.hex(), "spanId": "00f067aa0ba902b7", "body": value}
        body = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode()
        validated = read_request("logs", body, as_json=True)
        assert ExportLogsServiceRequest.FromString(validated.body) == validated.message


class TestGzip:
    def test_concatenated_members_are_read_whole(self) -> None:
        """Two gzip members one after the other: both halves are read."""
        assert gunzip(gzip.compress(b"first half ") + gzip.compress(b"second half"), 1000) == (
            b"first half second half"
        )

    @pytest.mark.parametrize(
        ("body", "says"),
        [
            (gzip.compress(b"x" * 5000)[:-4], "truncated"),
            (gzip.compress(b"x" * 5000)[:-8], "truncated"),
            (gzip.compress(b"payload") + b"garbage", "trailing data"),
            (gzip.compress(b"payload")[:-8] + b"\0\0\0\0\x07\0\0\0", "incorrect data check"),
            (b"plain text", "does not start like gzip"),
        ],
        ids=["no-length", "no-crc", "trailing-garbage", "bad-crc", "not-gzip"],
    )
    def test_damaged_bodies_are_refused(self, body: bytes, says: str) -> None:
        """A body cut before its trailer, with garbage after it, or a bad CRC is damaged."""
        with pytest.raises(DamagedBody, match=says):
            gunzip(body, 1 << 20)

    def test_a_bomb_stops_at_the_limit(self) -> None:
        """A small body that inflates past the limit is refused without inflating it all."""
        with pytest.raises(InflatesTooFar):
            gunzip(gzip.compress(b"\0" * 50_000_000), 4096)

    def test_a_truncated_gzip_request_is_400(self, receiver: OTLPReceiver) -> None:
        """Over HTTP, a gzip body cut before its CRC and length gets 400 and nothing is forwarded."""
        body = gzip.compress(trace_request(plain_spans(3)).SerializeToString())[:-6]
        with running_gateway(receiver) as service:
            answer = post(service.http_port, "/v1/traces", body, {"Content-Encoding": "gzip"})
        assert answer.status == 400
        assert "truncated" in status_pb2.Status.FromString(answer.body).message
        assert receiver.spans == []
