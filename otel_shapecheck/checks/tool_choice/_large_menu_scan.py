"""Large menus scored by one bounded scan: the best chosen and best other tool, exact, without a ranking.

A menu of thousands of tools (an agent on a large MCP registry) is not ranked whole. Its tool vectors are
kept once per distinct menu as float32 matrices with one *column* per tool (the seed texts, and for the
calibrated scoring the parameter texts), with each tool's inverse norm. A call scans each matrix once,
a dense context vector with one BLAS product, a sparse one (as the hashing embedder's) over the rows of
the dimensions it uses only, which gives every tool's cosine to within a proven bound
(:func:`cosine_error`). The margin needs the best tool outside the chosen ones:
the few tools whose approximate score lies within twice that bound of the best approximate score are
re-scored exactly as ranking the whole menu scores them, and the best of those is the answer, ties going
to the earlier tool. Tests check the result against brute force over the same vectors.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon
from otel_shapecheck.checks.tool_choice._margin import cosine_scores
from otel_shapecheck.embedding._vectors import FloatMatrix

INDEX_MENU_TOOLS: Final = 2048
"""Menus with more tools than this are scored through a :class:`MenuIndex` (smaller ones rank whole)."""
EXACT_CHUNK: Final = 4096
"""Columns scored exactly per product: bounds the float64 copy of a re-scoring (12 MiB at 384 dims)."""
_SPARSE_SHARE: Final = 0.5
"""A context vector with fewer non-zero dimensions than this share of all is scanned over those only."""

FloatArray = npt.NDArray[np.float64]
Positions = npt.NDArray[np.intp]


def cosine_error(dims: int) -> float:
    """A bound on ``|approximate − exact|`` cosine for vectors of ``dims`` dimensions.

    The scan's dot product of the unit context (rounded to float32) with a tool's float32 column, summed
    in float32 in any order, is within ``(dims · u / (1 − dims · u) + u) · ‖v‖`` of the real one (``u``
    = 2⁻²⁴, Cauchy–Schwarz over ``|q|·|v|``), and it is scaled by ``1 / ‖v‖``; the exact scores are
    float64, whose own error is some 10⁻¹³. Twice the float32 term, plus 10⁻⁹, leaves room for both.
    """
    unit = 2.0**-24
    return 2.0 * (dims * unit / (1.0 - dims * unit) + unit) + 1e-9


@dataclass(frozen=True)
class Best:
    """A menu position and its exact score."""

    position: int
    score: float


def better(a: Best | None, b: Best | None) -> Best | None:
    """The higher score; on a tie the earlier menu position (the ranking's stable order)."""
    if a is None or (b is not None and (b.score, -b.position) > (a.score, -a.position)):
        return b
    return a


def top(positions: Positions, scores: FloatArray) -> Best:
    """The best of ``scores`` (one per position), the earliest position on a tie."""
    best = float(scores.max())
    return Best(int(positions[scores == best].min()), best)


class ToolMatrix:
    """One kind of tool vector of a menu: a ``(dims, tools)`` float32 matrix and each tool's inverse norm.

    Columns, not rows, so that a sparse context reads only the rows of its own dimensions, each one
    contiguous; a dense context reads the whole matrix once. ``layout``, when given, says which distinct
    text each column holds the vector of (columns of one text are equal): an exact score is computed
    once per text, so a menu whose tools share a few texts is re-scored for those few.
    """

    def __init__(
        self, columns: FloatMatrix, inverse_norms: FloatArray, layout: Positions | None = None
    ) -> None:
        self.columns = columns
        self.inverse_norms = inverse_norms
        self.layout = layout

    @property
    def nbytes(self) -> int:
        """Bytes the vectors, norms and layout hold."""
        layout = self.layout.nbytes if self.layout is not None else 0
        return int(self.columns.nbytes + self.inverse_norms.nbytes + layout)

    def exact(self, context: FloatMatrix, positions: Positions) -> FloatArray:
        """Cosines at ``positions`` exactly as :func:`cosine_scores` gives them over the whole menu.

        One column per distinct text among ``positions`` is scored (each row's cosine does not depend on
        the rows scored with it), :data:`EXACT_CHUNK` columns at a time, so the float64 copy this needs
        stays bounded however many positions tie.
        """
        if not np.any(context):  # a context with no vector scores 0 against every tool
            return np.zeros(len(positions))
        scored, spread = positions, None
        if self.layout is not None and len(positions) > 1:
            texts, first, inverse = np.unique(self.layout[positions], return_index=True, return_inverse=True)
            if len(texts) < len(positions):
                scored, spread = positions[first], inverse.reshape(-1)
        scores = np.empty(len(scored))
        for start in range(0, len(scored), EXACT_CHUNK):
            chunk = scored[start : start + EXACT_CHUNK]
            scores[start : start + len(chunk)] = cosine_scores(context, self.columns[:, chunk].T)
        return scores[spread] if spread is not None else scores

    def approximate(self, unit: npt.NDArray[np.float32], nonzero: Positions) -> FloatArray:
        """Every tool's cosine with the unit context, within :func:`cosine_error` of the exact one."""
        if len(nonzero) == 0:
            return np.zeros(self.columns.shape[1])
        if len(nonzero) < _SPARSE_SHARE * len(unit):
            # Row by row in place: gathering the rows for one product would copy them first.
            dots = np.zeros(self.columns.shape[1], dtype=np.float32)
            term = np.empty_like(dots)
            for dim in nonzero:
                np.multiply(self.columns[dim], unit[dim], out=term)
                dots += term
        else:
            dots = unit @ self.columns
        return dots.astype(np.float64) * self.inverse_norms


@dataclass(frozen=True)
class Query:
    """One view of a call's context, ready to scan: the vector, its unit float32 form and its support."""

    vector: FloatMatrix
    unit: npt.NDArray[np.float32]
    nonzero: Positions

    @classmethod
    def of(cls, vector: FloatMatrix) -> Query:
        """The query of a context vector (a zero vector scans as all zero cosines)."""
        query = np.asarray(vector, dtype=np.float64).reshape(-1)
        norm = float(np.sqrt(query @ query))
        unit = (query / norm if norm > 0 else query).astype(np.float32)
        return cls(vector, unit, np.flatnonzero(unit))


class MenuIndex:
    """One large menu: its seed and (calibrated) parameter vectors by column, its names and BM25 lexicon.

    ``parameter`` is the seed matrix itself when every tool's parameter text is its seed text.
    """

    def __init__(
        self,
        names: tuple[str, ...],
        seed: ToolMatrix,
        parameter: ToolMatrix | None,
        lexicon: MenuLexicon | None,
    ) -> None:
        self.names = names
        self.position = {name: i for i, name in enumerate(names)}
        """Each tool's menu position by name, built once so a call reads only its chosen names."""
        self.seed = seed
        self.parameter = parameter
        self.lexicon = lexicon
        self.error = cosine_error(seed.columns.shape[0])
        """:func:`cosine_error` of this menu's vectors."""
        self.nbytes = seed.nbytes + (
            parameter.nbytes if parameter is not None and parameter is not seed else 0
        )

    def __len__(self) -> int:
        return len(self.names)

    def chosen_mask(self, chosen: Sequence[str]) -> npt.NDArray[np.bool_]:
        """``True`` at the menu position of each chosen name (names not on the menu are ignored)."""
        mask = np.zeros(len(self.names), dtype=bool)
        mask[[self.position[name] for name in chosen if name in self.position]] = True
        return mask


def best_excluding(
    approximate: FloatArray,
    excluded: npt.NDArray[np.bool_],
    error: float,
    exact: Callable[[Positions], FloatArray],
) -> Best | None:
    """The best position not ``excluded`` by exact score, from scores each within ``error`` of it.

    The best exact score is at least the best approximate one minus ``error``, and any position reaching
    it has an approximate score of at least that minus ``error`` again; those positions, and only those,
    are scored exactly. ``None`` when every position is excluded.
    """
    if bool(excluded.all()):
        return None
    open_scores = np.where(excluded, -np.inf, approximate)
    floor = float(open_scores.max()) - 2.0 * error
    candidates = np.flatnonzero(open_scores >= floor)
    return top(candidates, exact(candidates))


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
