"""The ``serve`` command: run the gateway, an OTLP service that checks what any agent sends and forwards it.

It listens for OTLP/gRPC and OTLP/HTTP (protobuf and JSON), spools every accepted request before
acknowledging it, evaluates GenAI spans with the same span processor an in-process application
registers, and forwards every span (enriched where a check applied) and log record to ``--forward``, and
flagged evaluation events to ``--events``. SIGTERM or SIGINT stops it: the listeners close, requests in
progress finish, and what was accepted is evaluated and forwarded within
``--shutdown-timeout-seconds``; the rest stays in the spool for the next start. SIGHUP reloads
``--auth-token-file``.

Exit codes: 0 everything accepted was forwarded; 4 some is left in the spool (the next start forwards
it); 5 some was lost (``--no-spool``, given up, or a spool found damaged at start); 3 items unaccounted
for (a bug); 2 a usage error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from otel_shapecheck.cli._exit import EXIT_INTERNAL_ERROR, EXIT_LEFT_IN_SPOOL, EXIT_LOST, EXIT_OK, EXIT_USAGE
from otel_shapecheck.cli._serve_flags import DEFAULT_GRPC_ADDRESS, DEFAULT_HTTP_ADDRESS, add_flags

if TYPE_CHECKING:
    from otel_shapecheck.gateway._counts import GatewayCounts
    from otel_shapecheck.gateway._service import GatewayService

_COMMAND = "otel-shapecheck serve"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``serve`` parser to ``subparsers``, with ``run=run``."""
    parser = subparsers.add_parser(
        "serve",
        help="run the checks as an OTLP gateway for agents written in any language",
        description=(
            "Receive OTLP (gRPC, HTTP protobuf and JSON), spool each accepted request durably, run the "
            "tool-choice, conformance and figures checks on GenAI spans, and forward every span (enriched) "
            "and log record to --forward and flagged evaluation events to --events, over the protocol the "
            "OpenTelemetry SDK would use (--protocol, else the OTEL_EXPORTER_OTLP_*_PROTOCOL variables, "
            "else grpc; for gRPC http://HOST:PORT is plaintext). Without --grpc and --http both listen on "
            f"{DEFAULT_GRPC_ADDRESS} and {DEFAULT_HTTP_ADDRESS}. SIGTERM/SIGINT stop (what is not forwarded "
            "within --shutdown-timeout-seconds stays in the spool), SIGHUP reloads --auth-token-file. Exit 0 "
            "when everything was forwarded, 4 when some is left in the spool, 5 when some was lost, 3 when "
            "items are unaccounted for, 2 on a usage error."
        ),
    )
    add_flags(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Start the gateway, serve until SIGTERM/SIGINT, stop; returns the exit code."""
    from otel_shapecheck.cli._serve_build import build_service  # grpc and uvicorn load only to serve

    try:
        service = build_service(args)
    except ValueError as error:
        print(f"{_COMMAND}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    signals = Signals()
    handlers: dict[int, Callable[[int, FrameType | None], None]] = {
        signal.SIGTERM: signals.note_stop,
        signal.SIGINT: signals.note_stop,
        signal.SIGHUP: signals.note_reload,
    }
    previous = {number: signal.signal(number, handler) for number, handler in handlers.items()}
    try:
        print(f"{_COMMAND}: listening {_listening(args, service)}", flush=True)
        while not signals.stop:
            time.sleep(_SIGNAL_POLL_SECONDS)
            if signals.take_reload() and service.tokens is not None:
                service.tokens.reload()
    finally:
        # From here a second signal ends the process at once, as it would without the gateway.
        for number, handler in previous.items():
            signal.signal(number, handler)
        print(f"{_COMMAND}: stopping: forwarding what was accepted", file=sys.stderr, flush=True)
        counts = service.stop()  # within the gateway's shutdown timeout
    print(f"{_COMMAND}: stopped: {summary(counts)}", file=sys.stderr, flush=True)
    return exit_code(counts)


def summary(counts: GatewayCounts) -> str:
    """One line accounting for every item: what came in, and where each one is now."""
    left = counts.left_in_spool or 0
    where = "left in the spool" if counts.durable else "lost (no spool)"
    text = (
        f"{counts.spans_accepted} spans and {counts.log_records_accepted} log records accepted, "
        f"{counts.rejected} rejected, {counts.carried_over} carried over from the spool "
        f"({counts.in_doubt} possibly sent twice); {counts.forwarded} forwarded "
        f"({counts.spans_exported} spans), {left} {where}, {counts.dropped} given up; "
        f"{counts.refused_full} requests refused while full, {counts.export_retries} export retries"
    )
    if counts.tracestates_dropped:
        text += f"; {counts.tracestates_dropped} invalid tracestates dropped"
    if counts.spool_damage is not None:
        text += f"; {counts.spool_damage.describe()}"
    if counts.unaccounted:
        text += f"; {counts.unaccounted} UNACCOUNTED"
    return text


def exit_code(counts: GatewayCounts) -> int:
    """0 all forwarded, 4 some left in the spool, 5 some lost (a damaged spool too), 3 some unaccounted
    for."""
    if counts.unaccounted:
        return EXIT_INTERNAL_ERROR
    left = counts.left_in_spool or 0
    if counts.dropped or (left and not counts.durable) or counts.spool_damage is not None:
        return EXIT_LOST
    return EXIT_LEFT_IN_SPOOL if left else EXIT_OK


def _listening(args: argparse.Namespace, service: GatewayService) -> str:
    listening = []
    if service.grpc_port:
        listening.append(f"grpc={_host(args.grpc, DEFAULT_GRPC_ADDRESS)}:{service.grpc_port}")
    if service.http_port:
        listening.append(f"http={_host(args.http, DEFAULT_HTTP_ADDRESS)}:{service.http_port}")
    details = [
        "tls" if service.tls is not None else "plaintext",
        f"{len(service.tokens)} tokens" if service.tokens is not None else "no tokens",
        f"spool {service.gateway.spool.description}",
    ]
    return f"{' '.join(listening)} ({', '.join(details)}; pid {os.getpid()})"


def _host(address: str | None, default: str) -> str:
    return (address or default).rpartition(":")[0]


_SIGNAL_POLL_SECONDS = 0.1
"""How often the serving loop looks at the signals noted (a stop starts within this)."""


class Signals:
    """What the signal handlers noted, as plain flags the serving loop polls.

    A handler runs on the main thread between two bytecodes, possibly while that thread holds a lock
    inside the loop's own wait: ``threading.Event.set()`` there takes the event's condition lock, which
    the interrupted ``Event.wait()`` may hold at that moment, and the process then never stops (a
    SIGTERM that hung ``serve`` past its shutdown timeout). Assigning an attribute takes no lock.
    """

    __slots__ = ("_reload", "stop")

    def __init__(self) -> None:
        self.stop = False
        self._reload = False

    def note_stop(self, number: int, frame: FrameType | None) -> None:
        """SIGTERM or SIGINT: stop serving."""
        self.stop = True

    def note_reload(self, number: int, frame: FrameType | None) -> None:
        """SIGHUP: read the token file again."""
        self._reload = True

    def take_reload(self) -> bool:
        """Whether a reload was noted since the last call (then it is cleared)."""
        if not self._reload:
            return False
        self._reload = False  # a SIGHUP noted just before this is served by the reload about to run
        return True
