"""The one rule for where our OTLP exports go, and the one function that builds each exporter.

Every entry point that exports (``configure()``, ``serve --forward``/``--events``, ``demo
--otlp-endpoint``) resolves the protocol the way the OpenTelemetry SDK's own auto-configuration does
(``opentelemetry.sdk._configuration``), so our exports go where the application's own spans go:

1. the explicit ``protocol`` argument (or ``--protocol`` flag);
2. else ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` / ``_LOGS_PROTOCOL`` / ``_METRICS_PROTOCOL`` for that signal;
3. else ``OTEL_EXPORTER_OTLP_PROTOCOL``;
4. else ``grpc``.

The endpoint's spelling never changes the protocol. For OTLP/gRPC the endpoint goes to the SDK's gRPC
exporter as it is, which reads it as the SDK documents: ``http://host:port`` is plaintext,
``https://host:port`` is TLS, a bare ``host:port`` follows ``OTEL_EXPORTER_OTLP_INSECURE`` (TLS by
default). For OTLP/HTTP the endpoint is a base URL to which ``/v1/traces`` or ``/v1/logs`` is appended, as
the specification builds signal URLs from ``OTEL_EXPORTER_OTLP_ENDPOINT`` (``/v1/metrics`` for the verdict
metrics); a URL that already ends in a
signal path names its base. No endpoint at all leaves the SDK exporter to its standard variables.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Final, Literal
from urllib.parse import urlsplit

from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.metrics.export import MetricExporter
from opentelemetry.sdk.trace.export import SpanExporter

logger = logging.getLogger(__name__)

GRPC: Final = "grpc"
HTTP_PROTOBUF: Final = "http/protobuf"
PROTOCOLS: Final = (GRPC, HTTP_PROTOBUF)

OTEL_EXPORTER_OTLP_PROTOCOL: Final = "OTEL_EXPORTER_OTLP_PROTOCOL"
_SIGNAL_PROTOCOL_VARIABLES: Final = {
    "traces": "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "logs": "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL",
    "metrics": "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
}
_SIGNAL_PATHS: Final = ("/v1/traces", "/v1/logs", "/v1/metrics")

Signal = Literal["traces", "logs", "metrics"]


def resolve_protocol(signal: Signal, explicit: str | None = None, *, setting: str = "protocol") -> str:
    """The OTLP protocol for ``signal``: argument, per-signal variable, general variable, ``grpc``.

    Like the SDK's auto-configuration, an unknown protocol is an error, not a warning: exporting with a
    protocol nobody asked for sends telemetry nowhere.

    Raises:
        ValueError: the argument or the variable in effect names no supported protocol.
    """
    if explicit is not None:
        value = explicit.strip().lower() if isinstance(explicit, str) else explicit
        if value not in PROTOCOLS:
            raise ValueError(f"{setting}={explicit!r} is not a valid value: it must be one of {_one_of()}")
        return str(value)
    for variable in (_SIGNAL_PROTOCOL_VARIABLES[signal], OTEL_EXPORTER_OTLP_PROTOCOL):
        raw = os.environ.get(variable, "").strip()
        if raw:
            if raw.lower() not in PROTOCOLS:
                raise ValueError(f"{variable}={raw!r} is not a valid value: it must be one of {_one_of()}")
            return raw.lower()
    return GRPC


def signal_url(endpoint: str, signal: Signal, *, setting: str = "endpoint") -> str:
    """The OTLP/HTTP URL of ``signal`` for ``endpoint`` (a base URL, or one ending in a signal path).

    Raises:
        ValueError: not an ``http://`` or ``https://`` URL with a host.
    """
    text = _checked(endpoint, setting)
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or not _port_is_valid(parts.netloc):
        raise ValueError(
            f"{setting} {endpoint!r} is not an OTLP/HTTP endpoint: give http://HOST:PORT or https://HOST:PORT"
        )
    base = text.rstrip("/")
    for path in _SIGNAL_PATHS:
        if parts.path.rstrip("/").endswith(path):
            base = base[: base.rfind(path)]
            break
    return f"{base}/v1/{signal}"


def grpc_target(endpoint: str, *, setting: str = "endpoint") -> str:
    """``endpoint`` as the SDK's gRPC exporter takes it, after checking it names a host.

    Raises:
        ValueError: empty, or a scheme other than ``http``/``https``.
    """
    text = _checked(endpoint, setting)
    has_scheme = "://" in text
    parts = urlsplit(text if has_scheme else f"//{text}")
    try:
        port = parts.port
    except ValueError:  # a port that is not a number
        port = -1
    bare_but_not_host_port = not has_scheme and (port is None or parts.path)
    if (
        parts.scheme not in ("", "http", "https")
        or not parts.hostname
        or port == -1
        or bare_but_not_host_port
    ):
        raise ValueError(
            f"{setting} {endpoint!r} is not an OTLP/gRPC endpoint: give HOST:PORT, http://HOST:PORT "
            "(plaintext) or https://HOST:PORT (TLS)"
        )
    if parts.path.rstrip("/"):
        logger.warning(
            "%s %r has a path, which OTLP/gRPC ignores; for OTLP/HTTP set the protocol to http/protobuf",
            setting,
            endpoint,
        )
    return text


def otlp_span_exporter(
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    setting: str = "endpoint",
) -> SpanExporter:
    """The SDK's OTLP span exporter for the resolved protocol (``endpoint=None``: its standard variables).

    ``setting`` names the endpoint in errors (an argument name, or a command-line flag).
    """
    if resolve_protocol("traces", protocol) == HTTP_PROTOBUF:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

        url = signal_url(endpoint, "traces", setting=setting) if endpoint is not None else None
        return HttpSpanExporter(endpoint=url, headers=_dict(headers), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter

    target = grpc_target(endpoint, setting=setting) if endpoint is not None else None
    return GrpcSpanExporter(endpoint=target, headers=_dict(headers), timeout=timeout)


def otlp_log_exporter(
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    setting: str = "endpoint",
) -> LogRecordExporter:
    """The SDK's OTLP log exporter for the resolved protocol (``endpoint=None``: its standard variables)."""
    if resolve_protocol("logs", protocol) == HTTP_PROTOBUF:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter

        url = signal_url(endpoint, "logs", setting=setting) if endpoint is not None else None
        return HttpLogExporter(endpoint=url, headers=_dict(headers), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

    target = grpc_target(endpoint, setting=setting) if endpoint is not None else None
    return GrpcLogExporter(endpoint=target, headers=_dict(headers), timeout=timeout)


def otlp_metric_exporter(
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float | None = None,
    setting: str = "endpoint",
) -> MetricExporter:
    """The SDK's OTLP metric exporter for the resolved protocol (``endpoint=None``: its standard variables).

    Temporality and aggregation follow the exporter's own variables
    (``OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE``, cumulative by default, as Prometheus wants).
    """
    if resolve_protocol("metrics", protocol) == HTTP_PROTOBUF:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
            OTLPMetricExporter as HttpMetricExporter,
        )

        url = signal_url(endpoint, "metrics", setting=setting) if endpoint is not None else None
        return HttpMetricExporter(endpoint=url, headers=_dict(headers), timeout=timeout)
    from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
        OTLPMetricExporter as GrpcMetricExporter,
    )

    target = grpc_target(endpoint, setting=setting) if endpoint is not None else None
    return GrpcMetricExporter(endpoint=target, headers=_dict(headers), timeout=timeout)


def describe(endpoint: str | None, signal: Signal, protocol: str | None = None) -> str:
    """Where ``signal`` goes, for people: ``OTLP/HTTP http://c:4318`` or ``OTLP/gRPC http://c:4317``."""
    resolved = resolve_protocol(signal, protocol)
    if resolved == HTTP_PROTOBUF:
        if endpoint is None:
            return "OTLP/HTTP the OTEL_EXPORTER_OTLP_* endpoint"
        return f"OTLP/HTTP {signal_url(endpoint, signal).removesuffix(f'/v1/{signal}')}"
    return f"OTLP/gRPC {endpoint if endpoint is not None else 'the OTEL_EXPORTER_OTLP_* endpoint'}"


def _port_is_valid(netloc: str) -> bool:
    try:
        port = urlsplit(f"//{netloc}").port
    except ValueError:  # urlsplit checks the port only when it is read
        return False
    return port is None or port > 0


def _checked(endpoint: str, setting: str) -> str:
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ValueError(f"{setting} is empty: give the OTLP endpoint, e.g. http://collector:4317")
    return endpoint.strip()


def _dict(headers: Mapping[str, str] | None) -> dict[str, str] | None:
    return dict(headers) if headers is not None else None


def _one_of() -> str:
    return ", ".join(PROTOCOLS)
