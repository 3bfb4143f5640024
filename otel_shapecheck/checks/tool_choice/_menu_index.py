"""Large menus scored through a FAISS index: the best chosen and best other tool found by search.

A menu of thousands of tools (an agent on a large MCP registry) is not ranked whole: its tool vectors sit
in FAISS flat inner-product indexes built once per distinct menu, and each call searches them for what
the margin needs, the best chosen tool (exact, over the few chosen ones) and the best tool not chosen.
The search is exact: candidates from the index are re-scored exactly, and the number of neighbours asked
for grows until no tool outside them can reach the best score found, lexical score included. Tests
check the result against brute force over the same vectors.

For the calibrated scoring the index holds ``(seed + parameter) / 2`` per tool, whose inner product with
the context is the calibrated cosine; a second index over the seed vectors gives the seed rule's
``cosine_margin``. The parameter vector is ``2 × fused − seed``, so nothing else is stored; when no tool
has parameters (each parameter text is the seed text) one index serves both.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import faiss
import numpy as np
import numpy.typing as npt

from otel_shapecheck._native import native_section
from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon
from otel_shapecheck.checks.tool_choice._margin import cosine_scores
from otel_shapecheck.checks.tool_choice._vectors import FloatMatrix

INDEX_MENU_TOOLS: Final = 2048
"""Menus with more tools than this are scored through a :class:`MenuIndex` (smaller ones rank whole)."""
_START_K = 16
_MAX_EXTRA = 4096  # tools outside the neighbours re-scored for their lexical score before k grows
_EPSILON = 1e-5  # FAISS scores in float32; exact scores are float64
_MAX_SEARCHES = 4
"""Searches before the rest is scored in one exact pass: when scores tie with the k-th neighbour's (a
context with no vector, all cosines 0), no k short of the whole menu settles it, and doubling k to the
menu's size would cost many times one exact pass."""


@dataclass(frozen=True)
class Best:
    """A menu position and its exact score."""

    position: int
    score: float


def _better(a: Best | None, b: Best | None) -> Best | None:
    """The higher score; on a tie the earlier menu position (the ranking's stable order)."""
    if a is None or (b is not None and (b.score, -b.position) > (a.score, -a.position)):
        return b
    return a


class _Flat:
    """One FAISS ``IndexFlatIP`` over a menu's rows."""

    def __init__(self, vectors: FloatMatrix) -> None:
        with native_section():
            self.index: Any = faiss.IndexFlatIP(vectors.shape[1])
            self.index.add(np.ascontiguousarray(vectors, dtype=np.float32))
        self.size = len(vectors)

    def rows(self, positions: npt.NDArray[np.intp]) -> FloatMatrix:
        with native_section():
            return np.asarray(self.index.reconstruct_batch(positions.astype(np.int64)), dtype=np.float32)

    def search(self, query: FloatMatrix, k: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        with native_section():
            sims, found = self.index.search(query.reshape(1, -1), k)
        return sims[0], found[0]


class MenuIndex:
    """One large menu: its seed vectors and (calibrated) fused vectors in FAISS, and its BM25 lexicon."""

    def __init__(
        self,
        names: tuple[str, ...],
        seed: FloatMatrix,
        parameter: FloatMatrix | None,
        lexicon: MenuLexicon | None,
    ) -> None:
        self.names = names
        self._seed = _Flat(seed)
        self._fused: _Flat | None = None
        if parameter is seed:  # no tool has parameters: the fused vectors are the seed vectors
            self._fused = self._seed
        elif parameter is not None:
            fused = np.add(seed, parameter, dtype=np.float32)
            fused *= 0.5
            self._fused = _Flat(fused)
            del fused
        self.lexicon = lexicon
        self.nbytes = seed.nbytes * (2 if self._fused is not None and self._fused is not self._seed else 1)

    def __len__(self) -> int:
        return self._seed.size

    def seed_scores(self, context: FloatMatrix, positions: npt.NDArray[np.intp]) -> npt.NDArray[np.float64]:
        """Exact seed cosines at ``positions`` (as :func:`cosine_scores` gives them)."""
        return cosine_scores(context, self._seed.rows(positions))

    def calibrated_scores(
        self,
        context: FloatMatrix,
        positions: npt.NDArray[np.intp],
        lexical: npt.NDArray[np.float64],
        weight: float,
    ) -> npt.NDArray[np.float64]:
        """Exact calibrated scores at ``positions``: ``(1 − w) · mean cosine + w · lexical``."""
        assert self._fused is not None
        seed = self._seed.rows(positions)
        parameter = 2.0 * self._fused.rows(positions) - seed
        cosines = (cosine_scores(context, seed) + cosine_scores(context, parameter)) / 2.0
        return np.asarray((1.0 - weight) * cosines + weight * lexical[positions], dtype=np.float64)

    def best_seed(self, context: FloatMatrix, excluded: npt.NDArray[np.bool_]) -> Best | None:
        """The best position not ``excluded`` by seed cosine."""
        return _best(self._seed, context, excluded, None, 0.0, lambda p: self.seed_scores(context, p))

    def best_calibrated(
        self,
        context: FloatMatrix,
        excluded: npt.NDArray[np.bool_],
        lexical: npt.NDArray[np.float64],
        weight: float,
    ) -> Best | None:
        """The best position not ``excluded`` by calibrated score."""
        assert self._fused is not None
        return _best(
            self._fused,
            context,
            excluded,
            lexical,
            weight,
            lambda p: self.calibrated_scores(context, p, lexical, weight),
        )


def _best(
    flat: _Flat,
    context: FloatMatrix,
    excluded: npt.NDArray[np.bool_],
    lexical: npt.NDArray[np.float64] | None,
    weight: float,
    exact: Callable[[npt.NDArray[np.intp]], npt.NDArray[np.float64]],
) -> Best | None:
    """Search with growing ``k`` until no position outside the neighbours can beat the best found.

    A position outside the ``k`` nearest has a cosine part at most the ``k``-th one's, so its score is at
    most ``(1 − w) · kth + w · lexical``; those whose bound reaches the best found are re-scored exactly.
    """
    size = flat.size
    if bool(excluded.all()):
        return None
    query = np.ascontiguousarray(context, dtype=np.float32)
    k = min(size, int(excluded.sum()) + _START_K)
    for _ in range(_MAX_SEARCHES):
        sims, found = flat.search(query, k)
        near = found[found >= 0].astype(np.intp)
        candidates = near[~excluded[near]]
        best = _top(candidates, exact(candidates)) if candidates.size else None
        if k >= size:
            return best
        outside = (1.0 - weight) * (float(sims[-1]) + _EPSILON)
        floor = best.score if best is not None else -np.inf
        if lexical is None or weight == 0.0:
            if outside < floor:
                return best
        else:
            reach = outside + weight * lexical >= floor
            reach[near] = False
            reach &= ~excluded
            extra = np.flatnonzero(reach)
            if extra.size <= _MAX_EXTRA:
                return _better(best, _top(extra, exact(extra))) if extra.size else best
        k = min(size, k * 2)
    remaining = np.flatnonzero(~excluded)
    return _top(remaining, exact(remaining))


def _top(positions: npt.NDArray[np.intp], scores: npt.NDArray[np.float64]) -> Best:
    best = float(scores.max())
    return Best(int(positions[scores == best].min()), best)


class MenuIndexes:
    """The :class:`MenuIndex` of recent large menus by content key, bounded by the vectors they hold."""

    def __init__(self, max_tools: int) -> None:
        self._max_tools = max_tools
        self._entries: OrderedDict[bytes, MenuIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.builds = 0

    def get(self, key: bytes, build: Callable[[], MenuIndex]) -> MenuIndex:
        """The index of menu ``key``, built (and older ones dropped past the bound) when new."""
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
                return found
        index = build()
        with self._lock:
            self.builds += 1
            self._entries[key] = index
            while len(self._entries) > 1 and sum(map(len, self._entries.values())) > self._max_tools:
                self._entries.popitem(last=False)
        return index

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    def sizes(self) -> Sequence[int]:
        """Tools of each held menu, oldest first."""
        with self._lock:
            return [len(index) for index in self._entries.values()]
