"""Run summaries: what a run's agent span says about the evaluated spans under it.

A *run* is the outermost agent span of a trace (OTel GenAI ``invoke_agent``, OpenInference ``AGENT``,
a Traceloop ``workflow`` or ``agent``). The worker tallies each evaluated span's verdicts
(:func:`tally_verdicts`), the ledger adds the tallies up per run, and when the run settles its agent
span is forwarded as a copy carrying ``shapecheck.run.*`` (:func:`run_attributes`, written by
:func:`otel_shapecheck.outputs._enrich.run_copy`). The counts follow the
seed recorder's ``getSummary`` (calls with tools, choices, scored, narrow, disagreement, skipped) and
``check``'s per-check tallies, so a run reads the same on the span and in the report.

A run also says how much of it was read: ``shapecheck.run.llm_calls`` (the model calls seen, each
once) and ``shapecheck.run.coverage``: ``none`` when no model call was seen (a framework whose
telemetry carries no model spans: all-zero counts are then no clean run), ``partial`` when a call was
seen without its content, menu or output (read as nothing, or a check skipped it for what was
missing) or when tools ran and no call was read choosing one, else ``full``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from otel_shapecheck._attributes import (
    CONFORMANCE_COLLAPSED,
    CONFORMANCE_RECOVERED,
    COVERAGE_FULL,
    COVERAGE_NONE,
    COVERAGE_PARTIAL,
    EVALUATION_CONFORMANCE,
    EVALUATION_TOOL_CHOICE,
    FIGURES_CARRIED,
    FIGURES_CHECKED,
    FIGURES_COMPUTED,
    FIGURES_INFERRED,
    FIGURES_SKIPPED,
    FIGURES_UNSUPPORTED,
    FIGURES_UNSUPPORTED_COUNT,
    FLAGGED,
    RUN_ANALYSTS,
    RUN_ANSWERS_CHECKED,
    RUN_ANSWERS_SKIPPED,
    RUN_CHOICES,
    RUN_COLLAPSED,
    RUN_COVERAGE,
    RUN_DUPLICATES,
    RUN_EVALUATED,
    RUN_FIGURES_CARRIED,
    RUN_FIGURES_CHECKED,
    RUN_FIGURES_COMPUTED,
    RUN_FIGURES_INFERRED,
    RUN_FIGURES_UNSUPPORTED,
    RUN_FLAGGED,
    RUN_INCOMPLETE,
    RUN_LLM_CALLS,
    RUN_LLM_CALLS_WITH_TOOLS,
    RUN_NARROW,
    RUN_PROXY_DISAGREEMENT,
    RUN_RECOVERED,
    RUN_SCORED,
    RUN_SKIPPED,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_NARROW,
    TOOL_CHOICE_PROXY_DISAGREEMENT,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck._model import LLMCall
from otel_shapecheck.checks._base import AttributeValue, Verdict


@dataclass(slots=True)
class RunTally:
    """Counts over the evaluated spans of one run (or of one span, before they are added up)."""

    evaluated: int = 0
    """Spans with at least one verdict."""
    duplicates: int = 0
    """Second spans of a call already counted (not counted again)."""
    flagged: int = 0
    """Evaluated spans with at least one flag."""
    llm_calls_with_tools: int = 0
    choices: int = 0
    """Calls where the model invoked at least one tool."""
    scored: int = 0
    narrow: int = 0
    proxy_disagreement: int = 0
    skipped: int = 0
    """Calls whose tool choice will never be scored."""
    answers_checked: int = 0
    answers_skipped: int = 0
    """Turn-ending calls whose figures could not be checked (no content, no results)."""
    figures_checked: int = 0
    figures_carried: int = 0
    figures_computed: int = 0
    figures_inferred: int = 0
    figures_unsupported: int = 0
    analysts: int = 0
    collapsed: int = 0
    recovered: int = 0
    incomplete: int = 0
    """Spans evaluated as incomplete (a bound released them before their facts arrived)."""
    llm_calls: int = 0
    """Model-call spans seen (a second span of one call is not counted again)."""
    llm_calls_partial: int = 0
    """Of those, calls seen without their content, menu or output."""
    llm_calls_choosing: int = 0
    """Of those, calls whose output named at least one tool call."""
    tool_executions: int = 0
    """Tool-execution spans the run's agent span counted in its time window (see :func:`coverage`)."""

    def add(self, other: RunTally) -> None:
        """Add ``other``'s counts to these."""
        for name in _FIELDS:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def copy(self) -> RunTally:
        """A copy that later additions leave alone."""
        return dataclasses.replace(self)


_FIELDS = tuple(field.name for field in dataclasses.fields(RunTally))


_SKIPS_FOR_MISSING: frozenset[tuple[str, str]] = frozenset(
    {
        # tool choice (checks/tool_choice/_labels.py): no menu, no user message, no output, not in time
        (TOOL_CHOICE_SKIPPED, "no-menu"),
        (TOOL_CHOICE_SKIPPED, "no-context"),
        (TOOL_CHOICE_SKIPPED, "no-output"),
        (TOOL_CHOICE_SKIPPED, "incomplete"),
        # figures (checks/figures/_check.py): no readable answer or input, no tool result, results let go
        (FIGURES_SKIPPED, "no-content"),
        (FIGURES_SKIPPED, "no-results"),
        (FIGURES_SKIPPED, "results-lost"),
    }
)
"""Skip reasons that say something the call needed was not captured (the others are verdicts)."""


def tally_verdicts(
    verdicts: Sequence[Verdict],
    *,
    incomplete: bool = False,
    model_call: bool = False,
    call: LLMCall | None = None,
) -> RunTally:
    """What one evaluated span adds to its run; only its coverage counts when it had no verdict.

    ``model_call``: the span is a model call (counted in ``llm_calls``); ``call`` is its reading
    (``None``: nothing could be read, so it was seen only in part).
    """
    tally = RunTally(incomplete=int(incomplete))
    if model_call:
        tally.llm_calls = 1
        tally.llm_calls_partial = int(_seen_in_part(call, verdicts))
        tally.llm_calls_choosing = int(call is not None and bool(call.tool_calls))
    if not verdicts:
        return tally
    tally.evaluated = 1
    tally.flagged = int(any(verdict.flagged for verdict in verdicts))
    for verdict in verdicts:
        attributes = verdict.attributes
        if verdict.evaluation == EVALUATION_TOOL_CHOICE:
            _tally_tool_choice(tally, attributes)
        elif verdict.evaluation == EVALUATION_CONFORMANCE:
            tally.analysts += 1
            tally.collapsed += attributes.get(CONFORMANCE_COLLAPSED) is True
            tally.recovered += attributes.get(CONFORMANCE_RECOVERED) is True
        elif FIGURES_CHECKED in attributes:
            _tally_figures(tally, attributes)
        elif FIGURES_SKIPPED in attributes:
            tally.answers_skipped += 1
    return tally


def _seen_in_part(call: LLMCall | None, verdicts: Sequence[Verdict]) -> bool:
    """Whether a model call's content, menu or output was missing: unread, or skipped for want of it."""
    if call is None or not call.input_captured:
        return True
    if call.tool_calls is None and call.answer_text is None and call.answer_tool is None:
        return True
    return any(
        (key, value) in _SKIPS_FOR_MISSING
        for verdict in verdicts
        for key, value in verdict.attributes.items()
        if key in (TOOL_CHOICE_SKIPPED, FIGURES_SKIPPED) and isinstance(value, str)
    )


def coverage(tally: RunTally, incomplete: bool = False) -> str:
    """``none``, ``partial`` or ``full``: how much of a run's model calls the checks could read.

    A run released before all its spans were evaluated (``incomplete``) was read in part at best, and so
    was a run that executed tools when none of its model calls was read choosing one: the choices were
    written somewhere the readers do not look (as text, say), and the run must not read as clean.
    """
    if tally.llm_calls == 0:
        return COVERAGE_NONE
    if tally.llm_calls_partial or incomplete or tally.incomplete:
        return COVERAGE_PARTIAL
    if tally.tool_executions and not tally.llm_calls_choosing:
        return COVERAGE_PARTIAL
    return COVERAGE_FULL


def _tally_tool_choice(tally: RunTally, attributes: Mapping[str, AttributeValue]) -> None:
    tally.llm_calls_with_tools += 1
    chosen = attributes.get(TOOL_CHOICE_CHOSEN)
    tally.choices += bool(chosen) and not isinstance(chosen, str | bool | int | float)
    if TOOL_CHOICE_SKIPPED in attributes:
        tally.skipped += 1
    else:
        tally.scored += 1
    tally.narrow += attributes.get(TOOL_CHOICE_NARROW) is True
    tally.proxy_disagreement += attributes.get(TOOL_CHOICE_PROXY_DISAGREEMENT) is True


def _tally_figures(tally: RunTally, attributes: Mapping[str, AttributeValue]) -> None:
    checked = _count(attributes.get(FIGURES_CHECKED))
    carried = _count(attributes.get(FIGURES_CARRIED))
    computed = _count(attributes.get(FIGURES_COMPUTED))
    inferred = _count(attributes.get(FIGURES_INFERRED))
    tally.answers_checked += 1
    tally.figures_checked += checked
    tally.figures_carried += carried
    tally.figures_computed += computed
    tally.figures_inferred += inferred
    tally.figures_unsupported += unsupported_count(attributes)


def unsupported_count(attributes: Mapping[str, AttributeValue]) -> int:
    """The unsupported figures of a figures verdict: its count, else its list's length, else what the
    other counts leave over (they partition the checked figures; the list is content)."""
    count = attributes.get(FIGURES_UNSUPPORTED_COUNT)
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    listed = attributes.get(FIGURES_UNSUPPORTED)
    if isinstance(listed, list | tuple):
        return len(listed)
    supported = sum(
        _count(attributes.get(key)) for key in (FIGURES_CARRIED, FIGURES_COMPUTED, FIGURES_INFERRED)
    )
    return max(_count(attributes.get(FIGURES_CHECKED)) - supported, 0)


def run_attributes(tally: RunTally, incomplete: bool) -> dict[str, AttributeValue]:
    """The ``shapecheck.run.*`` attributes of a run, and ``shapecheck.flagged``."""
    return {
        RUN_EVALUATED: tally.evaluated,
        RUN_DUPLICATES: tally.duplicates,
        RUN_FLAGGED: tally.flagged,
        RUN_LLM_CALLS_WITH_TOOLS: tally.llm_calls_with_tools,
        RUN_CHOICES: tally.choices,
        RUN_SCORED: tally.scored,
        RUN_NARROW: tally.narrow,
        RUN_PROXY_DISAGREEMENT: tally.proxy_disagreement,
        RUN_SKIPPED: tally.skipped,
        RUN_ANSWERS_CHECKED: tally.answers_checked,
        RUN_ANSWERS_SKIPPED: tally.answers_skipped,
        RUN_FIGURES_CHECKED: tally.figures_checked,
        RUN_FIGURES_CARRIED: tally.figures_carried,
        RUN_FIGURES_COMPUTED: tally.figures_computed,
        RUN_FIGURES_INFERRED: tally.figures_inferred,
        RUN_FIGURES_UNSUPPORTED: tally.figures_unsupported,
        RUN_ANALYSTS: tally.analysts,
        RUN_COLLAPSED: tally.collapsed,
        RUN_RECOVERED: tally.recovered,
        RUN_INCOMPLETE: incomplete or tally.incomplete > 0,
        RUN_LLM_CALLS: tally.llm_calls,
        RUN_COVERAGE: coverage(tally, incomplete),
        FLAGGED: tally.flagged > 0,
    }


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
