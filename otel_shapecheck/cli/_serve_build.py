"""Building ``serve``'s gateway from its flags: exporters, spool, security, the gateway, its listeners."""

from __future__ import annotations

import argparse
import os

from opentelemetry.sdk.resources import Resource

from otel_shapecheck._settings_table import GATEWAY
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.cli._figures_options import require_figures_arguments
from otel_shapecheck.cli._serve_flags import DEFAULT_GRPC_ADDRESS, DEFAULT_HTTP_ADDRESS
from otel_shapecheck.cli._setting_flags import setting_arguments
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._options import GatewayOptions
from otel_shapecheck.gateway._security import TLSSettings, TokenFile
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.gateway._settings import spool_directory
from otel_shapecheck.gateway._spool import MemorySpool, SqliteSpool
from otel_shapecheck.otlp._endpoints import otlp_log_exporter, otlp_span_exporter
from otel_shapecheck.outputs._events import EvaluationEventEmitter
from otel_shapecheck.outputs._sinks import VerdictSink

GATEWAY_SERVICE_NAME = "otel-shapecheck-gateway"
_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def build_service(args: argparse.Namespace) -> GatewayService:
    """The exporters, the spool, the gateway and its listeners from the command line, listening.

    Raises:
        ValueError: a bad flag or value, a spool in use, an address that cannot be bound (the message
            names the flag).
    """
    grpc_address, http_address = args.grpc, args.http
    if grpc_address is None and http_address is None:
        grpc_address, http_address = DEFAULT_GRPC_ADDRESS, DEFAULT_HTTP_ADDRESS
    if args.forward is None and not any(os.environ.get(name, "").strip() for name in _ENDPOINT_VARIABLES):
        raise ValueError(
            "--forward is required unless OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "
            "is set: the exporters' default, localhost:4317, is the gateway's own port"
        )
    require_figures_arguments(args)
    if args.no_spool and args.spool_dir is not None:
        raise ValueError("--no-spool and --spool-dir exclude each other")
    tls = TLSSettings.of(args.tls_cert, args.tls_key, args.tls_client_ca)
    tokens = TokenFile(args.auth_token_file) if args.auth_token_file is not None else None
    options = GatewayOptions(**setting_arguments(args, GATEWAY))
    largest = options.max_request_bytes
    timeout, protocol = args.export_timeout_seconds, args.protocol
    spans = otlp_span_exporter(args.forward, protocol=protocol, timeout=timeout, setting="--forward")
    logs = otlp_log_exporter(args.forward, protocol=protocol, timeout=timeout, setting="--forward")
    events = _events(args, protocol, timeout)
    durable = not args.no_spool
    limit = options.spool_bytes(durable=durable)
    if limit < largest:
        raise ValueError(
            f"--spool-max-bytes {limit} is smaller than one request (--max-request-bytes {largest})"
        )
    spool = (
        SqliteSpool(
            spool_directory(args.spool_dir),
            limit,
            fsync=args.spool_fsync,
            flush_seconds=options.spool_flush_seconds,
        )
        if durable
        else None
    )
    try:
        gateway = Gateway(
            spans,
            logs,
            events=events,
            checks=None
            if args.no_checks
            else build_checks(
                args.embedder,
                figures_derivations=args.figures_derivations,
                figures_coincidence=args.figures_coincidence,
                embedding_cache=args.embedding_cache,
            ),
            evaluate=not args.no_checks,
            spool=spool if spool is not None else MemorySpool(limit),
            options=options,
            processor_options=options.processor_options(max_wait_millis=args.max_wait_millis),
            give_up_after_seconds=args.give_up_after_seconds,
        )
    except ValueError:
        if events is not None:
            events.shutdown()
        if spool is not None:
            spool.close()
        raise
    try:
        return GatewayService(
            gateway,
            grpc_address=grpc_address,
            http_address=http_address,
            tls=tls,
            tokens=tokens,
            grpc_workers=args.grpc_workers,
            http_workers=args.http_workers,
            request_timeout_seconds=args.request_timeout_seconds,
            idle_timeout_seconds=args.idle_timeout_seconds,
            max_connections=args.max_connections,
            tls_handshake_timeout_seconds=args.tls_handshake_timeout_seconds,
        ).start()
    except ValueError:
        gateway.shutdown(0)
        raise


def _events(args: argparse.Namespace, protocol: str | None, timeout: float | None) -> VerdictSink | None:
    if args.no_events or args.no_checks:
        return None
    return EvaluationEventEmitter(
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
