"""The ``otel-shapecheck`` command: ``check`` exported traces offline, ``demo``, ``lint-tools``, ``serve``.

Exit codes: 0 done (and, under ``--fail-on flagged``, nothing flagged), 1 something flagged under
``--fail-on flagged``, 2 a usage error or unreadable input (the message names the input and the problem),
3 an internal error (a bug: the traceback goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._version import __version__
from otel_shapecheck.checks._builtin import EMBEDDERS, build_checks
from otel_shapecheck.cli import _lint as _lint_command
from otel_shapecheck.cli import _serve as _serve_command
from otel_shapecheck.cli._figures_options import add_figures_arguments, require_figures_arguments
from otel_shapecheck.cli._report import json_report, summary, verdict_rows
from otel_shapecheck.cli._terminal import (
    print_summary,
    print_verdicts,
    reading_status,
    span_progress,
    stdout_console,
)
from otel_shapecheck.otlp._json import STDIN, UnreadableTraceFile, load_telemetry, write_spans_jsonl
from otel_shapecheck.pipeline._offline import check_spans

EXIT_OK = 0
EXIT_FLAGGED = 1
EXIT_USAGE = 2
EXIT_INTERNAL_ERROR = 3

_PROG = "otel-shapecheck"


class _UsageError(Exception):
    """A problem with the command line or its inputs; reported on stderr with exit code 2."""


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = _parser()
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as exit_request:  # argparse exits on --help, --version and usage errors
        return exit_request.code if isinstance(exit_request.code, int) else EXIT_USAGE
    try:
        code: int = arguments.run(arguments)
    except (_UsageError, UnreadableTraceFile) as error:
        print(f"{_PROG} {arguments.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a crash must not read as "flagged" (1) to a CI job
        traceback.print_exc()
        print(f"{_PROG} {arguments.command}: internal error (exit {EXIT_INTERNAL_ERROR})", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_check_command(subparsers)
    _add_demo_command(subparsers)
    _lint_command.register(subparsers)
    _serve_command.register(subparsers)
    return parser


def _add_check_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = subparsers.add_parser(
        "check",
        help="run the checks offline over exported traces",
        description=(
            "Run the tool-choice, conformance and figures checks over exported traces: OTLP/JSON "
            '({"resourceSpans": ...}, one document or JSON Lines), a Tempo trace API response '
            '({"batches": ...}) or a Jaeger OTLP API response ({"result": {"resourceSpans": ...}}). '
            'OTLP/JSON logs ({"resourceLogs": ...}) given beside them supply the message content that '
            "instrumentations in event mode put into log events. "
            "Exit 0 when done, 1 when something was flagged under --fail-on flagged, 2 on a usage "
            "error or unreadable input, 3 on an internal error."
        ),
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="an exported-traces file, or - for stdin")
    check.add_argument("--json", action="store_true", help="print the verdicts and counts as JSON")
    check.add_argument("--out", metavar="FILE", help="write the enriched traces as OTLP/JSON Lines")
    check.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (default: minilm)"
    )
    check.add_argument(
        "--fail-on",
        choices=("flagged", "never"),
        default="never",
        help="exit 1 when any span is flagged (flagged), or only report (never; the default)",
    )
    add_figures_arguments(check)
    check.set_defaults(run=_run_check)


def _add_demo_command(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        help="export to this OTLP endpoint instead of files (http://host:4318 for HTTP, host:4317 for gRPC)",
    )
    demo.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (default: minilm)"
    )
    demo.set_defaults(run=_run_demo)


def _run_check(arguments: argparse.Namespace) -> int:
    paths: list[str] = arguments.paths
    if paths.count(STDIN) > 1:
        raise _UsageError("standard input (-) can be read only once")
    out = Path(arguments.out) if arguments.out else None
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        raise _UsageError(f"--out {out}: not a file in an existing directory")
    inputs = []
    for path in paths:
        with reading_status("<stdin>" if path == STDIN else path, _size(path)):
            inputs.append(load_telemetry(path))
    spans = [span for telemetry in inputs for span in telemetry.spans]
    log_records = [record for telemetry in inputs for record in telemetry.log_records]
    try:
        require_figures_arguments(arguments)
    except ValueError as error:
        raise _UsageError(str(error)) from None
    checks = build_checks(
        arguments.embedder,
        figures_derivations=arguments.figures_derivations,
        figures_coincidence=arguments.figures_coincidence,
    )
    with span_progress(len(spans)) as progress:
        checked = check_spans(spans, checks, log_records=log_records, on_span_done=progress.advance)
    checked = _in_input_order(checked, spans)
    if out is not None:
        _write_traces(out, checked)
    if arguments.json:
        json.dump(json_report(checked), sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        console = stdout_console()
        print_verdicts(console, verdict_rows(checked))
        print_summary(console, summary(checked))
        if out is not None:
            console.print(f"Enriched traces ({len(checked)} spans): {out}")
    flagged = summary(checked)["flagged"] > 0
    return EXIT_FLAGGED if arguments.fail_on == "flagged" and flagged else EXIT_OK


def _run_demo(arguments: argparse.Namespace) -> int:
    try:
        from otel_shapecheck.cli.demo._demo import demo_output, run_demo
    except ImportError as error:
        raise _UsageError(
            f"the demo needs the 'demo' extra (pip install 'otel-shapecheck[demo]'): {error}"
        ) from None
    try:
        output = demo_output(Path(arguments.out), arguments.otlp_endpoint)
    except ValueError as error:
        raise _UsageError(str(error)) from None
    return run_demo(output, embedder=arguments.embedder)


def _size(path: str) -> int | None:
    """The file's size in bytes: ``None`` for stdin, 0 when it cannot be read (the loader then says why)."""
    if path == STDIN:
        return None
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _in_input_order(checked: Sequence[ReadableSpan], original: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """The checked spans in the order the inputs listed them (the processor forwards them as they settle)."""
    position = {_span_key(span): index for index, span in enumerate(original)}
    return sorted(checked, key=lambda span: position.get(_span_key(span), len(position)))


def _span_key(span: ReadableSpan) -> tuple[int, int]:
    return (span.context.trace_id, span.context.span_id) if span.context else (0, 0)


def _write_traces(path: Path, spans: Sequence[ReadableSpan]) -> None:
    try:
        with path.open("w", encoding="utf-8") as stream:
            write_spans_jsonl(spans, stream)
    except OSError as error:
        raise _UsageError(f"{path}: cannot be written ({error.strerror or error})") from None
