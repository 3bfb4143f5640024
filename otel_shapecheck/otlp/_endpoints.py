"""Where the gateway sends: ``--forward`` and ``--events`` URLs into the SDK's OTLP exporters.

A URL ending in ``/v1/traces`` or ``/v1/logs`` means OTLP/HTTP (the other signal's path is derived from
it); anything else (``host:port``, ``http://host:port``, ``https://host:port``) means OTLP/gRPC, plaintext
unless the scheme is ``https``. No URL at all defers to the standard ``OTEL_EXPORTER_OTLP_*`` variables.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.trace.export import SpanExporter

from otel_shapecheck.pipeline._configure import otlp_log_exporter, otlp_span_exporter

_SIGNAL_PATHS = ("/v1/traces", "/v1/logs")


@dataclass(frozen=True)
class OtlpEndpoint:
    """One destination: its transport and the per-signal addresses."""

    protocol: str
    """``http`` or ``grpc``."""
    traces: str
    logs: str
    insecure: bool


def parse_endpoint(flag: str, url: str) -> OtlpEndpoint:
    """Read one destination URL; ``flag`` names it in errors.

    Raises:
        ValueError: an empty URL, a scheme other than http/https, or no host.
    """
    text = url.strip()
    if not text:
        raise ValueError(f"{flag} is empty: give host:port (gRPC) or a URL ending in /v1/traces (HTTP)")
    parts = urlsplit(text if "://" in text else f"grpc://{text}")
    if parts.scheme not in ("http", "https", "grpc") or not parts.hostname:
        raise ValueError(
            f"{flag} {url!r} is not an OTLP endpoint: use host:port, http://host:port/v1/traces or https://…"
        )
    path = parts.path.rstrip("/")
    for signal_path in _SIGNAL_PATHS:
        if path.endswith(signal_path):
            if parts.scheme == "grpc":
                raise ValueError(f"{flag} {url!r}: an OTLP/HTTP URL needs http:// or https://")
            base = text[: text.rstrip("/").rfind(signal_path)]
            return OtlpEndpoint("http", f"{base}/v1/traces", f"{base}/v1/logs", parts.scheme == "http")
    if path:
        raise ValueError(
            f"{flag} {url!r}: a path must end in /v1/traces or /v1/logs (OTLP/HTTP); "
            "gRPC takes host:port only"
        )
    return OtlpEndpoint("grpc", text, text, parts.scheme != "https")


def span_exporter(url: str | None, *, timeout_seconds: float | None = None) -> SpanExporter:
    """The OTLP span exporter for ``--forward`` (``None``: the standard variables)."""
    if url is None:
        return otlp_span_exporter(None, timeout=timeout_seconds)
    endpoint = parse_endpoint("--forward", url)
    if endpoint.protocol == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

        return HttpSpanExporter(endpoint=endpoint.traces, timeout=timeout_seconds)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

    return GrpcSpanExporter(endpoint=endpoint.traces, insecure=endpoint.insecure, timeout=timeout_seconds)


def log_exporter(flag: str, url: str | None, *, timeout_seconds: float | None = None) -> LogRecordExporter:
    """The OTLP log exporter for ``--forward`` or ``--events`` (``None``: the standard variables)."""
    if url is None:
        return otlp_log_exporter(None, timeout=timeout_seconds)
    endpoint = parse_endpoint(flag, url)
    if endpoint.protocol == "http":
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter

        return HttpLogExporter(endpoint=endpoint.logs, timeout=timeout_seconds)
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

    return GrpcLogExporter(endpoint=endpoint.logs, insecure=endpoint.insecure, timeout=timeout_seconds)
