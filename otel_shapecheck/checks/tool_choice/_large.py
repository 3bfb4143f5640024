"""Scoring one call on a large menu through its :class:`~._menu_index.MenuIndex` (see that module)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.checks.tool_choice._cache import EmbeddingCache
from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon
from otel_shapecheck.checks.tool_choice._margin import MarginResult, chosen_mask
from otel_shapecheck.checks.tool_choice._menu_index import Best, MenuIndex, _better, _top
from otel_shapecheck.checks.tool_choice._plan import MenuPlan
from otel_shapecheck.checks.tool_choice._scoring import needs_segments
from otel_shapecheck.checks.tool_choice._vectors import Embedder, FloatMatrix

EMBED_CHUNK: Final = 4096
"""Texts per embed call while a large menu's vectors are built (bounds the batch's memory)."""


def build_menu_index(plan: MenuPlan, embedder: Embedder, *, calibrated: bool) -> MenuIndex:
    """Embed a large menu's texts (past the embedding cache, which would only churn) and index them.

    Memory is the point at 100 000 tools (200 MB per matrix of 512-dimension vectors): the vectors are
    written into one preallocated matrix, the seed rows are a view of it when the seed texts are distinct,
    and a menu whose parameter texts are its seed texts (no tool has parameters) gets no second matrix.
    """
    inner = embedder.inner if isinstance(embedder, EmbeddingCache) else embedder
    texts = list(dict.fromkeys(plan.seed_texts + (plan.parameter_texts if calibrated else ())))
    vectors = embed_in_chunks(inner, texts)
    row = {text: i for i, text in enumerate(texts)}
    del texts
    seed = _rows(vectors, [row[text] for text in plan.seed_texts])
    parameter: FloatMatrix | None = None
    if calibrated:
        parameter = (
            seed
            if plan.parameter_texts == plan.seed_texts
            else _rows(vectors, [row[text] for text in plan.parameter_texts])
        )
    del row
    lexicon = MenuLexicon(plan.parameter_texts) if calibrated else None
    return MenuIndex(plan.names, seed, parameter, lexicon)


def _rows(vectors: FloatMatrix, rows: Sequence[int]) -> FloatMatrix:
    """``vectors[rows]``: a view when the rows are the leading ones in order, else a copy."""
    if len(rows) <= len(vectors) and all(i == r for i, r in enumerate(rows)):
        return vectors[: len(rows)]
    return vectors[np.asarray(rows, dtype=np.intp)]


def embed_in_chunks(embedder: Embedder, texts: Sequence[str]) -> FloatMatrix:
    """``embedder.embed(texts)`` in calls of at most :data:`EMBED_CHUNK` texts, into one matrix."""
    out: FloatMatrix | None = None
    for start in range(0, len(texts), EMBED_CHUNK):
        part = embedder.embed(texts[start : start + EMBED_CHUNK])
        if out is None:
            out = np.empty((len(texts), part.shape[1]), dtype=np.float32)
        out[start : start + len(part)] = part
    if out is None:
        return np.asarray(embedder.embed([]), dtype=np.float32)
    return out


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
    mask = chosen_mask(names, chosen)
    chosen_at = np.flatnonzero(mask)
    best_chosen, other, lexical = _view(index, context_text, context, mask, calibrated, lexical_weight)
    if calibrated:
        seed_chosen = float(index.seed_scores(context, chosen_at).max())
        seed_other = index.best_seed(context, mask)
        cosine_margin = seed_chosen - seed_other.score if seed_other is not None else None
    top = _better(best_chosen, other)
    assert top is not None
    margin = best_chosen.score - other.score if other is not None else None
    if not calibrated:
        cosine_margin = margin
    weakest = None
    if calibrated and other is not None and needs_segments(len(names), len(chosen_at)):
        weakest_at, margin = _weakest(index, context_text, context, mask, lexical, segments, lexical_weight)
        weakest = names[weakest_at]
    head = sorted({top, best_chosen, *([other] if other else [])}, key=lambda b: (-b.score, b.position))
    return MarginResult(
        names=names,
        order=np.asarray([best.position for best in head], dtype=np.intp),
        ranked_scores=np.asarray([best.score for best in head], dtype=np.float64),
        chosen=tuple(chosen),
        top=names[top.position],
        best_chosen_score=best_chosen.score,
        margin=margin,
        narrow=margin is not None and margin < threshold,
        proxy_disagreement=not bool(mask[top.position]),
        cosine_margin=cosine_margin,
        weakest=weakest,
        ranked_all=False,
    )


def _view(
    index: MenuIndex,
    text: str,
    vector: FloatMatrix,
    mask: npt.NDArray[np.bool_],
    calibrated: bool,
    weight: float,
) -> tuple[Best, Best | None, npt.NDArray[np.float64] | None]:
    """The best chosen and best other tool of one view of the context (and its lexical scores)."""
    chosen_at = np.flatnonzero(mask)
    if not calibrated:
        return _top(chosen_at, index.seed_scores(vector, chosen_at)), index.best_seed(vector, mask), None
    assert index.lexicon is not None
    lexical = index.lexicon.scores(text)
    scores = index.calibrated_scores(vector, chosen_at, lexical, weight)
    return _top(chosen_at, scores), index.best_calibrated(vector, mask, lexical, weight), lexical


def _weakest(
    index: MenuIndex,
    context_text: str,
    context: FloatMatrix,
    mask: npt.NDArray[np.bool_],
    lexical: npt.NDArray[np.float64] | None,
    segments: Sequence[tuple[str, FloatMatrix]],
    weight: float,
) -> tuple[int, float]:
    """Each chosen tool's best lead over the best unchosen one across the views; the weakest wins."""
    chosen_at = np.flatnonzero(mask)
    leads = []
    for text, vector in ((context_text, context), *segments):
        view_lexical = index.lexicon.scores(text) if index.lexicon is not None else lexical
        assert view_lexical is not None
        scores = index.calibrated_scores(vector, chosen_at, view_lexical, weight)
        other = index.best_calibrated(vector, mask, view_lexical, weight)
        assert other is not None
        leads.append(scores - other.score)
    evidence = np.max(np.stack(leads), axis=0)
    weakest = int(np.argmin(evidence))
    return int(chosen_at[weakest]), float(evidence[weakest])
