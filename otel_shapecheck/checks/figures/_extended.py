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
pairs are bounded: past :data:`MAX_EXTENDED_NUMBERS` distinct cells or :data:`MAX_PAIRS` pairs the
layer is skipped, which can only flag more figures, never fewer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

from otel_shapecheck.checks.figures._basis import UNIT_SCALES, FigureBasis, match_tolerance
from otel_shapecheck.checks.figures._cells import CellGroup, Pairing, read_cells
from otel_shapecheck.checks.figures._coincidence import coincidence_chance
from otel_shapecheck.checks.figures._columns import finite_sum
from otel_shapecheck.checks.figures._text import Figure, written_decimals

MAX_EXTENDED_NUMBERS: Final = 10_000
"""Distinct cells read by the extended derivations; past it the layer is skipped (and says so)."""

MAX_PAIRS: Final = 100_000
"""Ordered pairs of cells the extended derivations try; past it the layer is skipped (and says so)."""

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


class _Candidates:
    """Candidate values of one kind sorted for bisection, with how each was made."""

    def __init__(self, parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]) -> None:
        values = np.concatenate([part[1] for part in parts]) if parts else np.empty(0)
        order = np.argsort(values, kind="stable")
        self.values = values[order]
        self.made = order
        """Each sorted value's place in the order it was made: the smaller, the more preferred."""
        self.operation = np.concatenate(
            [np.full(p[1].size, p[0], np.int8) for p in parts] or [np.empty(0, np.int8)]
        )
        self.operation = self.operation[order]
        self.first = np.concatenate([p[2] for p in parts] or [np.empty(0, np.int64)])[order]
        self.second = np.concatenate([p[3] for p in parts] or [np.empty(0, np.int64)])[order]
        self.group = np.concatenate([p[4] for p in parts] or [np.empty(0, np.int64)])[order]
        self.distinct = np.unique(self.values)

    def count_within(self, low: float, high: float) -> int:
        """Distinct candidate values in ``[low, high]``."""
        return int(
            np.searchsorted(self.distinct, high, "right") - np.searchsorted(self.distinct, low, "left")
        )

    def preferred_within(self, low: float, high: float) -> int | None:
        """The index of the first-made candidate in ``[low, high]``, if any."""
        start = int(np.searchsorted(self.values, low, "left"))
        stop = int(np.searchsorted(self.values, high, "right"))
        if start >= stop:
            return None
        return start + int(np.argmin(self.made[start:stop]))


class ExtendedDerivations:
    """The extended candidates of one basis, built once, asked per figure.

    ``skipped`` says why the layer was not built (a bound), and is ``None`` when it was.
    """

    def __init__(self, basis: FigureBasis, pairing: Pairing = "structural") -> None:
        self._basis = basis
        self.skipped: str | None = None
        self._cells = read_cells(basis.structure, pairing)
        self._totals: list[float] = []
        """The totals share-of-total candidates divide by: column sums and largest cells."""
        self._kinds: dict[str, _Candidates] = {}
        pairs = sum(len(group.members) * (len(group.members) - 1) for group in self._cells.groups)
        if self._cells.distinct > MAX_EXTENDED_NUMBERS:
            self.skipped = (
                f"{self._cells.distinct} distinct carried numbers, over the {MAX_EXTENDED_NUMBERS} "
                "the extended derivations read"
            )
        elif pairs > MAX_PAIRS:
            self.skipped = f"{pairs} pairs of cells, over the {MAX_PAIRS} the extended derivations try"
        else:
            self._build()

    def infer(self, figure: Figure) -> Inference | None:
        """The preferred extended derivation matching ``figure`` with its chance, or ``None`` (no match).

        The caller accepts it only below its ``p``; the chance is returned either way.
        """
        decimals = written_decimals(figure.value)
        target = float(figure.value) if decimals is not None else math.nan
        if self.skipped is not None or decimals is None or not math.isfinite(target):
            return None
        tolerance = match_tolerance(target, decimals)
        windows = self._windows(figure_kind(figure.unit))
        found = None
        for name, scale, scale_name in windows:
            index = self._kinds[name].preferred_within(
                (target - tolerance) * scale, (target + tolerance) * scale
            )
            if index is not None:
                found = (self._kinds[name], index, scale_name)
                break
        if found is None:
            return None
        derivation, source = self._describe(*found)

        def within(low: float, high: float) -> int:
            count = self._basis.closed_candidates_within(low, high)
            for kind, factor, _ in windows:
                count += self._kinds[kind].count_within(low * factor, high * factor)
            return count

        return Inference(derivation, source, coincidence_chance(figure.value, within))

    @staticmethod
    def _windows(kind: FigureKind) -> list[tuple[str, float, str]]:
        """The candidate kinds a figure is asked against, each at a scale (1, or a unit scale)."""
        if kind == "percent":
            return [("percent", 1.0, "")]
        if kind == "plain":
            return [("plain", 1.0, "")]
        return [("plain", 1.0, ""), *(("large", scale, name) for scale, name in UNIT_SCALES)]

    def _build(self) -> None:
        cells = self._cells
        first, second, group = _pairs(cells.groups)
        a, b = cells.values[first], cells.values[second]
        percent_a, percent_b = cells.percent[first], cells.percent[second]
        both, neither = percent_a & percent_b, ~percent_a & ~percent_b
        in_row = np.array([grouping.kind != "column" for grouping in cells.groups] or [False], dtype=bool)
        in_row = in_row[group]
        once = (first < second) & in_row
        quotient = in_row & neither & (np.sign(a) * np.sign(b) > 0)
        percent: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        plain: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        large: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

        def add(
            into: list[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
            op: int,
            mask: np.ndarray,
            values: np.ndarray,
        ) -> None:
            keep = mask & np.isfinite(values)
            into.append((op, values[keep], first[keep], second[keep], group[keep]))
            if into is plain and op in (_DIFFERENCE, _AVERAGE, _SUM):
                big = keep & (np.abs(values) >= 1000)
                large.append((op, values[big], first[big], second[big], group[big]))

        with np.errstate(all="ignore"):
            add(plain, _DIFFERENCE, neither, a - b)
            add(percent, _DIFFERENCE, both, a - b)
            add(percent, _PERCENT_CHANGE, quotient, 100 * (a - b) / b)
            add(plain, _AVERAGE, neither & once, (a + b) / 2)
            add(percent, _AVERAGE, both & once, (a + b) / 2)
            add(percent, _PERCENT_OF, quotient, 100 * a / b)
            add(plain, _RATIO, quotient, a / b)
            add(plain, _SUM, neither & once, a + b)
            add(percent, _SUM, both & once, a + b)
        percent.append(self._shares())
        self._kinds = {
            "percent": _Candidates(percent),
            "plain": _Candidates(plain),
            "large": _Candidates(large),
        }

    def _shares(self) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """100 · x / total for the non-percentage cells of each column, of its sum and of its largest cell.

        The second index of each candidate names its total: a position in :attr:`_totals`.
        """
        values: list[float] = []
        members: list[int] = []
        totals: list[int] = []
        columns: list[int] = []
        numbers = self._cells.values
        for index, column in enumerate(self._cells.columns):
            cells = [member for member in column.members if not self._cells.percent[member]]
            signs = {bool(numbers[member] > 0) for member in cells if numbers[member] != 0}
            if len(cells) < 2 or len(signs) != 1:
                continue  # a share is a part of a total of like parts, not of a net of gains and losses
            largest = max(cells, key=lambda member: abs(float(numbers[member])))
            for total, parts in (
                (finite_sum([float(numbers[member]) for member in cells]), cells),
                (float(numbers[largest]), [member for member in cells if member != largest]),
            ):
                if not total:
                    continue
                self._totals.append(total)
                for member in parts:
                    share = 100 * float(numbers[member]) / total
                    if math.isfinite(share):
                        values.append(share)
                        members.append(member)
                        totals.append(len(self._totals) - 1)
                        columns.append(index)
        return (
            _SHARE,
            np.asarray(values, dtype=np.float64),
            np.asarray(members, dtype=np.int64),
            np.asarray(totals, dtype=np.int64),
            np.asarray(columns, dtype=np.int64),
        )

    def _describe(self, kind: _Candidates, index: int, scale: str) -> tuple[str, str]:
        """The derivation's name and its words: operands, operation and where the cells sit."""
        operation = int(kind.operation[index])
        first, second, group = int(kind.first[index]), int(kind.second[index]), int(kind.group[index])
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
    owner = np.concatenate(owners)
    order = np.argsort(owner, kind="stable")
    return np.concatenate(firsts)[order], np.concatenate(seconds)[order], owner[order]


def _number(value: float) -> str:
    """A cell value as the derivation words print it: ``5765.2``, ``14212``, ``(-9401)``."""
    text = str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return f"({text})" if value < 0 else text
