"""The one OTLP endpoint rule: the protocol is the argument or the SDK's variables, never the spelling.

Every entry point that exports (``configure()``, ``serve --forward``, ``demo --otlp-endpoint``) is given
the same endpoint string and environment and must reach the same listener of a real receiver as the
OpenTelemetry SDK's own auto-configuration would pick.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest
from cli.console_script import run_cli
from gateway.otlp_requests import plain_spans, post, trace_request
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._configuration import _get_exporter_names
from opentelemetry.sdk.trace import TracerProvider
from otlp_receiver import OTLPReceiver

import otel_shapecheck
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.otlp._endpoints import (
    grpc_target,
    otlp_log_exporter,
    otlp_span_exporter,
    resolve_protocol,
    signal_url,
)

PROTOCOL_VARIABLES = (
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
)


@pytest.fixture(autouse=True)
def _no_protocol_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROTOCOL_VARIABLES:
        monkeypatch.delenv(name, raising=False)


class TestProtocol:
    def test_grpc_when_nothing_is_set(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With no argument and no variable the protocol is grpc, as the SDK's otlp exporter picks."""
        monkeypatch.setenv("OTEL_TRACES_EXPORTER", "otlp")
        assert resolve_protocol("traces") == "grpc"
        assert _get_exporter_names("traces") == ["otlp_proto_grpc"]

    def test_the_signal_variable_wins_over_the_general_one(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """OTEL_EXPORTER_OTLP_TRACES_PROTOCOL beats OTEL_EXPORTER_OTLP_PROTOCOL, for traces only."""
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        assert resolve_protocol("traces") == "http/protobuf"
        assert resolve_protocol("logs") == "grpc"

    def test_the_argument_wins_over_every_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An explicit protocol ignores the variables."""
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/protobuf")
        assert resolve_protocol("traces", "grpc") == "grpc"

    def test_unknown_protocols_are_errors_naming_their_source(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A protocol nobody supports raises ValueError naming the argument or the variable."""
        with pytest.raises(ValueError, match="protocol='http/json'"):
            resolve_protocol("traces", "http/json")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
        with pytest.raises(ValueError, match="OTEL_EXPORTER_OTLP_PROTOCOL='carrier-pigeon'"):
            resolve_protocol("logs")

    @pytest.mark.parametrize(
        "endpoint",
        ["http://collector:4318", "http://collector:4318/v1/traces", "collector:4317", "https://c:4317"],
    )
    def test_the_spelling_never_changes_the_protocol(self, endpoint: str) -> None:
        """Whatever the endpoint looks like, without a protocol the exporters are gRPC."""
        spans, logs = otlp_span_exporter(endpoint, timeout=1), otlp_log_exporter(endpoint, timeout=1)
        try:
            assert isinstance(spans, GrpcSpanExporter)
            assert isinstance(logs, GrpcLogExporter)
        finally:
            spans.shutdown()
            logs.shutdown()


class TestEndpoints:
    @pytest.mark.parametrize(
        ("endpoint", "traces", "logs"),
        [
            ("http://c:4318", "http://c:4318/v1/traces", "http://c:4318/v1/logs"),
            (
                "https://tempo.example/otlp/",
                "https://tempo.example/otlp/v1/traces",
                "https://tempo.example/otlp/v1/logs",
            ),
            ("http://c:4318/v1/traces", "http://c:4318/v1/traces", "http://c:4318/v1/logs"),
            ("http://c:4318/otlp/v1/logs", "http://c:4318/otlp/v1/traces", "http://c:4318/otlp/v1/logs"),
        ],
    )
    def test_http_endpoints_are_base_urls(self, endpoint: str, traces: str, logs: str) -> None:
        """For OTLP/HTTP the signal path is appended to the base; a signal URL names its base."""
        assert signal_url(endpoint, "traces") == traces
        assert signal_url(endpoint, "logs") == logs
        exporter = otlp_span_exporter(endpoint, protocol="http/protobuf", timeout=1)
        try:
            assert isinstance(exporter, HttpSpanExporter)
            assert exporter._endpoint == traces
        finally:
            exporter.shutdown()

    @pytest.mark.parametrize(
        ("endpoint", "protocol", "says"),
        [
            ("", "grpc", "--flag is empty"),
            ("   ", "http/protobuf", "--flag is empty"),
            ("ftp://collector:21", "grpc", "is not an OTLP/gRPC endpoint"),
            ("collector:4318", "http/protobuf", "is not an OTLP/HTTP endpoint"),
            ("ftp://collector/v1/traces", "http/protobuf", "is not an OTLP/HTTP endpoint"),
        ],
    )
    def test_bad_endpoints_name_the_setting(self, endpoint: str, protocol: str, says: str) -> None:
        """Each malformed endpoint raises ValueError naming the setting and the problem, before any I/O."""
        with pytest.raises(ValueError, match="--flag") as raised:
            otlp_span_exporter(endpoint, protocol=protocol, setting="--flag")
        assert says in str(raised.value)

    def test_grpc_paths_are_ignored_with_a_warning(self, caplog: pytest.LogCaptureFixture) -> None:
        """A path on a gRPC endpoint is kept for the SDK (which ignores it) and a warning says so."""
        assert grpc_target("http://c:4318/v1/traces") == "http://c:4318/v1/traces"
        assert "OTLP/gRPC ignores" in caplog.text


@pytest.fixture(name="receiver")
def _receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver


def _cases(receiver: OTLPReceiver) -> list[tuple[str, dict[str, str], list[str], str]]:
    """(endpoint, environment, extra CLI flags, listener the spans must reach)."""
    grpc_url = f"http://127.0.0.1:{receiver.grpc_port}"
    return [
        (grpc_url, {}, [], "grpc"),
        (receiver.http_endpoint, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, [], "http"),
        (
            receiver.traces_url,
            {
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
                "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf",
            },
            [],
            "http",
        ),
        (grpc_url, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}, ["--protocol", "grpc"], "grpc"),
    ]


CASE_IDS = ["grpc-default", "http-by-variable", "http-by-signal-variables", "flag-beats-variable"]


@pytest.mark.parametrize("case", range(4), ids=CASE_IDS)
class TestEveryEntryPointReachesTheSameListener:
    def test_configure(self, case: int, receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch) -> None:
        """configure(endpoint=...) exports where the SDK's auto-configuration would."""
        endpoint, environment, flags, listener = _cases(receiver)[case]
        for name, value in environment.items():
            monkeypatch.setenv(name, value)
        protocol = flags[1] if flags else None
        provider = TracerProvider(shutdown_on_exit=False)
        otel_shapecheck.configure(
            provider, endpoint=endpoint, protocol=protocol, checks=build_checks("hashing")
        )
        with provider.get_tracer("t").start_as_current_span("plain"):
            pass
        provider.shutdown()
        assert receiver.wait_for(lambda r: len(r.spans) >= 1)
        assert {span.transport for span in receiver.spans} == {listener}

    def test_demo(self, case: int, receiver: OTLPReceiver) -> None:
        """demo --otlp-endpoint exports where the SDK's auto-configuration would."""
        endpoint, environment, flags, listener = _cases(receiver)[case]
        completed = run_cli(
            "demo", "--embedder", "hashing", "--otlp-endpoint", endpoint, *flags, env=environment
        )
        assert completed.returncode == 0, completed.stderr
        assert receiver.wait_for(lambda r: len(r.spans) >= 10 and len(r.log_records) >= 1)
        assert {span.transport for span in receiver.spans} == {listener}
        assert {record.transport for record in receiver.log_records} == {listener}

    def test_serve(self, case: int, receiver: OTLPReceiver) -> None:
        """serve --forward forwards where the SDK's auto-configuration would."""
        endpoint, environment, flags, listener = _cases(receiver)[case]
        command = [sys.executable, "-m", "otel_shapecheck", "serve", "--http", "127.0.0.1:0"]
        command += ["--forward", endpoint, "--embedder", "hashing", *flags]
        process = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **environment},
        )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            (port,) = re.findall(r"http=127\.0\.0\.1:(\d+)", line)
            assert (
                post(int(port), "/v1/traces", trace_request(plain_spans(3)).SerializeToString()).status == 200
            )
            process.send_signal(signal.SIGTERM)
            _, stderr = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        assert process.returncode == 0, stderr
        assert receiver.wait_for(lambda r: len(r.spans) >= 3)
        assert {span.transport for span in receiver.spans} == {listener}
