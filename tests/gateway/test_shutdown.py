"""Graceful shutdown: everything accepted is evaluated and forwarded; new requests are refused."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import TRACE_ID, plain_spans, post, trace_request
from gateway.running import build_gateway, eventually, offer, running_gateway
from gateway.serve_process import ServeProcess, parse_summary
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.gateway._admission import Admission
from otel_shapecheck.gateway._options import GatewayOptions

TOOLS = [
    {"type": "function", "name": "get_capacity", "description": "Get the storage capacity of a cluster"},
    {"type": "function", "name": "get_weather", "description": "Get the current weather for a city"},
]


def _waiting_chat_span() -> Span:
    """A chat span that offered tools and whose tool calls only its parent's end can settle."""

    def text(key: str, value: str) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(string_value=value))

    return Span(
        name="chat gpt-4o-mini",
        trace_id=TRACE_ID,
        span_id=(900).to_bytes(8, "big"),
        parent_span_id=(999).to_bytes(8, "big"),
        kind=Span.SPAN_KIND_CLIENT,
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_001_000_000_000,
        attributes=[
            text("gen_ai.operation.name", "chat"),
            text("gen_ai.request.model", "gpt-4o-mini"),
            text("gen_ai.tool.definitions", json.dumps(TOOLS)),
            text(
                "gen_ai.input.messages",
                json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Capacity of lyon?"}]}]),
            ),
        ],
    )


class TestGracefulStop:
    def test_stop_evaluates_held_spans_and_forwards_everything_accepted(self, receiver: OTLPReceiver) -> None:
        """A span still waiting for facts and every plain span reach the receiver by the time stop returns."""
        service_spans = [*plain_spans(20), _waiting_chat_span()]
        with running_gateway(
            receiver, processor_options=GatewayOptions().processor_options(max_wait_millis=60_000)
        ) as service:
            answer = post(service.http_port, "/v1/traces", trace_request(service_spans).SerializeToString())
            assert answer.status == 200
            assert receiver.wait_for(lambda r: len(r.spans) == 20)
            # The chat span is held for its parent; the others leave the queue once their export returns.
            assert eventually(lambda: service.gateway.counts().in_flight == 1)
        # Leaving the block stopped the service: no waiting here, everything must already be there.
        received = {span.span_id: span for span in receiver.spans}
        assert len(received) == 21
        held = received[(900).to_bytes(8, "big").hex()]
        assert held.attributes[attrs.TOOL_CHOICE_SKIPPED] == "incomplete"
        assert held.parent_span_id == (999).to_bytes(8, "big").hex()

    def test_a_stopped_gateway_refuses_new_requests_as_closing(self, receiver: OTLPReceiver) -> None:
        """After shutdown began, an export is refused (503 / UNAVAILABLE upstream) and nothing is taken."""
        gateway = build_gateway(receiver)
        gateway.shutdown()
        answer = offer(gateway, trace_request(plain_spans(2)))
        assert answer.admission is Admission.CLOSING
        assert answer.accepted == 0
        assert not gateway.gate.begin_request()
        assert gateway.counts().spans_accepted == 0


class TestServeCommand:
    def test_sigterm_drains_and_forwards_everything_accepted(
        self, receiver: OTLPReceiver, tmp_path: Path
    ) -> None:
        """``otel-shapecheck serve`` prints where it listens; SIGTERM forwards all accepted spans, exit 0."""
        command = [
            sys.executable,
            "-m",
            "otel_shapecheck",
            "serve",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--forward",
            f"http://{receiver.grpc_endpoint}",
            "--events",
            receiver.logs_url,
            "--embedder",
            "hashing",
            "--max-wait-millis",
            "60000",
            "--spool-dir",
            str(tmp_path / "spool"),
        ]
        # A long export delay: only the drain at SIGTERM can have forwarded the spans.
        env = {**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "60000"}
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            ports = dict(re.findall(r"(grpc|http)=127\.0\.0\.1:(\d+)", line))
            assert set(ports) == {"grpc", "http"}, line
            body = trace_request([*plain_spans(30), _waiting_chat_span()]).SerializeToString()
            assert post(int(ports["http"]), "/v1/traces", body).status == 200
            assert receiver.spans == []
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == 0, stderr
        assert "31 spans and 0 log records accepted, 0 rejected" in stderr
        assert "31 forwarded (31 spans), 0 left in the spool" in stderr
        assert len({span.span_id for span in receiver.spans}) == 31

    def test_no_destination_is_a_usage_error(self) -> None:
        """Without --forward or an endpoint variable the exporters would send to the gateway: exit 2."""
        env = {
            name: value
            for name, value in os.environ.items()
            if name not in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        }
        result = subprocess.run(
            [sys.executable, "-m", "otel_shapecheck", "serve", "--http", "127.0.0.1:0"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert result.returncode == 2
        assert "--forward is required unless OTEL_EXPORTER_OTLP_ENDPOINT" in result.stderr

    def test_bad_flag_value_is_a_usage_error_naming_it(self) -> None:
        """A malformed --forward URL exits 2 with a message naming the flag."""
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "otel_shapecheck",
                "serve",
                "--http",
                "127.0.0.1:0",
                "--forward",
                "ftp://x/y",
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 2
        assert "--forward 'ftp://x/y' is not an OTLP/gRPC endpoint" in result.stderr


class TestShutdownDrainsTheSpool:
    def test_sigterm_forwards_what_waits_in_the_spool_within_the_timeout(
        self, receiver: OTLPReceiver, tmp_path: Path
    ) -> None:
        """Requests waiting in the spool for room in a small pipeline (one request at a time, a slow
        destination) are still forwarded by a stop that has the time: exit 0, nothing left behind (a
        replica replaced without its volume loses nothing)."""
        receiver.behave(delay_seconds=0.3)
        with ServeProcess(
            f"http://{receiver.grpc_endpoint}",
            tmp_path / "spool",
            "--max-queue-size",
            "100",
            "--shutdown-timeout",
            "60",
        ) as gateway:
            for number in range(15):
                body = trace_request(plain_spans(100, first=1 + number * 100)).SerializeToString()
                assert post(gateway.ports["http"], "/v1/traces", body).status == 200
            code = gateway.stop()
        summary = parse_summary(gateway.stderr)
        assert code == 0, gateway.stderr
        assert (summary.accepted, summary.forwarded, summary.left) == (1500, 1500, 0)
        assert len({span.span_id for span in receiver.spans}) == 1500

    def test_what_the_timeout_leaves_is_reported_left_in_the_spool(
        self, receiver: OTLPReceiver, tmp_path: Path
    ) -> None:
        """With too little time for all of it, the stop forwards what it can and reports the rest left
        in the spool (exit 4), every item accounted for."""
        receiver.behave(delay_seconds=0.5)
        with ServeProcess(
            f"http://{receiver.grpc_endpoint}",
            tmp_path / "spool",
            "--max-queue-size",
            "100",
            "--shutdown-timeout",
            "1.5",
        ) as gateway:
            for number in range(15):
                body = trace_request(plain_spans(100, first=1 + number * 100)).SerializeToString()
                assert post(gateway.ports["http"], "/v1/traces", body).status == 200
            code = gateway.stop()
        summary = parse_summary(gateway.stderr)
        assert code == 4, gateway.stderr
        assert summary.left > 0 and summary.forwarded + summary.left == 1500
        assert not summary.unaccounted
