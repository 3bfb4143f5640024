"""``otel-shapecheck demo``: a scripted agent on loopback, judged live (needs the ``demo`` extra)."""

from __future__ import annotations

import argparse
from pathlib import Path

from otel_shapecheck.checks._builtin import EMBEDDERS
from otel_shapecheck.cli._exit import UsageError
from otel_shapecheck.otlp._endpoints import PROTOCOLS


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = subparsers.add_parser(
        "demo",
        help="run a scripted agent on loopback and show the verdicts",
        description=(
            "Run a scripted agent through the real openai client and its OpenTelemetry instrumentation "
            "against a scripted server on 127.0.0.1 (no network, no API key), with the checks attached; "
            "print the verdicts and write the enriched traces and flagged events as OTLP/JSON Lines. "
            "Exit 0 when done, 1 when the telemetry could not be delivered to --otlp-endpoint, 2 on a "
            "usage error."
        ),
    )
    demo.add_argument(
        "--out",
        metavar="DIR",
        default="shapecheck-demo",
        help="directory for traces.jsonl and events.jsonl (default: ./shapecheck-demo/)",
    )
    demo.add_argument(
        "--otlp-endpoint",
        metavar="URL",
        help="export to this OTLP endpoint instead of files, over --protocol (http://HOST:4317: plaintext "
        "gRPC; with --protocol http/protobuf, http://HOST:4318 for OTLP/HTTP)",
    )
    demo.add_argument(
        "--protocol",
        choices=PROTOCOLS,
        help="OTLP protocol for --otlp-endpoint (default: OTEL_EXPORTER_OTLP_{TRACES,LOGS}_PROTOCOL, then "
        "OTEL_EXPORTER_OTLP_PROTOCOL, then grpc, as the OpenTelemetry SDK decides)",
    )
    demo.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (default: minilm)"
    )
    demo.set_defaults(run=run)


def run(arguments: argparse.Namespace) -> int:
    try:
        from otel_shapecheck.cli.demo._demo import demo_output, run_demo
    except ImportError as error:
        raise UsageError(
            f"the demo needs the 'demo' extra (pip install 'otel-shapecheck[demo]'): {error}"
        ) from None
    try:
        output = demo_output(Path(arguments.out), arguments.otlp_endpoint, arguments.protocol)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return run_demo(output, embedder=arguments.embedder)
