"""The margin of one tool choice: how clearly a context favours the chosen tools over the rest.

Ported from agentfootprint's ``scoreMargin``: each offered tool's vector is scored by its cosine with the
choice context's vector, ``margin = best chosen − best other``; a margin under the threshold is
``narrow`` (negative margins included) and a top-scored tool the model did not choose is a
``proxy_disagreement``. Plain arithmetic over vectors; embedding them is the caller's business.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.checks.tool_choice._dots import row_dots

DEFAULT_MARGIN_THRESHOLD: Final = 0.05
DEFAULT_MAX_SLOT_CHARS: Final = 2000
RELATIVE_FLOOR: Final = 0.05
"""The smallest top score a relative margin divides by, so a menu the context barely matches cannot
blow a tiny margin up."""


def choice_context(
    user_text: str, assistant_text: str | None = None, *, max_slot_chars: int = DEFAULT_MAX_SLOT_CHARS
) -> str:
    """The text a tool choice is ranked against.

    ``"user: "`` + the first ``max_slot_chars`` characters of the turn's user message (the head states
    the task), plus ``"\\n\\nassistant: "`` + the last ``max_slot_chars`` characters of the trimmed latest
    assistant text of the turn when there is one (the tail says what comes next). The system prompt,
    older turns, raw tool results and the tool schemas are left out on purpose.
    """
    context = "user: " + user_text[:max_slot_chars]
    latest = (assistant_text or "").strip()
    if latest:
        context += "\n\nassistant: " + latest[-max_slot_chars:]
    return context


@dataclass(frozen=True)
class ToolScore:
    """One offered tool's score against the choice context."""

    name: str
    score: float


@dataclass(frozen=True, eq=False)
class MarginResult:
    """The ranking of one call's menu and what it says about the choice.

    The ranking is kept as arrays over the menu (no object per tool): ``names`` in menu order, and
    ``order`` / ``ranked_scores`` the ranked menu positions and their scores, highest first (ties keep
    menu order). A menu scored through its index ranks only its head (the top-scored, best chosen and
    best other tools); ``ranked_all`` says whether the whole menu was ranked.
    """

    names: tuple[str, ...]
    """The menu's tool names, menu order."""
    order: npt.NDArray[np.intp]
    """Menu positions, highest score first."""
    ranked_scores: npt.NDArray[np.float64]
    """The score of each position of ``order``."""
    chosen: tuple[str, ...]
    top: str
    """The top-scored tool."""
    best_chosen_score: float
    """The highest score among the chosen tools."""
    margin: float | None
    """Best chosen − best other score; ``None`` when every offered tool was chosen."""
    narrow: bool
    """``margin < threshold`` (a negative margin is narrow)."""
    proxy_disagreement: bool
    """The top-scored tool is not among the chosen."""
    cosine_margin: float | None = None
    """Best chosen − best other plain cosine of the seed's tool text (the seed rule's margin)."""
    weakest: str | None = None
    """For a call that chose several tools and was scored per tool: the chosen tool that set ``margin``."""
    ranked_all: bool = True
    """Whether ``order`` ranks the whole menu (``False`` for a menu scored through its index)."""
    relative_margin: float | None = None
    """``calibrated`` only: ``margin`` divided by the top score (at least :data:`RELATIVE_FLOOR`), the
    value its threshold applies to; ``None`` under the seed rule or when every tool was chosen."""

    @property
    def scores(self) -> tuple[ToolScore, ...]:
        """The ranked tools with their scores, highest first (built on each read; nothing is kept)."""
        return tuple(
            ToolScore(self.names[int(i)], float(score))
            for i, score in zip(self.order, self.ranked_scores, strict=True)
        )

    @property
    def top_score(self) -> float:
        """The top-scored tool's score."""
        return float(self.ranked_scores[0])

    @property
    def flagged(self) -> bool:
        """Narrow or in disagreement."""
        return self.narrow or self.proxy_disagreement

    @property
    def nbytes(self) -> int:
        """Bytes the ranking arrays hold (the names are the menu's own)."""
        return int(self.order.nbytes + self.ranked_scores.nbytes)


def cosine_scores(context: npt.ArrayLike, candidates: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Cosine of ``context`` against each row of ``candidates``; an empty or all-zero vector scores 0."""
    query = np.asarray(context, dtype=np.float64).reshape(-1)
    matrix = np.ascontiguousarray(candidates, dtype=np.float64)  # row sums in one order (see row_dots)
    if matrix.ndim != 2 or matrix.shape[1] != query.shape[0]:
        raise ValueError(f"vector lengths differ: context {query.shape[0]}, candidates {matrix.shape}")
    if query.shape[0] == 0:
        return np.zeros(matrix.shape[0])
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix)) * math.sqrt(float(query @ query))
    dots = row_dots(matrix, query)
    scores: npt.NDArray[np.float64] = np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)
    return scores


def check_wiring(names: Sequence[str], chosen: Sequence[str]) -> None:
    """Raise ``ValueError`` for no candidates, duplicate names, nothing chosen or an unknown chosen name."""
    if not names:
        raise ValueError("score_margin needs at least one candidate")
    if len(set(names)) != len(names):
        raise ValueError("candidate names must be unique")
    if not chosen:
        raise ValueError("score_margin needs at least one chosen tool")
    missing = [name for name in chosen if name not in names]
    if missing:
        raise ValueError(f"chosen tools are not candidates: {missing}")


def score_margin(
    context: npt.ArrayLike,
    names: Sequence[str],
    candidates: npt.ArrayLike,
    chosen: Sequence[str],
    *,
    threshold: float = DEFAULT_MARGIN_THRESHOLD,
) -> MarginResult:
    """Rank ``names`` (with vectors ``candidates``) against ``context`` and measure the chosen tools' lead.

    This is the seed rule: each score is the cosine. The calibrated scoring builds on
    :func:`margin_of_scores` with its own scores (:mod:`~otel_shapecheck.checks.tool_choice._scoring`).

    Raises:
        ValueError: on wiring errors: no candidates, duplicate names, a row count that differs from
            the names, nothing chosen, or a chosen name that is not a candidate.
    """
    check_wiring(names, chosen)
    cosines = cosine_scores(context, candidates)
    if cosines.shape[0] != len(names):
        raise ValueError(f"{len(names)} names but {cosines.shape[0]} candidate vectors")
    return margin_of_scores(names, cosines, chosen, threshold=threshold)


def chosen_mask(names: Sequence[str], chosen: Sequence[str]) -> npt.NDArray[np.bool_]:
    """``True`` at each menu position whose name is chosen."""
    wanted = set(chosen)
    return np.fromiter((name in wanted for name in names), dtype=bool, count=len(names))


def margin_of_scores(
    names: Sequence[str],
    scores: npt.NDArray[np.float64],
    chosen: Sequence[str],
    *,
    threshold: float,
    cosines: npt.NDArray[np.float64] | None = None,
    mask: npt.NDArray[np.bool_] | None = None,
) -> MarginResult:
    """The ranking, margin and flags of already computed ``scores`` (one per name, menu order).

    ``cosines`` (default: ``scores``) gives ``cosine_margin``; ``mask`` (default: from ``chosen``) marks
    the chosen positions. Names are assumed checked by the caller.
    """
    scores = np.asarray(scores, dtype=np.float64)
    chosen_at = chosen_mask(names, chosen) if mask is None else mask
    order = np.argsort(-scores, kind="stable")
    margin = lead(scores, chosen_at)
    top = int(order[0])
    return MarginResult(
        names=tuple(names),
        order=order,
        ranked_scores=scores[order],
        chosen=tuple(chosen),
        top=names[top],
        best_chosen_score=float(scores[chosen_at].max()),
        margin=margin,
        narrow=margin is not None and margin < threshold,
        proxy_disagreement=not bool(chosen_at[top]),
        cosine_margin=margin if cosines is None else lead(np.asarray(cosines, dtype=np.float64), chosen_at),
    )


def relative_margin(margin: float | None, top_score: float) -> float | None:
    """``margin / max(top_score, RELATIVE_FLOOR)``: the lead as a share of how well the best tool matched.

    A raw margin sits at a different point of the false-alarm curve on every corpus (easy menus give
    large scores and large leads, user-written ones small); as a share of the top score it does not move
    as much (``docs/tool-choice.md``, "Choosing the default across corpora").
    """
    return None if margin is None else margin / max(top_score, RELATIVE_FLOOR)


def lead(scores: npt.NDArray[np.float64], chosen_at: npt.NDArray[np.bool_]) -> float | None:
    """Best chosen − best other score, or ``None`` when every position is chosen."""
    if chosen_at.all():
        return None
    return float(scores[chosen_at].max() - scores[~chosen_at].max())
