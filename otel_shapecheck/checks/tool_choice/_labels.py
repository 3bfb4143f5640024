"""What a tool-choice verdict says: its skip reasons, score labels and one-sentence explanations.

Explanations carry numbers only, never prompt content or tool names (those are in the attributes), so a
verdict can be exported wherever the span goes.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Final

from otel_shapecheck._attributes import (
    TOOL_CHOICE_COSINE_MARGIN,
    TOOL_CHOICE_MARGIN,
    TOOL_CHOICE_NARROW,
    TOOL_CHOICE_PROXY_DISAGREEMENT,
    TOOL_CHOICE_RELATIVE_MARGIN,
    TOOL_CHOICE_TOP,
    TOOL_CHOICE_WEAKEST,
)
from otel_shapecheck._model import LLMCall
from otel_shapecheck.checks._base import AttributeValue
from otel_shapecheck.checks.tool_choice._margin import MarginResult
from otel_shapecheck.readers._content import stopped_for_tools

# Values of ``shapecheck.tool_choice.skipped``.
SKIP_NOTHING_CHOSEN: Final = "nothing-chosen"
SKIP_CHOSEN_NOT_OFFERED: Final = "chosen-not-offered"
SKIP_NO_MENU: Final = "no-menu"
SKIP_NO_CONTEXT: Final = "no-context"
SKIP_INCOMPLETE: Final = "incomplete"
SKIP_MENU_TOO_LARGE: Final = "menu-too-large"
SKIP_ANSWER_TOOL: Final = "answer-tool"
SKIP_NO_OUTPUT: Final = "no-output"
SKIP_EMBEDDING_FAILED: Final = "embedding-failed"

# Values of ``gen_ai.evaluation.score.label`` for tool choice.
LABEL_CLEAR: Final = "clear"
"""The chosen tool led the best other offered tool by at least the threshold."""
LABEL_NARROW: Final = "narrow"
"""The chosen tool was top-scored, but by less than the threshold."""
LABEL_DISAGREEMENT: Final = "disagreement"
"""A tool the model did not choose scored highest (such a margin is also narrow)."""
LABEL_ALL_CHOSEN: Final = "all-chosen"
"""Every offered tool was chosen: no margin to measure."""
LABEL_SKIPPED: Final = "skipped"
"""Not scored; ``shapecheck.tool_choice.skipped`` says why."""

_SKIP_EXPLANATIONS: Final = {
    SKIP_NOTHING_CHOSEN: "The call answered without invoking a tool, so there is no choice to score.",
    SKIP_CHOSEN_NOT_OFFERED: "A chosen tool is not on the captured menu; reported as-is, not scored.",
    SKIP_NO_MENU: "Tools were invoked but no tool menu was captured, so the choice cannot be ranked.",
    SKIP_NO_CONTEXT: "No user message was captured for the turn, so there is no context to rank against.",
    SKIP_INCOMPLETE: "The call's output was not seen before the span was released, so the choice is unknown.",
    SKIP_MENU_TOO_LARGE: (
        "The menu has more tools, or more tool text, than the check scores per call, so it was not scored."
    ),
    SKIP_ANSWER_TOOL: "The call answered through an output tool: an answer, not a tool choice.",
    SKIP_NO_OUTPUT: "The call's output was not captured, so what it chose, if anything, is unknown.",
    SKIP_EMBEDDING_FAILED: (
        "The embedder failed on a text this call needs (its context or a tool of its menu), "
        "so it was not scored."
    ),
}


def skip_reason(call: LLMCall, incomplete: bool, offered_names: Collection[str] | None = None) -> str | None:
    """Why a call with a menu cannot be scored, or ``None`` when it can.

    ``offered_names`` are the menu's names when the caller already holds them as a set (a large menu's
    names are then not walked on every call).
    """
    if call.tool_calls is None:
        if incomplete or stopped_for_tools(call.finish_reasons):
            return SKIP_INCOMPLETE
        # A finish reason that is not a tool call still says the model answered; with no output and no
        # finish reason at all (capture off, or the output lives on another span) nothing is known.
        return SKIP_NOTHING_CHOSEN if call.answer_text is not None or call.finish_reasons else SKIP_NO_OUTPUT
    if not call.chosen:
        return SKIP_NOTHING_CHOSEN
    offered = {tool.name for tool in call.offered_tools or ()} if offered_names is None else offered_names
    if any(name not in offered for name in call.chosen):
        return SKIP_CHOSEN_NOT_OFFERED
    if not (call.user_text or "").strip():
        return SKIP_NO_CONTEXT
    return None


def result_attributes(result: MarginResult) -> dict[str, AttributeValue]:
    """The ``shapecheck.tool_choice.*`` attributes of a ranking (the check adds embedder and scoring)."""
    attributes: dict[str, AttributeValue] = {
        TOOL_CHOICE_TOP: result.top,
        TOOL_CHOICE_NARROW: result.narrow,
        TOOL_CHOICE_PROXY_DISAGREEMENT: result.proxy_disagreement,
    }
    if result.margin is not None:
        attributes[TOOL_CHOICE_MARGIN] = result.margin
    if result.cosine_margin is not None:
        attributes[TOOL_CHOICE_COSINE_MARGIN] = result.cosine_margin
    if result.relative_margin is not None:
        attributes[TOOL_CHOICE_RELATIVE_MARGIN] = result.relative_margin
    if result.weakest is not None:
        attributes[TOOL_CHOICE_WEAKEST] = result.weakest
    return attributes


def explanation(result: MarginResult | None, skipped: str | None, threshold: float) -> tuple[str, str]:
    """The score label and the explanation of one call's verdict."""
    if result is None:
        return LABEL_SKIPPED, _SKIP_EXPLANATIONS.get(skipped or "", "The tool choice was not scored.")
    if result.margin is None:
        return LABEL_ALL_CHOSEN, "Every offered tool was chosen, so there is no margin to measure."
    if result.proxy_disagreement:
        return (
            LABEL_DISAGREEMENT,
            f"An offered tool the model did not choose scored highest; the best chosen tool trails it "
            f"by {_trail(result):.3f}.",
        )
    share = result.relative_margin
    by = f"{result.margin:.3f}" if share is None else f"{result.margin:.3f} ({share:.1%} of the top score)"
    under = f"{threshold:g}" if share is None else f"{threshold * 100:g} %"
    if result.weakest is not None:
        lead = (
            f"The least supported of the {len(result.chosen)} chosen tools leads every tool the model "
            f"did not choose by {by} at best, in the whole context or one of its clauses"
        )
        if result.narrow:
            return LABEL_NARROW, f"{lead}: under the {under} threshold."
        return LABEL_CLEAR, f"{lead} (narrow below {under})."
    if result.narrow:
        return (
            LABEL_NARROW,
            f"The chosen tool led the best other offered tool by only {by}, under the {under} threshold.",
        )
    return (
        LABEL_CLEAR,
        f"The chosen tool led the best other offered tool by {by} (narrow below {under}).",
    )


def _trail(result: MarginResult) -> float:
    """How far the best chosen tool's score trails the top score."""
    return result.top_score - result.best_chosen_score
