"""The report of a run, read back from enriched spans: what each evaluated span got, and the counts.

Both the offline ``check`` command and the demo build their output from the enriched spans alone (the
public attribute contract and the ``gen_ai.evaluation.result`` span events), so what they print is
exactly what a trace backend would show. Agent runs are read from their agent spans' run summaries
(``shapecheck.run.*``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.util.types import AnyValue

from otel_shapecheck._attributes import (
    CONFORMANCE_ANALYST_ID,
    CONFORMANCE_COLLAPSED,
    CONFORMANCE_RECOVERED,
    COVERAGE_FULL,
    COVERAGE_NONE,
    COVERAGE_PARTIAL,
    DUPLICATE_OF,
    EVALUATION_EXPLANATION,
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    FIGURES_CHECKED,
    FIGURES_COMPUTED,
    FIGURES_DERIVATIONS,
    FIGURES_INFERRED,
    FIGURES_SKIPPED,
    FIGURES_UNSUPPORTED,
    FIGURES_UNSUPPORTED_COUNT,
    FLAGGED,
    FLAGS,
    RUN_COVERAGE,
    RUN_EVALUATED,
    RUN_FLAGGED,
    RUN_INCOMPLETE,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_NARROW,
    TOOL_CHOICE_PROXY_DISAGREEMENT,
    TOOL_CHOICE_SKIPPED,
    TOOL_CHOICE_TOP,
)
from otel_shapecheck.otlp._ids import span_id_hex, trace_id_hex
from otel_shapecheck.outputs._enrich import is_verdict_event
from otel_shapecheck.readers._classify import OTHER, classify_span

REPORT_VERSION = 1
"""The version of the ``check --json`` document; it changes only when the shape does."""

_NAMESPACE = "shapecheck."
_TOOL_CHOICE_PREFIX = "shapecheck.tool_choice."
_CONFORMANCE_PREFIX = "shapecheck.conformance."
_RUN_PREFIX = "shapecheck.run."


@dataclass(frozen=True)
class VerdictRow:
    """One verdict of one span, as the summary table shows it."""

    trace_id: str
    span_id: str
    span_name: str
    check: str
    label: str
    score: float | None
    explanation: str
    flagged: bool
    detail: str = ""
    """What the span's attributes add to the explanation: chosen and top tools, unsupported figures."""
    skipped: str | None = None
    """Why tool choice was not scored (``shapecheck.tool_choice.skipped``), for a tool-choice row."""
    root_name: str = ""
    """The name of the trace's root span (e.g. ``invoke_agent storage-ops``), when the input holds it."""


def evaluated(span: ReadableSpan) -> bool:
    """Whether the span received a verdict (every evaluated span carries ``shapecheck.flagged``).

    A run's agent span carries ``shapecheck.flagged`` too, for its run: it is a run, not a verdict.
    """
    attributes = span.attributes or {}
    return FLAGGED in attributes and RUN_EVALUATED not in attributes


def is_run(span: ReadableSpan) -> bool:
    """Whether the span is a run's agent span with its run summary."""
    return RUN_EVALUATED in (span.attributes or {})


def verdict_rows(spans: Sequence[ReadableSpan]) -> list[VerdictRow]:
    """One row per verdict event on every evaluated span, in span order."""
    rows: list[VerdictRow] = []
    roots = _root_names(spans)
    for span in spans:
        if not evaluated(span):
            continue
        flags = [str(flag) for flag in _sequence((span.attributes or {}).get(FLAGS))]
        for event in span.events:
            attributes = event.attributes or {}
            if not is_verdict_event(event.name, attributes):
                continue
            check = str(attributes[EVALUATION_NAME]).removeprefix(_NAMESPACE)
            score = attributes.get(EVALUATION_SCORE_VALUE)
            rows.append(
                VerdictRow(
                    trace_id=_hex_trace_id(span),
                    span_id=_hex_span_id(span),
                    span_name=span.name,
                    check=check,
                    label=str(attributes.get(EVALUATION_SCORE_LABEL, "")),
                    score=float(score) if isinstance(score, (int, float)) else None,
                    explanation=str(attributes.get(EVALUATION_EXPLANATION, "")),
                    flagged=any(flag.startswith(check + ".") for flag in flags),
                    detail=_detail(check, span.attributes or {}),
                    skipped=_skip_reason(check, span.attributes or {}),
                    root_name=roots.get(span.context.trace_id, "") if span.context else "",
                )
            )
    return rows


def _root_names(spans: Sequence[ReadableSpan]) -> dict[int, str]:
    """Trace id to the name of its local root span (no parent, or a parent from another process).

    A parent marked remote that is among the spans is this process's own (a re-attached context).
    """
    present = {(span.context.trace_id, span.context.span_id) for span in spans if span.context is not None}
    return {
        span.context.trace_id: span.name
        for span in spans
        if span.context is not None
        and (
            span.parent is None
            or (span.parent.is_remote and (span.parent.trace_id, span.parent.span_id) not in present)
        )
    }


def _skip_reason(check: str, attributes: Mapping[str, AnyValue]) -> str | None:
    key = {"tool_choice": TOOL_CHOICE_SKIPPED, "figures": FIGURES_SKIPPED}.get(check)
    reason = attributes.get(key) if key else None
    return reason if isinstance(reason, str) else None


def _detail(check: str, attributes: Mapping[str, AnyValue]) -> str:
    if check == "tool_choice":
        chosen = ", ".join(str(name) for name in _sequence(attributes.get(TOOL_CHOICE_CHOSEN)))
        top = attributes.get(TOOL_CHOICE_TOP)
        return f"chosen: {chosen or '-'}; top: {top}" if top else (f"chosen: {chosen}" if chosen else "")
    if check == "figures":
        parts = [f"unsupported: {', '.join(map(str, _sequence(attributes.get(FIGURES_UNSUPPORTED))))}"]
        parts += [str(text) for text in _sequence(attributes.get(FIGURES_DERIVATIONS))]
        return "; ".join(parts[1:] if parts[0] == "unsupported: " else parts)
    return ""


def json_report(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The ``check --json`` document: each evaluated span with its verdict attributes and events, each
    run with its summary, and the counts."""
    return {
        "version": REPORT_VERSION,
        "spans": [_span_entry(span) for span in spans if evaluated(span)],
        "runs": run_entries(spans),
        "summary": summary(spans),
    }


def run_entries(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Each run's agent span: trace and span id, name, and its ``shapecheck.run.*`` counts by short name."""
    return [_run_entry(span) for span in spans if is_run(span)]


def _run_entry(span: ReadableSpan) -> dict[str, Any]:
    attributes = span.attributes or {}
    return {
        "trace_id": _hex_trace_id(span),
        "span_id": _hex_span_id(span),
        "name": span.name,
        "flagged": attributes.get(FLAGGED) is True,
        "summary": {
            key.removeprefix(_RUN_PREFIX): _json_value(value)
            for key, value in attributes.items()
            if key.startswith(_RUN_PREFIX)
        },
    }


def summary(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """The counts of a run: spans read, evaluated and flagged, and per-check tallies."""
    attribute_sets = [span.attributes or {} for span in spans if evaluated(span)]
    runs = [span.attributes or {} for span in spans if is_run(span)]
    return {
        "spans": len(spans),
        "evaluated": len(attribute_sets),
        "duplicates": sum(1 for span in spans if DUPLICATE_OF in (span.attributes or {})),
        "flagged": sum(1 for attributes in attribute_sets if attributes.get(FLAGGED) is True),
        "tool_choice": _tool_choice_summary(
            [a for a in attribute_sets if any(key.startswith(_TOOL_CHOICE_PREFIX) for key in a)]
        ),
        "conformance": _conformance_summary(
            [a for a in attribute_sets if CONFORMANCE_ANALYST_ID in a or CONFORMANCE_COLLAPSED in a]
        ),
        "figures": _figures_summary(
            [a for a in attribute_sets if FIGURES_CHECKED in a],
            [a for a in attribute_sets if FIGURES_SKIPPED in a],
        ),
        "runs": {
            "runs": len(runs),
            "flagged": sum(1 for run in runs if _count(run.get(RUN_FLAGGED)) > 0),
            "incomplete": sum(1 for run in runs if run.get(RUN_INCOMPLETE) is True),
            "coverage": {
                level: sum(1 for run in runs if run.get(RUN_COVERAGE) == level)
                for level in (COVERAGE_NONE, COVERAGE_PARTIAL, COVERAGE_FULL)
            },
        },
        "classified": classified(spans),
    }


def unchecked_runs(spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """The runs in which no model call was read (``shapecheck.run.coverage = none``), as run entries."""
    return [
        _run_entry(span)
        for span in spans
        if is_run(span) and (span.attributes or {}).get(RUN_COVERAGE) == COVERAGE_NONE
    ]


def classified(spans: Sequence[ReadableSpan]) -> dict[str, int]:
    """How many spans each classification took (the processor's ``classified`` counts), by label.

    Spans that are nothing to the checks are not counted, so an empty mapping says that no span was
    recognised as a model call, a tool execution or an agent in any convention read.
    """
    counts: Counter[str] = Counter()
    for span in spans:
        span_class = classify_span(span.name, span.attributes or {})
        if span_class is not OTHER:
            counts[span_class.label] += 1
    return dict(sorted(counts.items()))


def _tool_choice_summary(calls: Sequence[Mapping[str, AnyValue]]) -> dict[str, int]:
    narrow = sum(1 for call in calls if call.get(TOOL_CHOICE_NARROW) is True)
    disagreement = sum(1 for call in calls if call.get(TOOL_CHOICE_PROXY_DISAGREEMENT) is True)
    either = sum(
        1
        for call in calls
        if call.get(TOOL_CHOICE_NARROW) is True or call.get(TOOL_CHOICE_PROXY_DISAGREEMENT) is True
    )
    skipped = sum(1 for call in calls if TOOL_CHOICE_SKIPPED in call)
    return {
        "llm_calls_with_tools": len(calls),
        "choices": sum(1 for call in calls if _sequence(call.get(TOOL_CHOICE_CHOSEN))),
        "scored": len(calls) - skipped,
        "flagged": either,
        "narrow": narrow,
        "proxy_disagreement": disagreement,
        "skipped": skipped,
    }


def _conformance_summary(analysts: Sequence[Mapping[str, AnyValue]]) -> dict[str, int]:
    return {
        "analysts": len(analysts),
        "collapsed": sum(1 for analyst in analysts if analyst.get(CONFORMANCE_COLLAPSED) is True),
        "recovered": sum(1 for analyst in analysts if analyst.get(CONFORMANCE_RECOVERED) is True),
    }


def _figures_summary(
    answers: Sequence[Mapping[str, AnyValue]], skipped: Sequence[Mapping[str, AnyValue]]
) -> dict[str, int]:
    """Answers checked, and (``skipped``) turn-ending calls whose figures could not be, by reason."""
    reasons = [str(attributes.get(FIGURES_SKIPPED)) for attributes in skipped]
    return {
        "answers": len(answers),
        "checked": sum(_count(answer.get(FIGURES_CHECKED)) for answer in answers),
        "computed": sum(_count(answer.get(FIGURES_COMPUTED)) for answer in answers),
        "inferred": sum(_count(answer.get(FIGURES_INFERRED)) for answer in answers),
        "unsupported": sum(_unsupported(answer) for answer in answers),
        "skipped": len(reasons),
        "skipped_no_content": reasons.count("no-content"),
        "skipped_no_results": reasons.count("no-results"),
        "skipped_results_lost": reasons.count("results-lost"),
    }


def _unsupported(answer: Mapping[str, Any]) -> int:
    """Unsupported figures of one answer: the count (present whether or not the values are)."""
    if FIGURES_UNSUPPORTED_COUNT in answer:
        return _count(answer.get(FIGURES_UNSUPPORTED_COUNT))
    return len(_sequence(answer.get(FIGURES_UNSUPPORTED)))


def _span_entry(span: ReadableSpan) -> dict[str, Any]:
    attributes = span.attributes or {}
    return {
        "trace_id": _hex_trace_id(span),
        "span_id": _hex_span_id(span),
        "name": span.name,
        "attributes": {
            key: _json_value(value) for key, value in attributes.items() if key.startswith(_NAMESPACE)
        },
        "events": [
            {
                "name": event.name,
                "attributes": {k: _json_value(v) for k, v in (event.attributes or {}).items()},
            }
            for event in span.events
            if is_verdict_event(event.name, event.attributes)
        ],
    }


def _json_value(value: AnyValue) -> Any:
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _json_value(item) for key, item in value.items()}
    if isinstance(value, bytes):
        return value.hex()
    return value


def _sequence(value: AnyValue) -> Sequence[AnyValue]:
    return value if isinstance(value, (list, tuple)) else ()


def _count(value: AnyValue) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _hex_trace_id(span: ReadableSpan) -> str:
    return trace_id_hex(span.context.trace_id if span.context else 0)


def _hex_span_id(span: ReadableSpan) -> str:
    return span_id_hex(span.context.span_id if span.context else 0)
