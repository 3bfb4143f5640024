"""``--forward`` and ``--events`` URLs: the path decides OTLP/HTTP or gRPC; bad URLs name the flag."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

from otel_shapecheck.otlp._endpoints import OtlpEndpoint, log_exporter, parse_endpoint, span_exporter


class TestParseEndpoint:
    @pytest.mark.parametrize(
        ("url", "expected"),
        [
            (
                "http://collector:4318/v1/traces",
                OtlpEndpoint(
                    "http", "http://collector:4318/v1/traces", "http://collector:4318/v1/logs", True
                ),
            ),
            (
                "https://tempo.example/otlp/v1/logs",
                OtlpEndpoint(
                    "http",
                    "https://tempo.example/otlp/v1/traces",
                    "https://tempo.example/otlp/v1/logs",
                    False,
                ),
            ),
            ("collector:4317", OtlpEndpoint("grpc", "collector:4317", "collector:4317", True)),
            (
                "http://collector:4317",
                OtlpEndpoint("grpc", "http://collector:4317", "http://collector:4317", True),
            ),
            (
                "https://collector:4317",
                OtlpEndpoint("grpc", "https://collector:4317", "https://collector:4317", False),
            ),
        ],
    )
    def test_signal_path_means_http_anything_else_grpc(self, url: str, expected: OtlpEndpoint) -> None:
        """A URL ending in /v1/traces or /v1/logs is OTLP/HTTP for both signals; host:port is gRPC."""
        assert parse_endpoint("--forward", url) == expected

    @pytest.mark.parametrize(
        ("url", "says"),
        [
            ("", "--forward is empty"),
            ("ftp://collector/v1/traces", "is not an OTLP endpoint"),
            ("http://collector:4318/otlp", "a path must end in /v1/traces or /v1/logs"),
            ("collector:4318/v1/traces", "an OTLP/HTTP URL needs http:// or https://"),
        ],
    )
    def test_bad_urls_raise_value_error_naming_the_flag(self, url: str, says: str) -> None:
        """Each malformed URL is a ValueError that names the flag and the problem."""
        with pytest.raises(ValueError, match="--forward") as raised:
            parse_endpoint("--forward", url)
        assert says in str(raised.value)


class TestExporters:
    def test_http_url_builds_the_sdk_http_exporter(self) -> None:
        """An OTLP/HTTP URL gives the SDK's HTTP span exporter at that URL."""
        exporter = span_exporter("http://127.0.0.1:4318/v1/traces", timeout_seconds=1)
        try:
            assert isinstance(exporter, HttpSpanExporter)
            assert exporter._endpoint == "http://127.0.0.1:4318/v1/traces"
        finally:
            exporter.shutdown()

    def test_host_port_builds_the_sdk_grpc_log_exporter(self) -> None:
        """``host:port`` gives the SDK's gRPC log exporter (plaintext)."""
        exporter = log_exporter("--events", "127.0.0.1:4317", timeout_seconds=1)
        try:
            assert isinstance(exporter, GrpcLogExporter)
        finally:
            exporter.shutdown()
