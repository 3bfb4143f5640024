"""``check --junit`` and ``check --markdown``: the verdicts in the formats CI systems already render.

JUnit XML: one ``<testsuite>`` per agent run (the nearest ancestor carrying a run summary) or, for
spans in no run, per trace; one ``<testcase>`` per evaluated span. A flagged span is a ``<failure>``
whose message is its flagged verdicts' explanations; a span whose every verdict was skipped is
``<skipped>`` with the reasons. Markdown: the summary counts and the flagged verdicts as a table, for a
CI job summary (GitHub's ``$GITHUB_STEP_SUMMARY``, GitLab's report artifacts).

Both are built from the enriched spans alone, like the terminal table and ``--json``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import format_span_id

from otel_shapecheck.cli._report import VerdictRow, is_run, summary, verdict_rows

_UNGROUPED = "(no agent run)"


@dataclass
class _Suite:
    """The test cases of one run (or one trace without a run)."""

    name: str
    trace_id: str
    run_span_id: str | None
    cases: dict[str, list[VerdictRow]] = field(default_factory=dict)
    """Span id to the span's verdict rows, in the order the spans were read."""


def junit_xml(spans: Sequence[ReadableSpan]) -> bytes:
    """The JUnit XML report of checked spans (UTF-8, with an XML declaration)."""
    suites = _suites(spans)
    root = ElementTree.Element("testsuites", name="otel-shapecheck")
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for suite in suites:
        element = ElementTree.SubElement(root, "testsuite", name=suite.name)
        properties = ElementTree.SubElement(element, "properties")
        ElementTree.SubElement(properties, "property", name="trace_id", value=suite.trace_id)
        if suite.run_span_id is not None:
            ElementTree.SubElement(properties, "property", name="run_span_id", value=suite.run_span_id)
        counts = {"tests": 0, "failures": 0, "skipped": 0}
        for span_id, rows in suite.cases.items():
            counts["tests"] += 1
            case = ElementTree.SubElement(
                element,
                "testcase",
                name=f"{rows[0].span_name} {span_id}",
                classname=suite.name,
            )
            flagged = [row for row in rows if row.flagged]
            if flagged:
                counts["failures"] += 1
                failure = ElementTree.SubElement(
                    case,
                    "failure",
                    message="; ".join(f"{row.check}: {row.label}" for row in flagged),
                    type="flagged",
                )
                failure.text = "\n".join(_verdict_text(row) for row in flagged)
            elif all(row.skipped for row in rows):
                counts["skipped"] += 1
                ElementTree.SubElement(
                    case, "skipped", message="; ".join(f"{row.check}: {row.skipped}" for row in rows)
                )
            output = ElementTree.SubElement(case, "system-out")
            output.text = "\n".join(_verdict_text(row) for row in rows)
        for key, value in counts.items():
            element.set(key, str(value))
            totals[key] += value
        element.set("errors", "0")
    for key, value in totals.items():
        root.set(key, str(value))
    root.set("errors", "0")
    ElementTree.indent(root)
    document: bytes = ElementTree.tostring(root, encoding="utf-8", xml_declaration=True)
    return document


def markdown_report(spans: Sequence[ReadableSpan]) -> str:
    """The summary and the flagged verdicts as Markdown (a heading, a counts list, a table)."""
    counts = summary(spans)
    rows = [row for row in verdict_rows(spans) if row.flagged]
    lines = [
        "## otel-shapecheck",
        "",
        f"- **{counts['spans']}** spans, **{counts['evaluated']}** evaluated, "
        f"**{counts['flagged']}** flagged",
        _tool_choice_line(counts["tool_choice"]),
        _figures_line(counts["figures"]),
        _conformance_line(counts["conformance"]),
        _runs_line(counts["runs"]),
        "",
    ]
    if not rows:
        lines.append("Nothing flagged.")
        return "\n".join(lines) + "\n"
    lines += [
        "| span | check | verdict | score | explanation |",
        "| --- | --- | --- | ---: | --- |",
    ]
    for row in rows:
        where = f"`{row.span_name}`" + (f" in `{row.root_name}`" if row.root_name else "")
        score = "" if row.score is None else f"{row.score:.3f}"
        explanation = row.explanation + (f" ({row.detail})" if row.detail else "")
        cells = (f"{where} {row.span_id}", row.check, row.label, score, explanation)
        lines.append("| " + " | ".join(_markdown_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _suites(spans: Sequence[ReadableSpan]) -> list[_Suite]:
    """Evaluated spans grouped by their nearest run ancestor (or their trace), in reading order."""
    by_id = {(span.context.trace_id, span.context.span_id): span for span in spans if span.context}
    suites: dict[tuple[str, str | None], _Suite] = {}
    for row in verdict_rows(spans):
        run = _nearest_run(by_id, row)
        key: tuple[str, str | None]
        if run is not None:
            key = (row.trace_id, format_span_id(run.context.span_id if run.context else 0))
            name = run.name
        else:
            key = (row.trace_id, None)
            name = row.root_name or _UNGROUPED
        suite = suites.get(key)
        if suite is None:
            suite = suites[key] = _Suite(f"{name} {row.trace_id}", row.trace_id, key[1])
        suite.cases.setdefault(row.span_id, []).append(row)
    return list(suites.values())


def _nearest_run(by_id: dict[tuple[int, int], ReadableSpan], row: VerdictRow) -> ReadableSpan | None:
    """The span itself or its nearest ancestor that carries a run summary, within the input."""
    trace_id = int(row.trace_id, 16)
    span = by_id.get((trace_id, int(row.span_id, 16)))
    seen: set[int] = set()
    while span is not None and span.context is not None and span.context.span_id not in seen:
        if is_run(span):
            return span
        seen.add(span.context.span_id)
        parent = span.parent
        span = by_id.get((trace_id, parent.span_id)) if parent is not None else None
    return None


def _verdict_text(row: VerdictRow) -> str:
    score = "" if row.score is None else f" ({row.score:.3f})"
    detail = f" [{row.detail}]" if row.detail else ""
    return f"{row.check}: {row.label}{score}: {row.explanation}{detail}"


def _markdown_cell(text: str) -> str:
    """A table cell: pipes escaped, line breaks as spaces (a cell cannot span lines)."""
    return " ".join(text.replace("|", "\\|").split())


def _tool_choice_line(counts: dict[str, Any]) -> str:
    return (
        f"- tool choice: {counts['llm_calls_with_tools']} calls with tools, {counts['scored']} scored, "
        f"{counts['narrow']} narrow, {counts['proxy_disagreement']} proxy disagreement, "
        f"{counts['skipped']} skipped"
    )


def _figures_line(counts: dict[str, Any]) -> str:
    return (
        f"- figures: {counts['answers']} answers, {counts['checked']} figures checked, "
        f"{counts['unsupported']} unsupported, {counts['skipped']} skipped"
    )


def _conformance_line(counts: dict[str, Any]) -> str:
    return (
        f"- conformance: {counts['analysts']} analysts, {counts['collapsed']} collapsed, "
        f"{counts['recovered']} recovered"
    )


def _runs_line(counts: dict[str, Any]) -> str:
    return f"- runs: {counts['runs']}, {counts['flagged']} flagged, {counts['incomplete']} incomplete"
