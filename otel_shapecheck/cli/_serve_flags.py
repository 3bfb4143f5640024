"""The ``serve`` command's flags, each checked by argparse at the boundary (a bad value exits 2)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from otel_shapecheck.checks._builtin import EMBEDDERS
from otel_shapecheck.cli._figures_options import add_figures_arguments
from otel_shapecheck.gateway._settings import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
)
from otel_shapecheck.otlp._endpoints import PROTOCOLS

DEFAULT_GRPC_ADDRESS = "127.0.0.1:4317"
DEFAULT_HTTP_ADDRESS = "127.0.0.1:4318"


def whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number ≥ ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be ≥ {minimum}")
        return value

    return parse


def seconds(*, positive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds ≥ 0 (> 0 when ``positive``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number {'>' if positive else '≥'} 0")
        return value

    return parse


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
    bounds.add_argument(
        "--spool-max-bytes",
        type=whole(1),
        metavar="N",
        help="spool size; past it 429 (1 GiB; 128 MiB in memory)",
    )
    bounds.add_argument(
        "--spool-fsync", action="store_true", help="fsync each accepted request (power-loss safe)"
    )
    bounds.add_argument(
        "--spool-flush-seconds",
        type=seconds(),
        metavar="X",
        help="longest the spool defers deletes of forwarded requests; a crash re-sends at most these (0.25)",
    )
    bounds.add_argument(
        "--max-request-bytes", type=whole(1), metavar="N", help="largest request, decompressed (4 MiB)"
    )
    bounds.add_argument(
        "--max-queue-size", type=whole(1), metavar="N", help="spans and log records in memory at once (16384)"
    )
    bounds.add_argument(
        "--max-queue-bytes",
        type=whole(1),
        metavar="N",
        help="bytes of accepted requests in memory at once (64 MiB)",
    )
    bounds.add_argument(
        "--max-receiving-bytes",
        type=whole(1),
        metavar="N",
        help="bytes of bodies being received at once (64 MiB)",
    )
    bounds.add_argument(
        "--retry-after-seconds",
        type=seconds(),
        metavar="X",
        help="retry delay suggested to refused senders (1)",
    )
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
    send.add_argument(
        "--shutdown-timeout",
        type=seconds(),
        metavar="SECONDS",
        help="longest a stop spends forwarding; the rest stays in the spool (25)",
    )
    checks = parser.add_argument_group("checks")
    checks.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (minilm)"
    )
    checks.add_argument("--no-checks", action="store_true", help="pass-through: forward without evaluating")
    checks.add_argument(
        "--max-wait-millis", type=whole(1), metavar="N", help="longest a span waits for facts (30000)"
    )
    checks.add_argument("--events-forward", choices=("flagged", "all"), help="which verdicts become events")
    checks.add_argument(
        "--include-content",
        action="store_true",
        help="events also quote numbers from answers and tool results",
    )
    add_figures_arguments(checks)
