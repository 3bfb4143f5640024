"""Scoring a small menu from its cached matrices: one product per tool text, the rest in plain Python.

A menu of a few tools costs little arithmetic, so numpy's per-call overhead (conversions, norms, masks,
sorts on arrays of two) dominated its scoring. :class:`MenuMatrices` keeps what depends on the menu
alone, once per menu and tool index: both tool texts' vectors as float64 and their row norms. Scoring a
call then takes one :func:`~._dots.row_dots` per tool text (each on the same ``(tools, dims)`` float64
block the general path builds, so the dot products are the same numbers) and does the cosines, the
fusion, the BM25 sums and the ranking with Python floats, which round exactly as numpy's float64
element-wise operations do. The results equal :func:`~._scoring.calibrated_margin` and
:func:`~._margin.score_margin` on the same inputs; calls that score each of several chosen tools go
through :func:`~._scoring.calibrated_margin` with the cached matrices.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.checks.tool_choice._dots import row_dots
from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon
from otel_shapecheck.checks.tool_choice._margin import MarginResult, check_wiring, relative_margin

MAX_LEAN_TOOLS: Final = 32
"""Menus up to this many tools are ranked in plain Python; bigger ones with numpy on the cached matrices."""


@dataclass(frozen=True, eq=False)
class MenuMatrices:
    """One menu's tool vectors in one tool index, ready for a product with a context vector."""

    index_key: int
    """The identity of the tool index the rows belong to."""
    resets: int
    """The index's reset count when the rows were read (rows are stale after a reset)."""
    seed: npt.NDArray[np.float64]
    """``(tools, dims)``: the seed texts' vectors, menu order."""
    parameter: npt.NDArray[np.float64]
    """``(tools, dims)``: the parameter texts' vectors (the seed's own array for the seed scoring)."""
    seed_norms: tuple[float, ...]
    parameter_norms: tuple[float, ...]
    lexicon: MenuLexicon | None
    """The menu's BM25 index over its parameter texts (``None`` for the seed scoring)."""

    @property
    def nbytes(self) -> int:
        """Bytes the matrices, their norms and the menu's lexicon hold (a lexicon is a fifth of the rest)."""
        parameter = self.parameter.nbytes if self.parameter is not self.seed else 0
        lexicon = self.lexicon.nbytes if self.lexicon is not None else 0
        return int(self.seed.nbytes + parameter + 16 * len(self.seed_norms) + lexicon)


def menu_matrices(
    index_key: int,
    resets: int,
    seed_vectors: npt.ArrayLike,
    parameter_vectors: npt.ArrayLike | None,
    lexicon: MenuLexicon | None,
) -> MenuMatrices:
    """The matrices of a menu from its float32 index rows (``parameter_vectors=None``: the seed scoring)."""
    seed = np.ascontiguousarray(seed_vectors, dtype=np.float64)
    parameter = (
        seed if parameter_vectors is None else np.ascontiguousarray(parameter_vectors, dtype=np.float64)
    )
    return MenuMatrices(
        index_key=index_key,
        resets=resets,
        seed=seed,
        parameter=parameter,
        seed_norms=_row_norms(seed),
        parameter_norms=_row_norms(parameter) if parameter is not seed else _row_norms(seed),
        lexicon=lexicon,
    )


def _row_norms(matrix: npt.NDArray[np.float64]) -> tuple[float, ...]:
    """Each row's L2 norm, computed as :func:`~._margin.cosine_scores` computes it."""
    return tuple(np.sqrt(np.einsum("ij,ij->i", matrix, matrix)).tolist())


def small_margin(
    context_text: str,
    context: npt.ArrayLike,
    names: tuple[str, ...],
    matrices: MenuMatrices,
    chosen: Sequence[str],
    *,
    threshold: float,
    lexical_weight: float,
) -> MarginResult:
    """The ranking of one call of a small menu; calibrated when the matrices carry a lexicon, else seed.

    The calibrated ranking is :func:`~._scoring.calibrated_margin`'s for a call whose chosen tools are
    not scored one by one; the seed ranking is :func:`~._margin.score_margin`'s.

    Raises:
        ValueError: on the wiring errors of :func:`~._margin.score_margin`, or a context vector whose
            length differs from the tool vectors'.
    """
    check_wiring(names, chosen)
    query = np.asarray(context, dtype=np.float64).reshape(-1)
    if query.shape[0] != matrices.seed.shape[1]:
        raise ValueError(f"vector lengths differ: context {query.shape[0]}, candidates {matrices.seed.shape}")
    query_norm = math.sqrt(float(query @ query))
    seed = _cosines(row_dots(matrices.seed, query).tolist(), matrices.seed_norms, query_norm)
    lexicon = matrices.lexicon
    if lexicon is None:
        scores = seed
    else:
        parameter_dots = row_dots(matrices.parameter, query).tolist()
        parameter = _cosines(parameter_dots, matrices.parameter_norms, query_norm)
        lexical = lexicon.score_list(context_text)
        keep = 1.0 - lexical_weight
        scores = [
            keep * ((s + p) / 2.0) + lexical_weight * w
            for s, p, w in zip(seed, parameter, lexical, strict=True)
        ]
    wanted = set(chosen)
    chosen_at = [name in wanted for name in names]
    order = sorted(range(len(scores)), key=lambda position: -scores[position])
    top = order[0]
    margin = _lead(scores, chosen_at)
    share = None if lexicon is None else relative_margin(margin, scores[top])
    measured = margin if lexicon is None else share
    return MarginResult(
        names=names,
        order=np.array(order, dtype=np.intp),
        ranked_scores=np.array([scores[position] for position in order], dtype=np.float64),
        chosen=tuple(chosen),
        top=names[top],
        best_chosen_score=max(score for score, is_chosen in zip(scores, chosen_at, strict=True) if is_chosen),
        margin=margin,
        narrow=measured is not None and measured < threshold,
        proxy_disagreement=not chosen_at[top],
        cosine_margin=margin if lexicon is None else _lead(seed, chosen_at),
        relative_margin=share,
    )


def _cosines(dots: list[float], norms: tuple[float, ...], query_norm: float) -> list[float]:
    """``dot / (row norm · query norm)``, 0 where that product is 0 (as :func:`~._margin.cosine_scores`)."""
    scores = []
    for dot, norm in zip(dots, norms, strict=True):
        denominator = norm * query_norm
        scores.append(dot / denominator if denominator > 0 else 0.0)
    return scores


def _lead(scores: list[float], chosen_at: list[bool]) -> float | None:
    """Best chosen − best other score, or ``None`` when every position is chosen."""
    others = [score for score, is_chosen in zip(scores, chosen_at, strict=True) if not is_chosen]
    if not others:
        return None
    return max(score for score, is_chosen in zip(scores, chosen_at, strict=True) if is_chosen) - max(others)
