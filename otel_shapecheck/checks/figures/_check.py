"""The figures check: a verdict on the numbers of each final answer, for the processor and ``check``."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from otel_shapecheck._attributes import (
    EVALUATION_FIGURES,
    FIGURES_CARRIED,
    FIGURES_CHECKED,
    FIGURES_COMPUTED,
    FIGURES_DERIVATIONS,
    FIGURES_INFERRED,
    FIGURES_SKIPPED,
    FIGURES_TRUNCATED,
    FIGURES_UNSUPPORTED,
    FIGURES_UNSUPPORTED_COUNT,
    FLAG_FIGURES_UNSUPPORTED,
)
from otel_shapecheck._model import LLMCall, ToolResult
from otel_shapecheck._settings_table import FIGURES
from otel_shapecheck.checks._base import AttributeValue, Subject, Verdict
from otel_shapecheck.checks.figures._findings import (
    Derivations,
    FiguresFinding,
    check_figures,
)
from otel_shapecheck.checks.figures._text import MAX_ANSWER_FIGURES
from otel_shapecheck.readers._content import stopped_for_tools

logger = logging.getLogger(__name__)

_SETTING = {setting.name: setting for setting in FIGURES}
"""This check's settings, from the one table (names, variables, defaults, validation)."""


LABEL_GROUNDED: Final = "grounded"
LABEL_UNSUPPORTED: Final = "unsupported"
LABEL_SKIPPED: Final = "skipped"

# Values of ``shapecheck.figures.skipped``: silence is not a verdict.
SKIP_NO_CONTENT: Final = "no-content"
"""The call ended a turn, but its answer (or, with tools offered and no result in sight, its input) was
not captured or could not be read."""
SKIP_NO_RESULTS: Final = "no-results"
"""The turn called tools, but none of their results was captured: there is nothing to check against."""
SKIP_RESULTS_LOST: Final = "results-lost"
"""Some figure is in none of the tool results kept, and spans of the trace that ended before the answer
were let go by a bound: the figure may be in one of them, so it is not called unsupported."""

_SKIP_EXPLANATIONS: Final = {
    SKIP_NO_CONTENT: (
        "The call ended a turn but its answer or its input was not captured; its figures were not checked."
    ),
    SKIP_NO_RESULTS: "The turn called tools but no tool result was captured; the figures were not checked.",
    SKIP_RESULTS_LOST: (
        "Some figures are in none of the tool results kept, but a bound let go of spans of this trace "
        "that ended before the answer; the figures were not judged."
    ),
}


class FiguresCheck:
    """Checks that every figure of a final answer is carried by a tool result or derived from one.

    A subject is a final answer when its LLM call produced answer text (or answered through an answer
    tool) and requested no tool calls. The check applies when the answer could have seen at least one
    tool result (in the call's input or from earlier tool executions of the trace) or the call offered
    tools; a plain chat with neither gets no verdict. An answer with no candidate figures gets a
    ``grounded`` verdict with ``checked = 0``, so a trace shows which answers were checked.

    Silence is not a verdict: a call that ends a turn (no tool calls, no finish reason asking for
    tools) in such a context, or whose output was not captured at all, and whose answer could not be
    read is ``skipped = no-content``, and so is an answer offered tools whose input was not read (not
    recorded, hidden, or cut by an attribute length limit) when no tool result is in sight: the input may
    hold results. An answer whose turn called tools of which no result was captured is
    ``skipped = no-results``; one with a figure in none of the results kept, when a bound let go of
    spans of its trace that ended before it (``Subject.results_lost``), is ``skipped = results-lost``:
    the figure may be in one of theirs. (An answer whose figures are all supported stays ``grounded``:
    more results could only support more.)

    Configuration (argument, else variable, else default):

    - ``min_digits``, :envvar:`OTEL_SHAPECHECK_FIGURES_MIN_DIGITS`, 4: digits a bare number needs;
    - ``derivations``, :envvar:`OTEL_SHAPECHECK_FIGURES_DERIVATIONS`, ``extended``: ``closed`` keeps the
      reference's derivation set only; ``extended`` also infers cell arithmetic below the bound;
    - ``coincidence``, :envvar:`OTEL_SHAPECHECK_FIGURES_COINCIDENCE`, 0.05: the bound ``p`` an
      inferred figure's coincidence chance must stay below (min(0.5, 10 · p) for the cells the answer
      names, p / 4 for the whole table when the answer names cells the figure is none of).

    Raises:
        ValueError: an argument is invalid (the message names it).
    """

    name: str = EVALUATION_FIGURES

    def __init__(
        self,
        min_digits: int | None = None,
        *,
        derivations: str | None = None,
        coincidence: float | None = None,
    ) -> None:
        self._min_digits: int = _SETTING["min_digits"].resolve(min_digits)
        self._derivations: Derivations = _SETTING["derivations"].resolve(derivations)
        self._coincidence: float = _SETTING["coincidence"].resolve(coincidence)

    @property
    def min_digits(self) -> int:
        """Digits a bare number needs to be checked."""
        return self._min_digits

    @property
    def derivations(self) -> str:
        """``closed`` or ``extended``."""
        return self._derivations

    @property
    def coincidence(self) -> float:
        """The bound ``p`` of the extended derivations."""
        return self._coincidence

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        """One verdict per final answer among ``subjects``, ``None`` for every other subject.

        Subjects are judged one by one: should one answer's tool results ever make the check fail, that
        answer gets no verdict (the failure is logged) and every other answer of the batch keeps its own.
        """
        return [self._guarded_verdict(subject) for subject in subjects]

    def _guarded_verdict(self, subject: Subject) -> Verdict | None:
        try:
            return self.verdict_for(subject)
        except Exception:  # one bad tool result must not cost the rest of the batch its verdicts
            logger.exception("The figures check failed on span %s; it gets no verdict", subject.span_id)
            return None

    def verdict_for(self, subject: Subject) -> Verdict | None:
        """The verdict on one subject's answer, or ``None`` when it carries no checkable final answer."""
        call = subject.llm_call
        if call is None:
            return None
        tool_results = _distinct(call.tool_results + subject.trace_tool_results)
        in_tool_context = bool(tool_results or call.offered_tools or call.turn_tool_calls)
        if not _is_final_answer(call):
            # Output not captured at all (content capture off) is as silent as an unreadable one.
            if (in_tool_context or call.tool_calls is None) and _ends_turn_unread(call):
                return _skipped(SKIP_NO_CONTENT, call.response_id)
            return None
        if not tool_results and call.turn_tool_calls:
            return _skipped(SKIP_NO_RESULTS, call.response_id)
        if not tool_results and not call.offered_tools:
            return None
        if not tool_results and not call.input_captured:
            # Tools were offered but the input is unread: results it may hold are unknown, not absent.
            return _skipped(SKIP_NO_CONTENT, call.response_id)
        user_texts = call.user_texts or ((call.user_text,) if call.user_text else ())
        finding = check_figures(
            call.answer_text or "",
            tool_results,
            (*user_texts, *call.system_texts),  # supplied to the model, not invented by it
            min_digits=self._min_digits,
            derivations=self._derivations,
            coincidence=self._coincidence,
        )
        if finding.unsupported and subject.results_lost:
            return _skipped(SKIP_RESULTS_LOST, call.response_id)
        return _verdict(finding, call.response_id)


def _distinct(results: tuple[ToolResult, ...]) -> tuple[ToolResult, ...]:
    """The results with repeated text content dropped.

    The same result is often captured twice, as an input message of the call and as the output of its
    ``execute_tool`` span. Reading it twice would add nothing and would spend the derived-value bound.
    """
    seen: set[str] = set()
    distinct: list[ToolResult] = []
    for result in results:
        if isinstance(result.content, str):
            if result.content in seen:
                continue
            seen.add(result.content)
        distinct.append(result)
    return tuple(distinct)


def _is_final_answer(call: LLMCall) -> bool:
    return bool(call.answer_text and call.answer_text.strip()) and not call.tool_calls


def _ends_turn_unread(call: LLMCall) -> bool:
    """No tool calls, no finish reason asking for tools, and no readable answer."""
    return (
        not call.tool_calls
        and not stopped_for_tools(call.finish_reasons)
        and not (call.answer_text or "").strip()
    )


def _skipped(reason: str, response_id: str | None) -> Verdict:
    return Verdict(
        evaluation=EVALUATION_FIGURES,
        attributes={FIGURES_SKIPPED: reason},
        label=LABEL_SKIPPED,
        explanation=_SKIP_EXPLANATIONS[reason],
        response_id=response_id,
    )


_CONTENT_KEYS = frozenset({FIGURES_UNSUPPORTED, FIGURES_DERIVATIONS})
"""The figures themselves: the answer's numbers as written and the tool results' numbers."""


def _verdict(finding: FiguresFinding, response_id: str | None) -> Verdict:
    attributes: dict[str, AttributeValue] = {
        FIGURES_CHECKED: finding.checked,
        FIGURES_CARRIED: len(finding.carried),
        FIGURES_COMPUTED: len(finding.computed),
        FIGURES_INFERRED: len(finding.inferred),
        FIGURES_UNSUPPORTED: finding.unsupported,
        FIGURES_UNSUPPORTED_COUNT: len(finding.unsupported),
        FIGURES_DERIVATIONS: (
            *(figure.describe() for figure in finding.computed),
            *(figure.describe() for figure in finding.inferred),
        ),
        FIGURES_TRUNCATED: finding.truncated or finding.extended_skipped is not None or finding.figures_cut,
    }
    flagged = bool(finding.unsupported)
    return Verdict(
        evaluation=EVALUATION_FIGURES,
        attributes=attributes,
        label=LABEL_UNSUPPORTED if flagged else LABEL_GROUNDED,
        explanation=_explanation(finding),
        score=finding.supported_share,
        flags=(FLAG_FIGURES_UNSUPPORTED,) if flagged else (),
        response_id=response_id,
        content_keys=_CONTENT_KEYS,
    )


def _explanation(finding: FiguresFinding) -> str:
    """One sentence with counts only: the figures themselves stay in the span attributes."""
    if not finding.checked:
        return "The answer states no figures to check."
    supported = len(finding.carried) + len(finding.computed) + len(finding.inferred)
    sentence = (
        f"{supported} of {finding.checked} figures in the answer "
        f"{'is' if supported == 1 else 'are'} carried by a tool result "
        f"({len(finding.carried)}) or derived from one ({len(finding.computed) + len(finding.inferred)}"
    )
    if finding.inferred:
        sentence += f", {len(finding.inferred)} of them inferred from cell arithmetic"
    sentence += ")"
    if finding.unsupported:
        unsupported = len(finding.unsupported)
        sentence += f"; {unsupported} {'is' if unsupported == 1 else 'are'} neither"
    if finding.truncated:
        sentence += ", and the tool results could not be read in full (too large, or cut short when recorded)"
    if finding.extended_skipped is not None:
        sentence += ", and the extended derivations were not tried (too many numbers)"
    if finding.figures_cut:
        sentence += (
            f", and the answer was read only as far as its first {MAX_ANSWER_FIGURES} distinct figures"
        )
    return sentence + "."
