"""The ``serve`` command's flags, each checked by argparse at the boundary (a bad value exits 2).

The flags of settings (bounds, timeouts) come from the settings table, in the unit each flag names.
"""

from __future__ import annotations

import argparse

from otel_shapecheck._settings_table import EVENTS, GATEWAY, PROCESSOR, Choice, by_name
from otel_shapecheck.checks._builtin import EMBEDDERS
from otel_shapecheck.cli._embedding_options import add_embedding_cache_argument
from otel_shapecheck.cli._figures_options import add_figures_arguments
from otel_shapecheck.cli._setting_flags import add_setting_flag, seconds, whole
from otel_shapecheck.gateway._settings import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
)
from otel_shapecheck.otlp._endpoints import PROTOCOLS

DEFAULT_GRPC_ADDRESS = "127.0.0.1:4317"
DEFAULT_HTTP_ADDRESS = "127.0.0.1:4318"


def add_flags(parser: argparse.ArgumentParser) -> None:
    """Every flag of ``serve``, in groups."""
    listen = parser.add_argument_group("listening")
    listen.add_argument("--grpc", metavar="HOST:PORT", help="OTLP/gRPC address (default 127.0.0.1:4317)")
    listen.add_argument("--http", metavar="HOST:PORT", help="OTLP/HTTP address (default 127.0.0.1:4318)")
    listen.add_argument(
        "--grpc-workers", type=whole(1), default=4, metavar="N", help="gRPC handler threads (4)"
    )
    listen.add_argument(
        "--http-workers", type=whole(1), default=4, metavar="N", help="threads decoding HTTP bodies (4)"
    )
    listen.add_argument(
        "--request-timeout-seconds",
        type=seconds(positive=True),
        default=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        metavar="X",
        help=f"an HTTP request's headers and body must arrive within this, else 408 "
        f"({DEFAULT_REQUEST_TIMEOUT_SECONDS:.0f})",
    )
    listen.add_argument(
        "--idle-timeout-seconds",
        type=seconds(positive=True),
        default=DEFAULT_IDLE_TIMEOUT_SECONDS,
        metavar="X",
        help=f"idle HTTP connections close after this, gRPC ones after 10x "
        f"({DEFAULT_IDLE_TIMEOUT_SECONDS:.0f})",
    )
    listen.add_argument(
        "--max-connections",
        type=whole(1),
        default=DEFAULT_MAX_CONNECTIONS,
        metavar="N",
        help=f"HTTP connections at once; past it idle ones close first, then requests get 503 "
        f"({DEFAULT_MAX_CONNECTIONS})",
    )
    listen.add_argument(
        "--tls-handshake-timeout-seconds",
        type=seconds(positive=True),
        metavar="X",
        help="longest an HTTPS connection's TLS handshake may take, at most --request-timeout-seconds (5)",
    )
    security = parser.add_argument_group("security (both listeners)")
    security.add_argument("--tls-cert", metavar="FILE", help="PEM certificate chain: serve TLS")
    security.add_argument("--tls-key", metavar="FILE", help="PEM private key of --tls-cert")
    security.add_argument(
        "--tls-client-ca", metavar="FILE", help="require client certificates from this CA (mTLS)"
    )
    security.add_argument(
        "--auth-token-file",
        metavar="FILE",
        help="require 'Authorization: Bearer <token>' with a token from FILE (one a line; SIGHUP reloads)",
    )
    bounds = parser.add_argument_group("memory and spool")
    bounds.add_argument(
        "--spool-dir", metavar="DIR", help="durable spool (default: a per-user state directory)"
    )
    bounds.add_argument(
        "--no-spool",
        action="store_true",
        help="keep accepted requests in memory only (lost if the process dies)",
    )
    add_setting_flag(bounds, by_name(GATEWAY, "spool_max_bytes"), help="spool size; past it 429")
    bounds.add_argument(
        "--spool-fsync", action="store_true", help="fsync each accepted request (power-loss safe)"
    )
    for name in (
        "spool_flush_millis",
        "max_request_bytes",
        "max_queue_size",
        "max_queue_bytes",
        "max_receiving_bytes",
        "retry_after_millis",
    ):
        add_setting_flag(bounds, by_name(GATEWAY, name))
    send = parser.add_argument_group("forwarding")
    send.add_argument(
        "--forward", metavar="URL", help="where spans and log records go (default: OTEL_EXPORTER_OTLP_*)"
    )
    send.add_argument(
        "--events", metavar="URL", help="where flagged evaluation events go (default: --forward)"
    )
    send.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="OTLP protocol of --forward and --events (default: OTEL_EXPORTER_OTLP_{TRACES,LOGS}_PROTOCOL, "
        "then OTEL_EXPORTER_OTLP_PROTOCOL, then grpc, as the OpenTelemetry SDK decides)",
    )
    send.add_argument("--no-events", action="store_true", help="send no evaluation events")
    send.add_argument(
        "--export-timeout-seconds",
        type=seconds(positive=True),
        metavar="X",
        help="timeout of each export attempt",
    )
    send.add_argument(
        "--give-up-after-seconds",
        type=seconds(positive=True),
        metavar="X",
        help="drop (and count) a batch the destination refuses this long (default: retry until forwarded)",
    )
    add_setting_flag(send, by_name(GATEWAY, "shutdown_timeout_millis"))
    checks = parser.add_argument_group("checks")
    checks.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (minilm)"
    )
    checks.add_argument("--no-checks", action="store_true", help="pass-through: forward without evaluating")
    add_setting_flag(checks, by_name(PROCESSOR, "max_wait_millis"), help="longest a span waits for facts")
    forward, content = by_name(EVENTS, "forward"), by_name(EVENTS, "include_content")
    assert isinstance(forward.kind, Choice) and forward.flag and content.flag
    checks.add_argument(forward.flag, choices=forward.kind.allowed, help=forward.doc)
    # A switch, not a value: given, it turns the setting on; left out, its variable decides.
    checks.add_argument(content.flag, action="store_true", help=content.doc)
    add_embedding_cache_argument(checks)
    add_figures_arguments(checks)
