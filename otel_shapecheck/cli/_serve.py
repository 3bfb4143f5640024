"""The ``serve`` command: run the gateway, an OTLP service that checks what any agent sends and forwards it.

It listens for OTLP/gRPC and OTLP/HTTP (protobuf and JSON), evaluates GenAI spans with the same span
processor an in-process application registers, forwards every span (enriched where a check applied) and
every log record to ``--forward``, and flagged evaluation events to ``--events``. SIGTERM or SIGINT stops
it gracefully: new requests are refused as unavailable, requests in progress finish, and everything
accepted is evaluated and forwarded before it exits. Exit codes: 0 after a clean stop, 2 for a usage error
(the message names the flag and the problem).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from opentelemetry.sdk.resources import Resource

from otel_shapecheck.checks._builtin import EMBEDDERS, build_checks
from otel_shapecheck.cli._exit import EXIT_OK, EXIT_USAGE
from otel_shapecheck.gateway._gateway import Gateway, gateway_processor_options, gateway_queue_size
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.otlp._endpoints import PROTOCOLS, otlp_log_exporter, otlp_span_exporter
from otel_shapecheck.pipeline._events import EvaluationEventEmitter
from otel_shapecheck.pipeline._sinks import VerdictSink

DEFAULT_GRPC_ADDRESS = "127.0.0.1:4317"
DEFAULT_HTTP_ADDRESS = "127.0.0.1:4318"
GATEWAY_SERVICE_NAME = "otel-shapecheck-gateway"
_COMMAND = "otel-shapecheck serve"
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` parser to ``subparsers``, with ``run=run``."""
    parser = subparsers.add_parser(
        "serve",
        help="run the checks as an OTLP gateway for agents written in any language",
        description=(
            "Receive OTLP (gRPC, HTTP protobuf and JSON), run the tool-choice, conformance and figures "
            "checks on GenAI spans, and forward every span (enriched) and log record to --forward and "
            "flagged evaluation events to --events, over the protocol the OpenTelemetry SDK would use "
            "(--protocol, else the OTEL_EXPORTER_OTLP_*_PROTOCOL variables, else grpc; for gRPC "
            "http://HOST:PORT is plaintext). Without --grpc and --http both listen on "
            f"{DEFAULT_GRPC_ADDRESS} and {DEFAULT_HTTP_ADDRESS}. SIGTERM/SIGINT drain and stop. "
            "Exit 0 after a clean stop, 2 on a usage error."
        ),
    )
    listen = parser.add_argument_group("listening")
    listen.add_argument(
        "--grpc", metavar="HOST:PORT", help=f"OTLP/gRPC address (default {DEFAULT_GRPC_ADDRESS})"
    )
    listen.add_argument(
        "--http", metavar="HOST:PORT", help=f"OTLP/HTTP address (default {DEFAULT_HTTP_ADDRESS})"
    )
    listen.add_argument(
        "--max-request-bytes", type=int, metavar="N", help="largest request, decompressed (default 4 MiB)"
    )
    listen.add_argument(
        "--max-queue-size",
        type=int,
        metavar="N",
        help="spans and log records accepted and not yet exported; past it senders get 429 / "
        "RESOURCE_EXHAUSTED (default 16384)",
    )
    listen.add_argument(
        "--retry-after-seconds",
        type=float,
        metavar="X",
        help="retry delay suggested to refused senders (default 1)",
    )
    listen.add_argument(
        "--grpc-workers", type=int, default=4, metavar="N", help="gRPC handler threads (default 4)"
    )
    send = parser.add_argument_group("forwarding")
    send.add_argument(
        "--forward",
        metavar="URL",
        help="where spans and log records go (default: the OTEL_EXPORTER_OTLP_* variables)",
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
        type=float,
        metavar="X",
        help="timeout of each export (default: the exporters')",
    )
    checks = parser.add_argument_group("checks")
    checks.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (default: minilm)"
    )
    checks.add_argument(
        "--no-checks", action="store_true", help="pass-through: forward without evaluating (a baseline)"
    )
    checks.add_argument(
        "--max-wait-millis", type=int, metavar="N", help="longest a span waits for facts (default 30000)"
    )
    checks.add_argument(
        "--events-forward", choices=("flagged", "all"), help="which verdicts become events (default flagged)"
    )
    checks.add_argument(
        "--include-content",
        action="store_true",
        help="events also quote numbers from answers and tool results",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Start the gateway, serve until SIGTERM/SIGINT, drain, stop; returns the exit code."""
    try:
        service = _service(args)
    except ValueError as error:
        print(f"{_COMMAND}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    stop = threading.Event()
    previous = {number: signal.signal(number, _setter(stop)) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        listening = []
        if service.grpc_port:
            listening.append(f"grpc={_host(args.grpc, DEFAULT_GRPC_ADDRESS)}:{service.grpc_port}")
        if service.http_port:
            listening.append(f"http={_host(args.http, DEFAULT_HTTP_ADDRESS)}:{service.http_port}")
        print(f"{_COMMAND}: listening {' '.join(listening)}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        # From here a second signal ends the process at once, as it would without the gateway.
        for number, handler in previous.items():
            signal.signal(number, handler)
        print(f"{_COMMAND}: stopping: draining and forwarding what was accepted", file=sys.stderr, flush=True)
        service.stop()
    counts = service.gateway.counts()
    print(
        f"{_COMMAND}: stopped: {counts.spans_accepted} spans and "
        f"{counts.log_records_accepted} log records accepted, {counts.spans_exported} spans exported, "
        f"{counts.spans_export_failed} failed, "
        f"{counts.rejected} rejected, {counts.refused_full} requests refused while full",
        file=sys.stderr,
        flush=True,
    )
    return EXIT_OK


def _service(args: argparse.Namespace) -> GatewayService:
    """Build the exporters, the gateway and its listeners from the command line; bind the listeners."""
    grpc_address, http_address = args.grpc, args.http
    if grpc_address is None and http_address is None:
        grpc_address, http_address = DEFAULT_GRPC_ADDRESS, DEFAULT_HTTP_ADDRESS
    if args.forward is None and not any(os.environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES):
        raise ValueError(
            "--forward is required unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "
            "is set: the exporters' default, localhost:4317, is the gateway's own port"
        )
    if args.grpc_workers < 1:
        raise ValueError(f"--grpc-workers {args.grpc_workers}: must be a whole number ≥ 1")
    timeout = args.export_timeout_seconds
    capacity = gateway_queue_size(args.max_queue_size)
    protocol = args.protocol
    spans = otlp_span_exporter(args.forward, protocol=protocol, timeout=timeout, setting="--forward")
    logs = otlp_log_exporter(args.forward, protocol=protocol, timeout=timeout, setting="--forward")
    events: VerdictSink | None = None
    if not args.no_events and not args.no_checks:
        events = EvaluationEventEmitter(
            otlp_log_exporter(
                args.events or args.forward,
                protocol=protocol,
                timeout=timeout,
                setting="--events" if args.events else "--forward",
            ),
            resource=Resource.create({"service.name": GATEWAY_SERVICE_NAME}),
            forward=args.events_forward,
            include_content=True if args.include_content else None,
        )
    try:
        gateway = Gateway(
            spans,
            logs,
            events=events,
            checks=None if args.no_checks else build_checks(args.embedder),
            evaluate=not args.no_checks,
            max_queue_size=capacity,
            retry_after_seconds=args.retry_after_seconds,
            options=gateway_processor_options(capacity, max_wait_millis=args.max_wait_millis),
        )
    except ValueError:
        if events is not None:
            events.shutdown()
        raise
    try:
        return GatewayService(
            gateway,
            grpc_address=grpc_address,
            http_address=http_address,
            max_request_bytes=args.max_request_bytes,
            grpc_workers=args.grpc_workers,
        ).start()
    except ValueError:
        gateway.shutdown()
        raise


def _host(address: str | None, default: str) -> str:
    return (address or default).rpartition(":")[0]


def _setter(stop: threading.Event) -> Callable[[int, FrameType | None], None]:
    def handle(number: int, frame: FrameType | None) -> None:
        stop.set()

    return handle
