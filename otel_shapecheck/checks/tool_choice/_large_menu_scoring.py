"""Scoring one call on a large menu through its :class:`~._large_menu_scan.MenuIndex` (see that module)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.checks.tool_choice._large_menu_scan import (
    Best,
    FloatArray,
    MenuIndex,
    Positions,
    Query,
    ToolMatrix,
    best_excluding,
    better,
    top,
)
from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon
from otel_shapecheck.checks.tool_choice._margin import MarginResult, relative_margin
from otel_shapecheck.checks.tool_choice._plan import MenuPlan
from otel_shapecheck.checks.tool_choice._scoring import needs_segments
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._vectors import Embedder, FloatMatrix

EMBED_CHUNK: Final = 4096
"""Texts per embed call while a large menu's vectors are built (bounds the batch's memory)."""


def build_menu_index(plan: MenuPlan, embedder: Embedder, *, calibrated: bool) -> MenuIndex:
    """Embed a large menu's texts (past the embedding cache, which would only churn) and index them.

    Memory is the point at 100 000 tools (200 MB per matrix of 512-dimension vectors): each distinct
    text is embedded once and its vector written straight into the columns of the tools that have it,
    so nothing but the final matrices and one batch is held; a menu whose parameter texts are its seed
    texts (no tool has parameters) gets no second matrix.
    """
    inner = embedder.inner if isinstance(embedder, EmbeddingCache) else embedder
    separate = calibrated and plan.parameter_texts != plan.seed_texts
    texts = list(dict.fromkeys(plan.seed_texts + (plan.parameter_texts if separate else ())))
    row = {text: i for i, text in enumerate(texts)}
    layouts = [np.fromiter((row[text] for text in plan.seed_texts), dtype=np.intp, count=len(plan.names))]
    if separate:
        layouts.append(
            np.fromiter((row[text] for text in plan.parameter_texts), dtype=np.intp, count=len(plan.names))
        )
    del row
    matrices = embed_by_column(inner, texts, layouts)
    seed = matrices[0]
    parameter = (matrices[1] if separate else seed) if calibrated else None
    lexicon = MenuLexicon(plan.parameter_texts) if calibrated else None
    return MenuIndex(plan.names, seed, parameter, lexicon)


def embed_by_column(
    embedder: Embedder, texts: Sequence[str], layouts: Sequence[Positions]
) -> list[ToolMatrix]:
    """One :class:`ToolMatrix` per layout: column ``i`` holds the vector of ``texts[layout[i]]``.

    The texts are embedded in calls of at most :data:`EMBED_CHUNK`, each batch written into the columns
    that use it before the next is embedded.
    """
    by_row = [np.argsort(layout, kind="stable") for layout in layouts]
    sorted_rows = [layout[order] for layout, order in zip(layouts, by_row, strict=True)]
    inverse = [np.zeros(len(layout), dtype=np.float64) for layout in layouts]
    columns: list[FloatMatrix] = []
    for start in range(0, max(len(texts), 1), EMBED_CHUNK):
        part = np.asarray(embedder.embed(texts[start : start + EMBED_CHUNK]), dtype=np.float32)
        if not columns:
            columns = [np.zeros((part.shape[1], len(layout)), dtype=np.float32) for layout in layouts]
        wide = part.astype(np.float64)
        norms = np.sqrt(np.einsum("ij,ij->i", wide, wide))
        part_inverse = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        for matrix, norms_of, layout, order, rows in zip(
            columns, inverse, layouts, by_row, sorted_rows, strict=True
        ):
            low, high = np.searchsorted(rows, [start, start + len(part)])
            positions = order[low:high]
            local = layout[positions] - start
            matrix[:, positions] = part[local].T
            norms_of[positions] = part_inverse[local]
    return [
        ToolMatrix(matrix, norms_of, layout)
        for matrix, norms_of, layout in zip(columns, inverse, layouts, strict=True)
    ]


class _View:
    """One view of a call's context (the whole context or a clause) scanned over the menu once.

    ``approximate`` holds every tool's score within ``error`` of the exact one; :meth:`exact` scores
    given positions as ranking the whole menu does.
    """

    def __init__(
        self, index: MenuIndex, text: str, vector: FloatMatrix, *, calibrated: bool, weight: float
    ) -> None:
        self._index = index
        self._vector = vector
        self._weight = weight
        query = Query.of(vector)
        self.seed = index.seed.approximate(query.unit, query.nonzero)
        self.lexical: FloatArray | None = None
        self.approximate = self.seed
        self.error = index.error
        if calibrated:
            assert index.parameter is not None and index.lexicon is not None
            parameter = (
                self.seed
                if index.parameter is index.seed
                else index.parameter.approximate(query.unit, query.nonzero)
            )
            self.lexical = index.lexicon.scores(text)
            self.approximate = (1.0 - weight) * ((self.seed + parameter) / 2.0) + weight * self.lexical
            self.error = (1.0 - weight) * index.error + 1e-12

    def exact_seed(self, positions: Positions) -> FloatArray:
        """Exact seed cosines at ``positions``."""
        return self._index.seed.exact(self._vector, positions)

    def exact(self, positions: Positions) -> FloatArray:
        """Exact scores at ``positions``: the seed cosine, or ``(1 − w) · mean cosine + w · lexical``."""
        seed = self.exact_seed(positions)
        if self.lexical is None:
            return seed
        assert self._index.parameter is not None
        parameter = self._index.parameter.exact(self._vector, positions)
        cosines = (seed + parameter) / 2.0
        return np.asarray((1.0 - self._weight) * cosines + self._weight * self.lexical[positions])

    def best_other(self, mask: npt.NDArray[np.bool_]) -> Best | None:
        """The best tool not chosen, by exact score."""
        return best_excluding(self.approximate, mask, self.error, self.exact)


def score_large(
    index: MenuIndex,
    context_text: str,
    context: FloatMatrix,
    chosen: Sequence[str],
    *,
    calibrated: bool,
    threshold: float,
    lexical_weight: float,
    segments: Sequence[tuple[str, FloatMatrix]] = (),
) -> MarginResult:
    """The margin of one call on an indexed menu: equal to ranking the whole menu, without ranking it.

    ``scores`` of the result hold the top-scored, best chosen and best other tools only.
    """
    names = index.names
    mask = index.chosen_mask(chosen)
    chosen_at = np.flatnonzero(mask)
    view = _View(index, context_text, context, calibrated=calibrated, weight=lexical_weight)
    best_chosen = top(chosen_at, view.exact(chosen_at))
    other = view.best_other(mask)
    margin = best_chosen.score - other.score if other is not None else None
    cosine_margin = margin
    if calibrated:
        seed_other = best_excluding(view.seed, mask, index.error, view.exact_seed)
        seed_chosen = float(view.exact_seed(chosen_at).max())
        cosine_margin = seed_chosen - seed_other.score if seed_other is not None else None
    best = better(best_chosen, other)
    assert best is not None
    weakest = None
    if calibrated and other is not None and needs_segments(len(names), len(chosen_at)):
        views = [view] + [
            _View(index, text, vector, calibrated=True, weight=lexical_weight) for text, vector in segments
        ]
        weakest_at, margin = _weakest(views, mask)
        weakest = names[weakest_at]
    share = relative_margin(margin, best.score) if calibrated else None
    measured = share if calibrated else margin
    head = sorted({best, best_chosen, *([other] if other else [])}, key=lambda b: (-b.score, b.position))
    return MarginResult(
        names=names,
        order=np.asarray([b.position for b in head], dtype=np.intp),
        ranked_scores=np.asarray([b.score for b in head], dtype=np.float64),
        chosen=tuple(chosen),
        top=names[best.position],
        best_chosen_score=best_chosen.score,
        margin=margin,
        narrow=measured is not None and measured < threshold,
        proxy_disagreement=not bool(mask[best.position]),
        cosine_margin=cosine_margin,
        weakest=weakest,
        ranked_all=False,
        relative_margin=share,
    )


def _weakest(views: Sequence[_View], mask: npt.NDArray[np.bool_]) -> tuple[int, float]:
    """Each chosen tool's best lead over the best unchosen one across the views; the weakest wins."""
    chosen_at = np.flatnonzero(mask)
    leads = []
    for view in views:
        other = view.best_other(mask)
        assert other is not None
        leads.append(view.exact(chosen_at) - other.score)
    evidence = np.max(np.stack(leads), axis=0)
    weakest = int(np.argmin(evidence))
    return int(chosen_at[weakest]), float(evidence[weakest])
