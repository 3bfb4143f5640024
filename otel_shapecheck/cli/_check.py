"""``otel-shapecheck check``: the checks over exported traces, through the live span processor."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.checks._builtin import EMBEDDERS, build_checks
from otel_shapecheck.cli._ci_reports import junit_xml, markdown_report
from otel_shapecheck.cli._embedding_options import add_embedding_cache_argument
from otel_shapecheck.cli._exit import EXIT_FLAGGED, EXIT_OK, UsageError
from otel_shapecheck.cli._figures_options import add_figures_arguments, require_figures_arguments
from otel_shapecheck.cli._report import json_report, run_entries, summary, unchecked_runs, verdict_rows
from otel_shapecheck.cli._terminal import (
    print_runs,
    print_summary,
    print_unchecked_runs,
    print_verdicts,
    reading_status,
    span_progress,
    stdout_console,
)
from otel_shapecheck.otlp._errors import STDIN
from otel_shapecheck.otlp._files import (
    DEFAULT_MAX_INPUT_BYTES,
    DEFAULT_MAX_LINE_BYTES,
    InputLimits,
    load_telemetry,
)
from otel_shapecheck.otlp._jsonl import write_spans_jsonl
from otel_shapecheck.pipeline._offline import check_spans


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    check = subparsers.add_parser(
        "check",
        help="run the checks offline over exported traces",
        description=(
            "Run the tool-choice, conformance and figures checks over exported traces: OTLP/JSON "
            '({"resourceSpans": ...}, one document or JSON Lines), a Tempo trace API response '
            '({"batches": ...}) or a Jaeger OTLP API response ({"result": {"resourceSpans": ...}}). '
            'OTLP/JSON logs ({"resourceLogs": ...}) given beside them supply the message content that '
            "instrumentations in event mode put into log events. "
            "Exit 0 when done, 1 when something was flagged under --fail-on flagged (or a run had no "
            "model call read under --fail-on unchecked), 2 on a usage error or unreadable input, 3 on "
            "an internal error."
        ),
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="an exported-traces file, or - for stdin")
    check.add_argument("--json", action="store_true", help="print the verdicts and counts as JSON")
    check.add_argument("--out", metavar="FILE", help="write the enriched traces as OTLP/JSON Lines")
    check.add_argument(
        "--junit",
        metavar="FILE",
        help="write a JUnit XML report: a test suite per agent run (or trace), a case per evaluated span",
    )
    check.add_argument(
        "--markdown", metavar="FILE", help="write the summary and the flagged verdicts as a Markdown table"
    )
    check.add_argument(
        "--embedder", choices=EMBEDDERS, default="minilm", help="embedder for tool choice (default: minilm)"
    )
    check.add_argument(
        "--fail-on",
        choices=("flagged", "unchecked", "never"),
        default="never",
        help=(
            "exit 1 when any span is flagged (flagged), when any run had no model call read "
            "(unchecked: coverage none), or only report (never; the default)"
        ),
    )
    check.add_argument(
        "--max-input-bytes",
        type=_whole_number,
        default=DEFAULT_MAX_INPUT_BYTES,
        metavar="N",
        help=f"largest input, after gzip inflation (default {DEFAULT_MAX_INPUT_BYTES})",
    )
    check.add_argument(
        "--max-line-bytes",
        type=_whole_number,
        default=DEFAULT_MAX_LINE_BYTES,
        metavar="N",
        help=f"longest line, i.e. one JSON Lines document (default {DEFAULT_MAX_LINE_BYTES})",
    )
    add_embedding_cache_argument(check)
    add_figures_arguments(check)
    check.set_defaults(run=run)


def _whole_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number ≥ 1")
    return value


def run(arguments: argparse.Namespace) -> int:
    paths: list[str] = arguments.paths
    if paths.count(STDIN) > 1:
        raise UsageError("standard input (-) can be read only once")
    out = _output_path("--out", arguments.out)
    junit = _output_path("--junit", arguments.junit)
    markdown = _output_path("--markdown", arguments.markdown)
    try:
        require_figures_arguments(arguments)
    except ValueError as error:
        raise UsageError(str(error)) from None
    limits = InputLimits(arguments.max_input_bytes, arguments.max_line_bytes)
    inputs = []
    for path in paths:
        with reading_status("<stdin>" if path == STDIN else path, _size(path)):
            inputs.append(load_telemetry(path, limits))
    spans = [span for telemetry in inputs for span in telemetry.spans]
    log_records = [record for telemetry in inputs for record in telemetry.log_records]
    checks = build_checks(
        arguments.embedder,
        figures_derivations=arguments.figures_derivations,
        figures_coincidence=arguments.figures_coincidence,
        embedding_cache=arguments.embedding_cache,
    )
    with span_progress(len(spans)) as progress:
        checked = check_spans(spans, checks, log_records=log_records, on_span_done=progress.advance)
    checked = _in_input_order(checked, spans)
    if out is not None:
        _write_traces(out, checked)
    if junit is not None:
        _write_report(junit, junit_xml(checked))
    if markdown is not None:
        _write_report(markdown, markdown_report(checked).encode("utf-8"))
    if arguments.json:
        json.dump(json_report(checked), sys.stdout, separators=(",", ":"))
        sys.stdout.write("\n")
    else:
        console = stdout_console()
        print_verdicts(console, verdict_rows(checked))
        print_runs(console, run_entries(checked))
        print_summary(console, summary(checked))
        print_unchecked_runs(console, unchecked_runs(checked))
        if out is not None:
            console.print(f"Enriched traces ({len(checked)} spans): {out}")
    if arguments.fail_on == "flagged" and summary(checked)["flagged"] > 0:
        return EXIT_FLAGGED
    if arguments.fail_on == "unchecked" and unchecked_runs(checked):
        return EXIT_FLAGGED
    return EXIT_OK


def _output_path(flag: str, value: str | None) -> Path | None:
    """An output file named on the command line, refused before any work if it cannot be written there."""
    if not value:
        return None
    path = Path(value)
    if path.is_dir() or not path.parent.is_dir():
        raise UsageError(f"{flag} {path}: not a file in an existing directory")
    return path


def _write_report(path: Path, content: bytes) -> None:
    try:
        path.write_bytes(content)
    except OSError as error:
        raise UsageError(f"{path}: cannot be written ({error.strerror or error})") from None


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
        raise UsageError(f"{path}: cannot be written ({error.strerror or error})") from None
