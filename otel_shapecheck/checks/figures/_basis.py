"""The figure basis: what the tool results carry, indexed for the derivation question, and that question.

A figure no tool result carries is still supported when it is one of a closed set of derivations of
carried numbers, asked in the reference's order: rounded, unit-scale (÷ 1000^k or 1024^k, k = 1…5),
complement of a percentage, a column derivation, then a unit-scaled column sum.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from typing import Final, NamedTuple

import numpy as np

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._carried import CarriedPath, path_text
from otel_shapecheck.checks.figures._columns import DerivedValues, is_percent_key
from otel_shapecheck.checks.figures._fold import BasisBuilder
from otel_shapecheck.checks.figures._text import written_decimals

UNIT_SCALES: Final = tuple(
    (float(base**power), f"{base}^{power}") for power in range(1, 6) for base in (1000, 1024)
)
_SMALL_INDEX: Final = 64  # below this many values, sorting in Python beats numpy's call overhead


class CarriedNumber(NamedTuple):
    """A number a tool result carried, and where."""

    value: float
    at: str
    """Its path in the result (``rows[0].used_pct``); ``result`` for a top-level text."""
    key: str | None = None
    """The field it sat under, when it sat directly under one."""


class DerivedNumber(NamedTuple):
    """A value reconstructed from a list of rows."""

    value: float
    derivation: str
    """``column-sum``, ``column-ratio``, ``column-difference`` or ``complement``."""
    source: str
    """How, in words over the carried fields (``sum of rows[].usable_tb``)."""


@dataclass(frozen=True)
class Derivation:
    """Why a figure no tool result carried is still supported."""

    derivation: str
    """One of ``rounded``, ``unit-scale``, ``complement`` or a column derivation (``column-sum``…)."""
    source: str
    """The carried numbers it derives from, in words (``100 × rows[].used_tb ÷ rows[].total_tb``)."""


class BasisStructure(NamedTuple):
    """The carried numbers as the extended derivations read them: the columns and the structure notes."""

    values: Sequence[float]
    paths: Sequence[CarriedPath]
    keys: Sequence[str | None]
    marks: Mapping[int, int]
    """Position → ``MARK_*`` bits of :mod:`._carried` (text token, written with ``%``, a negative)."""
    labels: Mapping[str, str]
    """Container path → its first text (a row's label)."""


class _SortedNumbers:
    """Values sorted for window look-ups, each with the earliest of its (ascending) positions."""

    def __init__(self, values: Sequence[float], positions: Sequence[int]) -> None:
        # Equal values keep only their earliest position, so a window never walks duplicates.
        if len(values) < _SMALL_INDEX:
            # Positions ascend, so walking them backwards leaves each value with its earliest one.
            earliest = dict(zip(reversed(values), reversed(positions), strict=True))
            pairs = sorted(earliest.items())
            self._values = [value for value, _ in pairs]
            self._positions = [position for _, position in pairs]
        else:
            array = np.asarray(values, dtype=np.float64)
            order = np.argsort(array, kind="stable")
            ordered = array[order]
            first = np.ones(ordered.size, dtype=bool)
            first[1:] = ordered[1:] != ordered[:-1]
            self._values = ordered[first].tolist()
            if isinstance(positions, range) and positions.start == 0 and positions.step == 1:
                self._positions = order[first].tolist()  # position i is i: no array of them needed
            else:
                self._positions = np.asarray(positions, dtype=np.int64)[order][first].tolist()
        self._low = self._values[0] if self._values else math.inf
        self._high = self._values[-1] if self._values else -math.inf

    def count_within(self, low: float, high: float) -> int:
        """How many distinct values lie in ``[low, high]``."""
        if high < self._low or low > self._high:
            return 0
        return bisect_right(self._values, high) - bisect_left(self._values, low)

    def first_within(self, low: float, high: float, accept: Callable[[float], bool]) -> int | None:
        """The earliest recorded position of an accepted value in ``[low, high]``."""
        if high < self._low or low > self._high:
            return None
        start = bisect_left(self._values, low)
        stop = bisect_right(self._values, high, start)
        best: int | None = None
        for index in range(start, stop):
            position = self._positions[index]
            if (best is None or position < best) and accept(self._values[index]):
                best = position
        return best


class FigureBasis:
    """What the tool results carry, folded for the derivation question.

    Built by :func:`figure_basis`; carried numbers are kept as parallel columns and turned into
    :class:`CarriedNumber` records only when read, which keeps a 50 000-number basis cheap.
    """

    def __init__(
        self,
        values: Sequence[float],
        paths: Sequence[CarriedPath],
        keys: Sequence[str | None],
        derived: DerivedValues,
        truncated: bool,
        named: Iterable[float] = (),
        marks: Mapping[int, int] | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> None:
        self._marks = marks or {}
        self._labels = labels or {}
        self._values = list(values)
        self._paths = paths  # kept as given: the fold's paths are built only when read
        self._keys = list(keys)
        self._derived_values = derived
        self._derived: tuple[DerivedNumber, ...] | None = None
        self._truncated = truncated
        self._named = frozenset(named)
        self._carried: tuple[CarriedNumber, ...] | None = None
        percent_keys = {key for key in set(self._keys) if key and is_percent_key(key)}
        percent = list(compress(range(len(self._keys)), map(percent_keys.__contains__, self._keys)))
        derived_values = derived.values
        sums = [
            i
            for i, (value, how) in enumerate(zip(derived_values, derived.how, strict=True))
            if how[0] == "column-sum" and abs(value) >= 1000
        ]
        self._carried_index = _SortedNumbers(self._values, range(len(self._values)))
        self._complement_index = _SortedNumbers([100 - self._values[i] for i in percent], percent)
        self._derived_index = _SortedNumbers(derived_values, range(len(derived_values)))
        self._sum_index = _SortedNumbers([derived_values[i] for i in sums], sums)

    @property
    def carried(self) -> tuple[CarriedNumber, ...]:
        """Every carried number with its path and field, in reading order."""
        if self._carried is None:
            self._carried = tuple(
                CarriedNumber(value, path_text(path), key)
                for value, path, key in zip(self._values, self._paths, self._keys, strict=True)
            )
        return self._carried

    @property
    def derived(self) -> tuple[DerivedNumber, ...]:
        """Every column-derived value (sums, ratios, differences, complements), in derivation order."""
        if self._derived is None:
            self._derived = tuple(
                DerivedNumber(self._derived_values.values[i], *self._derived_values.explain(i))
                for i in range(len(self._derived_values.values))
            )
        return self._derived

    @property
    def structure(self) -> BasisStructure:
        """The carried numbers with the structure notes a ``structure=True`` fold took (else none)."""
        return BasisStructure(self._values, self._paths, self._keys, self._marks, self._labels)

    def closed_candidates_within(self, low: float, high: float) -> int:
        """How many values of the closed derivation set lie in ``[low, high]``.

        Carried numbers, percentage complements, column derivations, and carried numbers and column sums
        divided by each unit scale: every value a figure could have matched before the extended layer.
        It counts toward the coincidence bound of an extended derivation.
        """
        count = sum(
            index.count_within(low, high)
            for index in (self._carried_index, self._complement_index, self._derived_index)
        )
        for scale, _ in UNIT_SCALES:
            count += self._carried_index.count_within(low * scale, high * scale)
            count += self._sum_index.count_within(low * scale, high * scale)
        return count

    def derived_at(self, position: int) -> Derivation:
        """How the derived value recorded at ``position`` was derived."""
        return Derivation(*self._derived_values.explain(position))

    @property
    def truncated(self) -> bool:
        """A bound cut the fold: some numbers were never recorded, which can only flag more, never fewer."""
        return self._truncated

    def carries(self, value: float) -> bool:
        """Whether some tool result carried exactly this number, as a value or in a field name."""
        return (
            value in self._named
            or self._carried_index.first_within(value, value, lambda x: x == value) is not None
        )

    def carried_at(self, position: int) -> str:
        """The path of the carried number recorded at ``position``."""
        return path_text(self._paths[position])

    def __repr__(self) -> str:
        return (
            f"FigureBasis(carried={len(self._values)} numbers, "
            f"derived={len(self._derived_values.values)} values, truncated={self._truncated})"
        )


def figure_basis(tool_results: Iterable[ToolResult], *, structure: bool = False) -> FigureBasis:
    """Fold every tool result into the numbers it carries and the column derivations over its lists.

    Content is read as JSON when it is JSON (also JSON followed by text, and JSON inside JSON strings),
    else as text. Never raises; every bound that cuts the fold sets ``truncated``. ``structure`` also
    keeps what the extended derivations read (:attr:`FigureBasis.structure`); the closed set ignores it.
    """
    builder = BasisBuilder(structure=structure)
    for result in tool_results:
        builder.add(result.content)
    return FigureBasis(
        builder.values,
        builder.paths,
        builder.keys,
        builder.derived,
        builder.truncated,
        builder.named,
        builder.marks,
        builder.labels,
    )


def explain_figure(value: str, basis: FigureBasis) -> Derivation | None:
    """The first declared derivation of ``value`` from ``basis``, or ``None`` when there is none.

    ``value`` is a plain number as the answer wrote it (``1526.3``, ``61``, ``61.0``); its digits after
    the point set the precision it is compared at (±0.5 for a whole number, ±0.05 for one decimal…).
    The order is the reference's: rounded, unit-scale (÷ 1000^k or 1024^k, k = 1…5), complement of a
    percentage, a column derivation, then a unit-scaled column sum.
    """
    written = _written_target(value)
    if written is None:
        return None
    target, tolerance = written

    def near(x: float) -> bool:
        return abs(x - target) <= tolerance

    low, high = target - 2 * tolerance, target + 2 * tolerance
    position = basis._carried_index.first_within(low, high, near)
    if position is not None:
        return Derivation("rounded", basis.carried_at(position))
    scaled = _first_scaled(basis._carried_index, low, high, near)
    if scaled is not None:
        position, scale = scaled
        return Derivation("unit-scale", f"{basis.carried_at(position)} ÷ {scale}")
    position = basis._complement_index.first_within(low, high, near)
    if position is not None:
        return Derivation("complement", f"100 − {basis.carried_at(position)}")
    position = basis._derived_index.first_within(low, high, near)
    if position is not None:
        return basis.derived_at(position)
    scaled = _first_scaled(basis._sum_index, low, high, near)
    if scaled is not None:
        position, scale = scaled
        return Derivation("unit-scale", f"({basis.derived_at(position).source}) ÷ {scale}")
    return None


def percent_of_fraction(value: str, basis: FigureBasis) -> Derivation | None:
    """A ``%`` figure that is a carried fraction written as a percent (``45.67%`` for a share of
    ``0.4567``): 100 × a carried number of magnitude at most 1 rounds to ``value`` at its written
    precision. A unit's conversion, as ``unit-scale`` is, so it needs no coincidence bound."""
    written = _written_target(value)
    if written is None or abs(written[0]) > 100 + 1e-9:
        return None
    target, tolerance = written

    def accept(x: float) -> bool:
        return abs(x) <= 1 and abs(100 * x - target) <= tolerance

    window = 2 * tolerance / 100
    position = basis._carried_index.first_within(target / 100 - window, target / 100 + window, accept)
    if position is None:
        return None
    return Derivation("as-percent", f"100 × {basis.carried_at(position)}")


def magnitude_of_negative(value: str, basis: FigureBasis) -> Derivation | None:
    """An unsigned figure that is the magnitude of a carried negative number (``fell 5.2%`` for a
    carried −5.2, or an accounting ``(1,234)`` written ``1,234``): the answer's words carry the sign."""
    written = _written_target(value)
    if written is None or value.startswith("-") or written[0] <= 0:
        return None
    target, tolerance = written

    def accept(x: float) -> bool:
        return x < 0 and abs(x + target) <= tolerance

    position = basis._carried_index.first_within(-target - 2 * tolerance, -target + 2 * tolerance, accept)
    if position is None:
        return None
    return Derivation("magnitude", f"|{basis.carried_at(position)}|")


def _written_target(value: str) -> tuple[float, float] | None:
    """A plain number as written and how far a value may lie from it and match (``None`` for other
    text, and for 309 digits or more: no finite carried number rounds to it)."""
    decimals = written_decimals(value)
    if decimals is None:
        return None
    target = float(value)
    if not math.isfinite(target):
        return None
    return target, match_tolerance(target, decimals)


def match_tolerance(target: float, decimals: int) -> float:
    """How far a value may lie from a figure written with ``decimals`` digits after the point and match it.

    Half a unit of the last written digit; the window is closed (a half-even rounding lands exactly on
    its edge), and the slack absorbs the float error of the subtraction, which grows with the
    magnitude (an ulp of 49590.662 is ~7e-12).
    """
    return 0.5 * 10.0**-decimals * (1 + 1e-9) + 4 * math.ulp(target) + 1e-12


def _first_scaled(
    index: _SortedNumbers, low: float, high: float, near: Callable[[float], bool]
) -> tuple[int, str] | None:
    """The earliest number ≥ 1000 in magnitude that some scale divides into the window, with that scale."""
    best: tuple[int, int] | None = None
    for order, (scale, _) in enumerate(UNIT_SCALES):

        def accept(x: float, scale: float = scale) -> bool:
            return abs(x) >= 1000 and near(x / scale)

        position = index.first_within(low * scale, high * scale, accept)
        if position is not None and (best is None or (position, order) < best):
            best = (position, order)
    return None if best is None else (best[0], UNIT_SCALES[best[1]][1])
