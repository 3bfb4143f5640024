"""The column fold of one list of rows: numeric columns, their totals, and the derivations recorded.

A list of rows (an array of objects, or an object of objects) is folded into numeric columns and
grouping text fields; :class:`RowTable` gives the totals over all rows and over each group, and
:class:`DerivedValues` keeps what the fold derived from them (sums, ratios, differences, complements).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Final

import numpy as np

MAX_GROUP_FIELDS: Final = 8
"""Text fields of one list whose values group the rows for per-group sums."""

MIN_GROUP_VALUES: Final = 2
MAX_GROUP_VALUES: Final = 50
"""A text field groups the rows when it has this many distinct values (and fewer than rows)."""

_PERCENT_KEY_RE: Final = re.compile(r"(pct|percent|percentage)$", re.IGNORECASE)
_UNIT_SUFFIX_RE: Final = re.compile(r"[_-]([A-Za-z]+)$")


class DerivedValues:
    """Derived values and how each was derived, kept as columns; the words are formatted when read."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.how: list[tuple[str, str, str, str]] = []
        """(derivation, rows label, field a, field b) per value."""

    def explain(self, position: int) -> tuple[str, str]:
        """The derivation and its words (``100 × rows[].used_tb ÷ rows[].total_tb``) at ``position``."""
        derivation, label, a, b = self.how[position]
        if derivation == "column-sum":
            return derivation, f"sum of {label}.{a}"
        if derivation == "column-difference":
            return derivation, f"{label}.{b} − {label}.{a}"
        ratio = f"100 × {label}.{a} ÷ {label}.{b}"
        return derivation, ratio if derivation == "column-ratio" else f"100 − {ratio}"


class RowTable:
    """The numeric columns and grouping text fields of one list of rows, and their totals."""

    def __init__(
        self, numeric: dict[str, list[float]], texts: dict[str, list[str | None]], rows: int
    ) -> None:
        self.truncated = False
        self.row_count = rows
        self._columns = {name: np.asarray(column, dtype=np.float64) for name, column in numeric.items()}
        self._texts = texts
        self.like_unit_pairs = _like_unit_pairs(list(numeric))

    def totals(self) -> dict[str, float]:
        """The sum of each numeric field over the rows that carry it (finite sums only)."""
        totals: dict[str, float] = {}
        for name, column in self._columns.items():
            present = column[~np.isnan(column)]
            if present.size:
                total = finite_sum(present.tolist())
                if total is not None:
                    totals[name] = total
        return totals

    def groupings(self) -> Iterator[tuple[str, list[str], list[dict[str, float]], list[int]]]:
        """Each grouping text field: its name, its distinct values, and each value's totals and row count."""
        used = 0
        for name, values in self._texts.items():
            distinct = list(dict.fromkeys(value for value in values if value is not None))
            if not MIN_GROUP_VALUES <= len(distinct) <= MAX_GROUP_VALUES or len(distinct) >= self.row_count:
                continue
            if used == MAX_GROUP_FIELDS:
                self.truncated = True
                return
            used += 1
            code_of = {value: code for code, value in enumerate(distinct)}
            codes = np.array([-1 if value is None else code_of[value] for value in values], dtype=np.int64)
            yield (
                name,
                distinct,
                self._group_totals(codes, len(distinct)),
                self._group_rows(codes, len(distinct)),
            )

    def _group_totals(self, codes: np.ndarray, groups: int) -> list[dict[str, float]]:
        totals: list[dict[str, float]] = [{} for _ in range(groups)]
        grouped = codes >= 0
        with np.errstate(all="ignore"):
            for name, column in self._columns.items():
                present = grouped & ~np.isnan(column)
                counts = np.bincount(codes[present], minlength=groups)
                sums = np.bincount(codes[present], weights=column[present], minlength=groups)
                for code in np.flatnonzero(counts).tolist():
                    total = float(sums[code])
                    if math.isfinite(total):
                        totals[code][name] = total
        return totals

    @staticmethod
    def _group_rows(codes: np.ndarray, groups: int) -> list[int]:
        return [int(count) for count in np.bincount(codes[codes >= 0], minlength=groups)]


def finite_sum(values: list[float]) -> float | None:
    """The exact sum of ``values``, or ``None`` when it (or a partial sum) is not a finite double.

    ``math.fsum`` raises ``OverflowError`` when a partial sum overflows (``1e308 + 1e308``); such a total
    is a non-finite derivation and is skipped, so one list of huge numbers cannot fail the whole check.
    """
    try:
        total = math.fsum(values)
    except OverflowError:
        return None
    return total if math.isfinite(total) else None


def is_percent_key(key: str) -> bool:
    """Whether a field's name says it holds a percentage (``used_pct``, ``percent``)."""
    return _PERCENT_KEY_RE.search(key) is not None


def _like_unit_pairs(fields: list[str]) -> list[tuple[str, str]]:
    """Ordered pairs of different fields wearing the same unit suffix, percentages left out."""
    units: dict[str, str] = {}
    for name in fields:
        match = _UNIT_SUFFIX_RE.search(name)
        if match and not is_percent_key(name):
            units[name] = match.group(1).lower()
    return [(a, b) for a in units for b in units if a != b and units[a] == units[b]]
