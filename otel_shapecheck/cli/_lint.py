"""The ``lint-tools`` command: lint a tool catalog file, for people and for CI gates.

Exit codes: 0 the catalog passed, 1 the gate failed, 2 a usage error or an unreadable catalog (the
message names the file and what is wrong). Without ``--threshold`` similarity is report-only: pairs are
classified at the embedder's default threshold and listed, but only structural errors (and, under
``--strict``, warnings) fail the gate; ``--threshold`` makes confusable pairs fail it too.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import TextIO

from otel_shapecheck.catalog._lint import CatalogLintReport, SimilarPair, coerce_catalog, lint_catalog
from otel_shapecheck.cli._exit import EXIT_OK, EXIT_USAGE
from otel_shapecheck.embedding._embedders import Embedder, HashingEmbedder, MiniLMEmbedder
from otel_shapecheck.environment_variables import OTEL_SHAPECHECK_EMBEDDER_THREADS

EXIT_PASSED = EXIT_OK
EXIT_GATE_FAILED = 1
EMBEDDER_CHOICES = ("minilm", "hashing")
_COMMAND = "otel-shapecheck lint-tools"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``lint-tools`` parser to ``subparsers``, with ``func=run``."""
    parser = subparsers.add_parser(
        "lint-tools",
        help="lint a tool catalog for confusable tools and weak descriptions",
        description=(
            "Lint a tool catalog: pairs of tools a model may confuse (cosine of name + description "
            "embeddings) and four structural rules. CATALOG.json is a plain [{name, description, "
            'inputSchema}] list, an MCP {"tools": [...]} result, OpenAI [{type: "function", function: '
            "{...}}] or Anthropic [{name, description, input_schema}]. Exit 0 pass, 1 gate failed, 2 usage "
            "error or unreadable catalog."
        ),
    )
    parser.add_argument("catalog", metavar="CATALOG.json", help="the tool catalog file")
    parser.add_argument(
        "--threshold",
        type=float,
        metavar="X",
        help="fail the gate on pairs at or above this cosine (without it similarity is report-only)",
    )
    parser.add_argument(
        "--watch-band", type=float, metavar="X", help="advisory band below the threshold (default 0.05)"
    )
    parser.add_argument("--strict", action="store_true", help="structural warnings fail the gate too")
    parser.add_argument("--json", action="store_true", help="print the full report as JSON")
    parser.add_argument(
        "--embedder",
        choices=EMBEDDER_CHOICES,
        default="minilm",
        help="embedder for similarity (default: minilm)",
    )
    parser.add_argument("--top", type=int, default=10, metavar="N", help="closest pairs to list (default 10)")
    parser.set_defaults(func=run, run=run)


def run(args: argparse.Namespace) -> int:
    """Lint ``args.catalog`` and print the report; returns the exit code."""
    try:
        tools = coerce_catalog(_read_json(Path(args.catalog)))
        _check_number("--threshold", args.threshold)
        _check_number("--watch-band", args.watch_band)
        report = lint_catalog(
            tools,
            embedder=_embedder(args.embedder),
            threshold=args.threshold,
            watch_band=args.watch_band,
            fail_on="warn" if args.strict else "error",
            gate_on_similarity=args.threshold is not None,
            top_pairs=args.top,
        )
    except ValueError as error:
        print(f"{_COMMAND}: {args.catalog}: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        print_report(report, sys.stdout)
    return EXIT_PASSED if report.ok else EXIT_GATE_FAILED


def _read_json(path: Path) -> object:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"cannot read the file ({error.__class__.__name__}: {error})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON ({error})") from None


def _check_number(flag: str, value: float | None) -> None:
    if value is not None and not math.isfinite(value):
        raise ValueError(f"{flag} must be a finite number, not {value!r}")


def _embedder(name: str) -> Embedder:
    if name == "hashing":
        return HashingEmbedder()
    if name == "minilm":
        # A one-off command may use every core for embedding, unless the environment says otherwise.
        threads = None if os.environ.get(OTEL_SHAPECHECK_EMBEDDER_THREADS, "").strip() else os.cpu_count()
        return MiniLMEmbedder(intra_op_num_threads=threads)
    raise ValueError(f"--embedder must be one of {', '.join(EMBEDDER_CHOICES)}, not {name!r}")


def print_report(report: CatalogLintReport, out: TextIO) -> None:
    """The report as text: similarity verdicts, the closest pairs, structural findings, then the result."""
    out.write(f"{report.tool_count} tools")
    out.write(f", similarity by {report.embedder}\n" if report.analyzed else ", similarity not analysed\n")
    if report.analyzed:
        mode = "gates" if report.similarity_gated else "is report-only (pass --threshold to gate)"
        out.write(
            f"similarity {mode}: confusable at >= {report.threshold:g}, "
            f"watch within {report.watch_band:g} below\n"
        )
        _write_pairs(out, "confusable", report.confusable, with_hint=True)
        _write_pairs(out, "watch", report.watch, with_hint=True)
        _write_pairs(out, "closest pairs", report.ranked, with_hint=False)
    out.write(f"\nstructural findings: {report.errors} errors, {report.warnings} warnings\n")
    for finding in report.structural:
        where = f"{finding.tool}.{finding.param}" if finding.param else finding.tool
        out.write(f"  {finding.severity:<5}  {finding.rule}  {where}: {finding.message}\n")
        if finding.suggestion:
            out.write(f"         suggestion: {finding.suggestion}\n")
    out.write(f"\n{'PASS' if report.ok else 'FAIL'}\n")


def _write_pairs(out: TextIO, title: str, pairs: tuple[SimilarPair, ...], *, with_hint: bool) -> None:
    out.write(f"\n{title}: {len(pairs)}\n")
    for pair in pairs:
        out.write(f"  {pair.similarity:.3f}  {pair.a} <-> {pair.b}\n")
        if with_hint:
            out.write(f"         hint: {pair.hint}\n")
