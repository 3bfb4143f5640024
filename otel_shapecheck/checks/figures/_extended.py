"""Extended derivations: the cell arithmetic analysts do, asked only of figures the closed set leaves out.

Over pairs of cells (:mod:`._cells`) the layer computes, once per basis:

- ``difference`` a − b, of two cells of one row, text or column that are both percentages (the figure
  then wears ``%``) or both not;
- ``sum`` a + b and ``average`` (a + b) / 2, likewise, of two cells of one row or one text;
- ``percent-change`` 100 · (a − b) / b, ``percent-of`` 100 · a / b (figures wearing ``%``) and ``ratio``
  a / b, of two cells of one row or one text that are not percentages and have the same sign;
- ``share-of-total`` 100 · x / total, of a cell and its column's total: the column's sum, and its
  largest cell (a column that lists its own total row, as financial tables do), for a column whose
  cells share one sign;
- for a figure wearing a size unit (``TB``, ``GiB``, ``Gbps``…), a difference, sum or average of
  magnitude ≥ 1000 divided by 1000^k or 1024^k (k = 1…5), the scaling the closed set uses.

A row holds one item across periods or measures: its changes, averages and ratios are what analysts
compute. A column holds the items of one quantity: their differences and each item's share of the
total are; the sums, averages and quotients of every other pair of items were measured to add more
coincidences than answers (``benchmarks/bench_figures_tatqa.py``, tune half).

A figure matches a candidate at its written precision, as in the closed set; the candidate is accepted
only when the coincidence chance of the figure against every candidate it could have matched
(:mod:`._coincidence`) is below ``p``. Candidates are kept as sorted arrays and found by bisection. The
pairs are bounded: past :data:`MAX_EXTENDED_NUMBERS` distinct carried numbers, :data:`MAX_EXTENDED_CELLS`
carried numbers or :data:`MAX_PAIRS` pairs the layer is skipped, which can only flag more figures,
never fewer.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, Literal, NamedTuple

import numpy as np

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._answer_words import AnswerWords
from otel_shapecheck.checks.figures._basis import UNIT_SCALES, FigureBasis, match_tolerance
from otel_shapecheck.checks.figures._cells import CellGroup, Pairing, read_cells
from otel_shapecheck.checks.figures._coincidence import coincidence_chance
from otel_shapecheck.checks.figures._columns import finite_sum
from otel_shapecheck.checks.figures._focus import (
    Focus,
    FocusCandidates,
    find_focus,
    focus_candidates,
)
from otel_shapecheck.checks.figures._table_labels import TableLabels
from otel_shapecheck.checks.figures._text import Figure, written_decimals

MAX_EXTENDED_NUMBERS: Final = 10_000
"""Distinct cells read by the extended derivations; past it the layer is skipped (and says so)."""

MAX_EXTENDED_CELLS: Final = 20_000
"""Carried numbers (repeats included) read by the extended derivations; past it the layer is skipped."""

MAX_PAIRS: Final = 100_000
"""Ordered pairs of cells the extended derivations try; past it the layer is skipped (and says so)."""

MAX_EXTENDED_FIGURES: Final = 2_000
"""Figures of one answer the extended derivations weigh; past it the layer is skipped (and says so). Each
costs a search of the rows its sentence names, so an answer of a hundred thousand figures would hold the
worker for minutes."""

OPERATIONS: Final = (
    "difference",
    "percent-change",
    "average",
    "percent-of",
    "ratio",
    "sum",
    "share-of-total",
)
"""The extended derivations, in the order a figure that several of them explain names them."""
FOCUSED: Final = "named-cells"
"""The derivation of a figure matched among the cells the answer's own words name (:mod:`._focus`)."""
_DIFFERENCE, _PERCENT_CHANGE, _AVERAGE, _PERCENT_OF, _RATIO, _SUM, _SHARE = range(len(OPERATIONS))
_SIZE_UNITS: Final = frozenset(
    ("kb", "mb", "gb", "tb", "pb", "kib", "mib", "gib", "tib", "pib", "mbps", "gbps")
)

FigureKind = Literal["percent", "size", "plain"]


def figure_kind(unit: str) -> FigureKind:
    """Which candidates a figure is asked against, by its unit: percentages, sizes, or plain numbers."""
    if unit in ("%", "percent"):
        return "percent"
    return "size" if unit.removesuffix("/s") in _SIZE_UNITS else "plain"


@dataclass(frozen=True)
class Inference:
    """The extended derivation a figure matched, and the chance a random figure would have matched one."""

    derivation: str
    """One of :data:`OPERATIONS`."""
    source: str
    """The operands and where they sit: ``(5765.2 − 5050.2) / 5050.2, row Total``."""
    chance: float
    limit: float = 1.0
    """The chance it must stay under to be accepted: ``p``, or the named cells' (:func:`named_limit`)."""

    @property
    def accepted(self) -> bool:
        """Whether the chance is under the limit."""
        return self.chance < self.limit


NAMED_FACTOR: Final = 10.0
"""The cells the answer's words name are accepted below ``min(NAMED_CAP, NAMED_FACTOR · p)``: their few
candidates were chosen by the words, never by the figure's value. Chosen with ``p`` and
:data:`NAMED_CAP` (``benchmarks/bench_figures_tatqa.py``, see there); at the default p (5 %) the limit
is 0.5, which factors 10, 20 and 50 all give, and the rule's ties go to the smallest."""

MISSED_FOCUS_FACTOR: Final = 0.25
"""When the answer's words name cells and the figure is none of their candidates, the whole table is
asked below ``MISSED_FOCUS_FACTOR · p``: the figure disagrees with what its own sentence says it is, and
the named cells already had their look, so the second look gets a quarter of the bound. Chosen on the
whole of the study data's tuning file with ``p`` and :data:`NAMED_FACTOR` (a quarter of 1, ½, ¼, ⅕, ⅒
and 0); it halved the invented figures the whole-table look let through for 1 point of faithful ones."""


NAMED_CAP: Final = 0.5
"""The most the named cells' limit can be, whatever ``p`` and the factor: ``min(NAMED_CAP, factor · p)``.
Below 1 it is a real bound: a figure matched among the named cells at a chance of coincidence of 92 %
is no evidence that it was computed from them. Chosen with ``p`` and :data:`NAMED_FACTOR` on the four
seen files together (both TAT-QA files, FinQA's and ConvFinQA's), by the rule written down before the
FinQA sample report set was measured (docs/figures.md): of p × factor (1, 2, 5, 10, 20, 50) × cap (0.1,
0.2, 0.3, 0.4, 0.5), the setting accepting the most faithful worded figures among those letting at most
1 % of mutated and 0.5 % of invented figures through, worded and bare. At the default p (5 %) the
limit is 0.5: a match
among the named cells is accepted when a random number of the figure's precision would miss their
candidates at least as often as it would hit one."""


def named_limit(coincidence: float, factor: float = NAMED_FACTOR, cap: float = NAMED_CAP) -> float:
    """The chance a match among the named cells must stay under, for the bound ``p``."""
    return min(cap, factor * coincidence)


_Part = tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""Candidates of one operation: its code, values, first cells, second cells (or totals), groups, and
the rank that decides which of several matching candidates is named (rows first, then texts, columns,
shares; within one group the order of :data:`OPERATIONS`)."""


class _Candidates:
    """Candidate values of one kind sorted for bisection, with how each was made (looked up when named)."""

    def __init__(self, parts: list[_Part]) -> None:
        values = np.concatenate([part[1] for part in parts]) if parts else np.empty(0)
        order = np.argsort(values)
        self.values = values[order]
        self._order = order
        """Sorted position → position in the parts as concatenated, where the fields below are kept."""
        operations = [np.full(part[1].size, part[0], np.int8) for part in parts]
        self._operation = np.concatenate(operations or [np.empty(0, np.int8)])
        self._first = np.concatenate([part[2] for part in parts] or [np.empty(0, np.int64)])
        self._second = np.concatenate([part[3] for part in parts] or [np.empty(0, np.int64)])
        self._group = np.concatenate([part[4] for part in parts] or [np.empty(0, np.int64)])
        self._rank = np.concatenate([part[5] for part in parts] or [np.empty(0, np.int64)])
        new = np.ones(self.values.size, dtype=bool)
        new[1:] = self.values[1:] != self.values[:-1]
        self.distinct = self.values[new]

    def made(self, index: int) -> tuple[int, int, int, int]:
        """How the sorted candidate at ``index`` was made: operation, first cell, second cell, group."""
        at = int(self._order[index])
        return int(self._operation[at]), int(self._first[at]), int(self._second[at]), int(self._group[at])

    def count_within(self, low: float, high: float) -> int:
        """Distinct candidate values in ``[low, high]``."""
        return int(
            np.searchsorted(self.distinct, high, "right") - np.searchsorted(self.distinct, low, "left")
        )

    def preferred_within(self, low: float, high: float) -> int | None:
        """The index of the lowest-ranked candidate in ``[low, high]``, if any."""
        start = int(np.searchsorted(self.values, low, "left"))
        stop = int(np.searchsorted(self.values, high, "right"))
        if start >= stop:
            return None
        return start + int(np.argmin(self._rank[self._order[start:stop]]))


class _PairArrays(NamedTuple):
    """Every pair of cells the layer tries, with what the operations need of them."""

    first: np.ndarray
    second: np.ndarray
    group: np.ndarray
    a: np.ndarray
    b: np.ndarray
    both: np.ndarray
    """Both cells are percentages."""
    neither: np.ndarray
    """Neither cell is a percentage."""
    once: np.ndarray
    """A pair of one row or text, taken in one order only (for the symmetric sum and average)."""
    quotient: np.ndarray
    """A pair of one row or text, neither a percentage, of the same sign: its quotients are taken."""


class ExtendedDerivations:
    """The extended candidates of one basis, built when first asked, each kind only when a figure needs it.

    ``skipped`` says why the layer was not built (a bound), and is ``None`` when it was.
    """

    def __init__(
        self, basis: FigureBasis, pairing: Pairing = "structural", tool_results: Sequence[ToolResult] = ()
    ) -> None:
        self._basis = basis
        self._tool_results = tool_results
        self._labels: TableLabels | None = None
        self._last_focus: tuple[AnswerWords, Focus | None] | None = None
        """The focus of the last words asked: the figures of one sentence share its words."""
        self.skipped: str | None = None
        self._totals: list[float] = []
        """The totals share-of-total candidates divide by: column sums and largest cells."""
        self._kinds: dict[str, _Candidates] = {}
        self._pairs: _PairArrays | None = None
        numbers = len(basis.structure.values)
        if numbers > MAX_EXTENDED_CELLS:
            self.skipped = (
                f"{numbers} carried numbers, over the {MAX_EXTENDED_CELLS} the extended derivations read"
            )
            return
        distinct = int(np.unique(np.asarray(basis.structure.values, dtype=np.float64)).size)
        if distinct > MAX_EXTENDED_NUMBERS:
            self.skipped = (
                f"{distinct} distinct carried numbers, over the {MAX_EXTENDED_NUMBERS} "
                "the extended derivations read"
            )
            return
        self._cells = read_cells(basis.structure, pairing)
        pairs = sum(len(group.members) * (len(group.members) - 1) for group in self._cells.groups)
        if pairs > MAX_PAIRS:
            self.skipped = f"{pairs} pairs of cells, over the {MAX_PAIRS} the extended derivations try"

    def infer(
        self,
        figure: Figure,
        words: AnswerWords | None = None,
        coincidence: float = 1.0,
        named_factor: float = NAMED_FACTOR,
        named_cap: float = NAMED_CAP,
    ) -> Inference | None:
        """The preferred extended derivation matching ``figure`` with its chance, or ``None`` (no match).

        With the ``words`` of the answer around the figure, the cells they name are asked first
        (:mod:`._focus`): a match there whose chance, counted over the focus's own candidates, is below
        ``coincidence`` is returned. Otherwise every pair of cells is asked, and the chance counts the
        focus's candidates too. The caller accepts the result only below its ``p``; the chance is
        returned either way.
        """
        decimals = written_decimals(figure.value)
        target = float(figure.value) if decimals is not None else math.nan
        if self.skipped is not None or decimals is None or not math.isfinite(target):
            return None
        tolerance = match_tolerance(target, decimals)
        focused = self._focused(figure, words, target, tolerance) if words is not None else None
        if focused is not None and focused[0] is not None:
            found_named = replace(focused[0], limit=named_limit(coincidence, named_factor, named_cap))
            if found_named.accepted:
                return found_named
        extra = focused[1] if focused is not None else None
        missed = focused is not None and focused[0] is None
        limit = MISSED_FOCUS_FACTOR * coincidence if missed else coincidence
        windows = [
            (self._kind(name), scale, scale_name)
            for name, scale, scale_name in _windows(figure_kind(figure.unit))
        ]
        found = None
        for candidates, scale, scale_name in windows:
            index = candidates.preferred_within((target - tolerance) * scale, (target + tolerance) * scale)
            if index is not None:
                found = (candidates, index, scale_name)
                break
        if found is None:
            return None
        derivation, source = self._describe(*found)

        def within(low: float, high: float) -> int:
            count = self._basis.closed_candidates_within(low, high)
            for candidates, factor, _ in windows:
                count += candidates.count_within(low * factor, high * factor)
            return count + (extra.count_within(low, high) if extra is not None else 0)

        return Inference(derivation, source, coincidence_chance(figure.value, within), limit)

    def _focused(
        self, figure: Figure, words: AnswerWords, target: float, tolerance: float
    ) -> tuple[Inference | None, FocusCandidates] | None:
        """The match among the cells the answer's words name, with its chance, and those candidates."""
        kind = figure_kind(figure.unit)
        if kind == "size":
            return None
        if self._labels is None:
            self._labels = TableLabels(self._cells, self._basis.structure.paths, self._tool_results)
        focus = self._focus_of(words)
        if focus is None:
            return None
        candidates = focus_candidates(focus, self._cells, self._labels, words.operations, kind == "percent")
        index = candidates.first_within(target - tolerance, target + tolerance)
        if index is None:
            return None, candidates
        where = f"row {' / '.join(focus.rows)}"
        if focus.columns:
            where += f", {' / '.join(focus.columns)}"
        chance = coincidence_chance(figure.value, candidates.count_within)
        return Inference(FOCUSED, f"{candidates.words[index]}, {where}", chance), candidates

    def _focus_of(self, words: AnswerWords) -> Focus | None:
        """The cells the sentence names; when it names no row, the rows the sentence read with the ones
        before it names, nearest first; failing those, the one column the sentence (or its context)
        names."""
        assert self._labels is not None
        if self._last_focus is not None and self._last_focus[0] is words:
            return self._last_focus[1]
        column_focus = None
        for read in (words, *words.context):
            focus = find_focus(read, self._labels, self._cells)
            if focus is not None and not focus.by_column:
                break
            column_focus = column_focus or focus
        else:
            focus = column_focus
        self._last_focus = (words, focus)
        return focus

    def _kind(self, name: str) -> _Candidates:
        """The candidates of one kind (``percent``, ``plain``, ``large``), built on first use."""
        if name not in self._kinds:
            pairs = self._pair_arrays()
            with np.errstate(all="ignore"):
                if name == "percent":
                    self._kinds[name] = _Candidates([*_percent_parts(pairs), self._shares()])
                else:
                    plain, large = _plain_parts(pairs)
                    self._kinds["plain"], self._kinds["large"] = _Candidates(plain), _Candidates(large)
        return self._kinds[name]

    def _pair_arrays(self) -> _PairArrays:
        if self._pairs is None:
            cells = self._cells
            first, second, group = _pairs(cells.groups)
            a, b = cells.values[first], cells.values[second]
            percent_a, percent_b = cells.percent[first], cells.percent[second]
            neither = ~percent_a & ~percent_b
            in_row = np.array([grouping.kind != "column" for grouping in cells.groups] or [False], dtype=bool)
            in_row = in_row[group]
            self._pairs = _PairArrays(
                first,
                second,
                group,
                a,
                b,
                both=percent_a & percent_b,
                neither=neither,
                once=(first < second) & in_row,
                quotient=in_row & neither & (np.sign(a) * np.sign(b) > 0),
            )
        return self._pairs

    def _shares(self) -> _Part:
        """100 · x / total for the non-percentage cells of each column, of its sum and of its largest cell.

        The second index of each candidate names its total: a position in :attr:`_totals`.
        """
        parts: list[tuple[np.ndarray, np.ndarray, int, int]] = []
        numbers, percent = self._cells.values, self._cells.percent
        for index, column in enumerate(self._cells.columns):
            members = np.asarray(column.members, dtype=np.int64)
            members = members[~percent[members]]
            cells = numbers[members]
            nonzero = cells[cells != 0]
            if members.size < 2 or not (np.all(nonzero > 0) or np.all(nonzero < 0)):
                continue  # a share is a part of a total of like parts, not of a net of gains and losses
            largest = int(np.argmax(np.abs(cells)))
            keep = np.arange(members.size) != largest
            for total, parts_of in (
                (finite_sum(cells.tolist()), members),
                (float(cells[largest]), members[keep]),
            ):
                if total:
                    self._totals.append(total)
                    parts.append((parts_of, 100 * numbers[parts_of] / total, len(self._totals) - 1, index))
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return (_SHARE, np.empty(0), empty, empty, empty, empty)
        members = np.concatenate([part[0] for part in parts])
        totals = np.concatenate([np.full(part[0].size, part[2]) for part in parts])
        columns = np.concatenate([np.full(part[0].size, part[3]) for part in parts])
        values = np.concatenate([part[1] for part in parts])
        keep = np.isfinite(values)
        rank = _rank(columns[keep] + len(self._cells.groups), _SHARE)
        return (_SHARE, values[keep], members[keep], totals[keep], columns[keep], rank)

    def _describe(self, kind: _Candidates, index: int, scale: str) -> tuple[str, str]:
        """The derivation's name and its words: operands, operation and where the cells sit."""
        operation, first, second, group = kind.made(index)
        a = _number(float(self._cells.values[first]))
        labels = self._cells.row_labels
        if operation == _SHARE:
            column = self._cells.columns[group]
            total = _number(self._totals[second])
            return OPERATIONS[
                operation
            ], f"100 × {a} / {total} (total of {column.label}), row {labels[first]}"
        b = _number(float(self._cells.values[second]))
        words = {
            _DIFFERENCE: f"{a} − {b}",
            _PERCENT_CHANGE: f"({a} − {b}) / {b}",
            _AVERAGE: f"({a} + {b}) / 2",
            _PERCENT_OF: f"100 × {a} / {b}",
            _RATIO: f"{a} / {b}",
            _SUM: f"{a} + {b}",
        }[operation]
        if scale:
            words = f"({words}) ÷ {scale}"
        return OPERATIONS[
            operation
        ], f"{words}, {_where(self._cells.groups[group], labels[first], labels[second])}"


def _windows(kind: FigureKind) -> list[tuple[str, float, str]]:
    """The candidate kinds a figure is asked against, each at a scale (1, or a unit scale)."""
    if kind == "percent":
        return [("percent", 1.0, "")]
    if kind == "plain":
        return [("plain", 1.0, "")]
    return [("plain", 1.0, ""), *(("large", scale, name) for scale, name in UNIT_SCALES)]


def _part(pairs: _PairArrays, operation: int, mask: np.ndarray, values: np.ndarray) -> _Part:
    keep = mask & np.isfinite(values)
    group = pairs.group[keep]
    return (operation, values[keep], pairs.first[keep], pairs.second[keep], group, _rank(group, operation))


def _rank(group: np.ndarray, operation: int) -> np.ndarray:
    return group * len(OPERATIONS) + operation


def _percent_parts(pairs: _PairArrays) -> list[_Part]:
    """Candidates for a figure wearing ``%``: changes and quotients of amounts, arithmetic of percentages."""
    a, b, both = pairs.a, pairs.b, pairs.both
    return [
        _part(pairs, _DIFFERENCE, both, a - b),
        _part(pairs, _PERCENT_CHANGE, pairs.quotient, 100 * (a - b) / b),
        _part(pairs, _AVERAGE, both & pairs.once, (a + b) / 2),
        _part(pairs, _PERCENT_OF, pairs.quotient, 100 * a / b),
        _part(pairs, _SUM, both & pairs.once, a + b),
    ]


def _plain_parts(pairs: _PairArrays) -> tuple[list[_Part], list[_Part]]:
    """Candidates for a plain figure, and the additive ones of magnitude ≥ 1000 to scale for a size."""
    a, b, neither = pairs.a, pairs.b, pairs.neither
    plain = [
        _part(pairs, _DIFFERENCE, neither, a - b),
        _part(pairs, _AVERAGE, neither & pairs.once, (a + b) / 2),
        _part(pairs, _RATIO, pairs.quotient, a / b),
        _part(pairs, _SUM, neither & pairs.once, a + b),
    ]
    large = []
    for operation, values, first, second, group, rank in plain:
        if operation != _RATIO:
            big = np.abs(values) >= 1000
            large.append((operation, values[big], first[big], second[big], group[big], rank[big]))
    return plain, large


def _where(group: CellGroup, first: str, second: str) -> str:
    if group.kind == "column":
        return f"{group.label}, rows {first} and {second}"
    return group.label


def _pairs(groups: tuple[CellGroup, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every ordered pair of different cells within each group: first cells, second cells, group indices.

    Groups of one size are stacked into one matrix, so a table of many short rows costs a few array
    operations, not a Python loop over pairs.
    """
    by_size: dict[int, list[int]] = {}
    for index, group in enumerate(groups):
        by_size.setdefault(len(group.members), []).append(index)
    firsts, seconds, owners = [], [], []
    for size, indices in by_size.items():
        matrix = np.asarray([groups[index].members for index in indices], dtype=np.int64)
        left, right = np.nonzero(~np.eye(size, dtype=bool))
        firsts.append(matrix[:, left].ravel())
        seconds.append(matrix[:, right].ravel())
        owners.append(np.repeat(np.asarray(indices, dtype=np.int64), left.size))
    if not firsts:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(firsts), np.concatenate(seconds), np.concatenate(owners)


def _number(value: float) -> str:
    """A cell value as the derivation words print it: ``5765.2``, ``14212``, ``(-9401)``."""
    text = str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return f"({text})" if value < 0 else text
