"""Figures: is every number in a final answer carried by a tool result, or a declared derivation of one?

A *figure* is a number wearing a unit of measure (``53.2%``, ``6.3 TB``, ``41,200 IOPS``) whatever its
digit count, or a bare number with at least ``min_digits`` digits. Each figure of an answer is
*carried* when a tool result (or the user) states it, *computed* when it is one of a closed set of
derivations of carried numbers (rounded, unit-scale, complement, column sum, ratio, difference), and
*unsupported* otherwise. Everything here is plain arithmetic over plain data, bounded in time and memory.

The rules follow agentfootprint's evidence figures module (``figureBasisOf`` / ``explainFigure``), with
one deliberate difference: precision is the answer's own *as written*, so ``61.0%`` is compared within
±0.05 and does not match a carried 61.1, where the reference's normalisation turns it into ``61`` first.
"""

from __future__ import annotations

import json
import logging
import math
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice, repeat
from typing import Final, Literal, NamedTuple, cast

import numpy as np

from otel_shapecheck._model import JSONValue, ToolResult

logger = logging.getLogger(__name__)

FIGURE_UNITS: Final = (
    "%",
    "percent",
    "kb",
    "mb",
    "gb",
    "tb",
    "pb",
    "kib",
    "mib",
    "gib",
    "tib",
    "pib",
    "iops",
    "mbps",
    "gbps",
    "ms",
    "us",
)
"""Units that make a number a figure whatever its digit count (matched case-insensitively)."""

DEFAULT_MIN_DIGITS: Final = 4
"""Digits a bare number (no unit) needs to be a candidate; shorter ones read as prose (``3 issues``)."""

MAX_BASIS_NUMBERS: Final = 50_000
"""Carried numbers kept per basis."""

MAX_DERIVED: Final = 50_000
"""Column-derived values (sums, ratios, differences, complements) kept per basis."""

MAX_ROWS: Final = 5_000
"""Rows of one list folded into columns."""

MAX_NUMERIC_FIELDS: Final = 64
"""Numeric fields of one list folded into columns."""

MAX_GROUP_FIELDS: Final = 8
"""Text fields of one list whose values group the rows for per-group sums."""

MIN_GROUP_VALUES: Final = 2
MAX_GROUP_VALUES: Final = 50
"""A text field groups the rows when it has this many distinct values (and fewer than rows)."""

MAX_DEPTH: Final = 64
"""Deepest nesting of a tool result that is walked; deeper parts are skipped (and ``truncated`` set)."""

MAX_NODES: Final = 500_000
"""JSON nodes walked per basis, so one huge result costs bounded time."""

MAX_CONCLUSION_VALUES: Final = 8
"""Flagged values named in the conclusion line; the rest are counted."""

Shape = Literal["figure", "number"]

_NUMBER = r"[-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"
_WORD_UNITS = sorted((unit for unit in FIGURE_UNITS if unit != "%"), key=len, reverse=True)
_UNIT = rf"%|(?:{'|'.join(_WORD_UNITS)})(?:/s)?(?![a-z0-9])"
_FIGURE_RE: Final = re.compile(rf"(?<![\w.,])(?P<number>{_NUMBER})\s?(?P<unit>{_UNIT})", re.IGNORECASE)
# A bare number stands alone: not part of an identifier, date, time, range, ratio or version.
_BARE_RE: Final = re.compile(rf"(?<![\w.,/:#@+\-])(?P<number>{_NUMBER})(?![\w/:\-]|[.,][0-9])")
_PLAIN_NUMBER_RE: Final = re.compile(r"[-+]?([0-9]+)(?:\.([0-9]+))?")
_THOUSANDS_RE: Final = re.compile(r"-?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?")
_TOKEN_RE: Final = re.compile(r"[A-Za-z0-9:_\-/.,%+@#$]+")
_TOKEN_COMMA_RE: Final = re.compile(r"(?<![0-9]),|,(?![0-9])")
_FIGURE_TOKEN_RE: Final = re.compile(rf"(?P<number>{_NUMBER})(?:{_UNIT})", re.IGNORECASE)
_PERCENT_KEY_RE: Final = re.compile(r"(pct|percent|percentage)$", re.IGNORECASE)
_UNIT_SUFFIX_RE: Final = re.compile(r"[_-]([A-Za-z]+)$")
_LEADING_STRIP: Final = "$#@+'\"`([{<"
_TRAILING_STRIP: Final = ".,;:!?%'\"`)]}>"
_SCALES: Final = tuple(
    (float(base**power), f"{base}^{power}") for power in range(1, 6) for base in (1000, 1024)
)
_JSON_OPENERS: Final = frozenset("[{")
_DIGIT_RE: Final = re.compile(r"[0-9]")
_NUMBER_KINDS: Final = frozenset({int, float, type(None)})
_SMALL_INDEX: Final = 64  # below this many values, sorting in Python beats numpy's call overhead
# Where a token that normalises to a number can start: a superset test that skips identifiers cheaply.
_NUMBER_TOKEN_START_RE: Final = re.compile(r"(?<![A-Za-z0-9:_\-/.%@#$+])[$#@+]*-?[0-9]")


# --- the answer side ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """One candidate figure of an answer."""

    written: str
    """The figure exactly as the answer wrote it, unit included (``1,526.3 TB``)."""
    value: str
    """The number without thousands separators or a ``+`` sign, trailing zeros kept (``1526.3``)."""
    shape: Shape
    """``figure`` for a number wearing a unit, ``number`` for a long bare number."""


def figures_in(answer: str, min_digits: int = DEFAULT_MIN_DIGITS) -> tuple[Figure, ...]:
    """The candidate figures of ``answer`` in order of appearance, one per distinct value.

    Raises:
        ValueError: ``min_digits`` is not a whole number ≥ 1.
    """
    _require_min_digits(min_digits)
    found: list[tuple[int, Figure]] = []
    covered = bytearray(len(answer))
    for match in _FIGURE_RE.finditer(answer):
        found.append((match.start(), Figure(match.group(0), _plain_value(match.group("number")), "figure")))
        covered[match.start() : match.end()] = b"\x01" * (match.end() - match.start())
    for match in _BARE_RE.finditer(answer):
        number = match.group("number")
        if sum(char.isdigit() for char in number) < min_digits or any(covered[match.start() : match.end()]):
            continue
        found.append((match.start(), Figure(number, _plain_value(number), "number")))
    figures: dict[str, Figure] = {}
    for _, figure in sorted(found, key=lambda item: item[0]):
        figures.setdefault(figure.value, figure)
    return tuple(figures.values())


def normalize_token(token: str) -> str:
    """A token as the basis compares it: lowercased, wrapping punctuation and thousands separators gone.

    This is the reference's ``normalizeToken`` without its last step (re-printing plain numbers through
    a float), so ``61.0`` stays ``61.0`` and keeps its written precision.
    """
    text = token.lower().strip().lstrip(_LEADING_STRIP).rstrip(_TRAILING_STRIP)
    if "," in text and _THOUSANDS_RE.fullmatch(text):
        text = text.replace(",", "")
    return text


def _plain_value(number: str) -> str:
    return number.replace(",", "").lstrip("+")


def _require_min_digits(min_digits: int) -> None:
    if isinstance(min_digits, bool) or not isinstance(min_digits, int) or min_digits < 1:
        raise ValueError(
            f"min_digits={min_digits!r} is not a valid value: min_digits must be a whole number ≥ 1"
        )


# --- the basis: what the tool results carry -------------------------------------------------------


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
            self._positions = np.asarray(positions, dtype=np.int64)[order][first].tolist()
        self._low = self._values[0] if self._values else math.inf
        self._high = self._values[-1] if self._values else -math.inf

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


_Path = str | tuple[str, str]
"""A carried number's path: the text itself, or (row path, field name) joined only when asked for."""


def _path_text(path: _Path) -> str:
    return path if isinstance(path, str) else f"{path[0]}.{path[1]}"


class FigureBasis:
    """What the tool results carry, folded for the derivation question.

    Built by :func:`figure_basis`; carried numbers are kept as parallel columns and turned into
    :class:`CarriedNumber` records only when read, which keeps a 50 000-number basis cheap.
    """

    def __init__(
        self,
        values: Sequence[float],
        paths: Sequence[_Path],
        keys: Sequence[str | None],
        derived: _DerivedValues,
        truncated: bool,
        named: Iterable[float] = (),
    ) -> None:
        self._values = list(values)
        self._paths = list(paths)
        self._keys = list(keys)
        self._derived_values = derived
        self._derived: tuple[DerivedNumber, ...] | None = None
        self._truncated = truncated
        self._named = frozenset(named)
        self._carried: tuple[CarriedNumber, ...] | None = None
        percent_keys = {key for key in set(self._keys) if key and _PERCENT_KEY_RE.search(key)}
        percent = [i for i, key in enumerate(self._keys) if key in percent_keys]
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
                CarriedNumber(value, _path_text(path), key)
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
        return _path_text(self._paths[position])

    def __repr__(self) -> str:
        return (
            f"FigureBasis(carried={len(self._values)} numbers, "
            f"derived={len(self._derived_values.values)} values, truncated={self._truncated})"
        )


def figure_basis(tool_results: Iterable[ToolResult]) -> FigureBasis:
    """Fold every tool result into the numbers it carries and the column derivations over its lists.

    Content is read as JSON when it is JSON (also JSON followed by text, and JSON inside JSON strings),
    else as text. Never raises; every bound that cuts the fold sets ``truncated``.
    """
    builder = _BasisBuilder()
    for result in tool_results:
        builder.add(result.content)
    return FigureBasis(
        builder.values, builder.paths, builder.keys, builder.derived, builder.truncated, builder.named
    )


class _ChildPaths:
    """Paths and field names of a container's children, built only for the children that need one."""

    def __init__(self, at: str, keyed: bool) -> None:
        self._at = at
        self._prefix = f"{at}." if at else ""
        self._keyed = keyed

    def path(self, name: str | int) -> str:
        return f"{self._prefix}{name}" if self._keyed else f"{self._at}[{name}]"

    def key(self, name: str | int) -> str | None:
        return str(name) if self._keyed else None


class _BasisBuilder:
    """Walks tool results iteratively (no recursion, so nesting cannot exhaust the stack)."""

    def __init__(self) -> None:
        self.values: list[float] = []
        self.paths: list[_Path] = []
        self.keys: list[str | None] = []
        self.derived = _DerivedValues()
        self.named: set[float] = set()
        """Numbers written as field names (``{"2024": …}``): carried as-is, never derived from."""
        self.truncated = False
        self._nodes = 0
        self._stack: list[tuple[JSONValue, str, str | None, int]] = []

    def add(self, content: JSONValue) -> None:
        self._stack.append((content, "", None, 0))
        while self._stack:
            node, at, key, depth = self._stack.pop()
            self._nodes += 1
            if self._nodes > MAX_NODES:
                self.truncated = True
                self._stack.clear()
                return
            self._visit(node, at, key, depth)

    def _visit(self, node: JSONValue, at: str, key: str | None, depth: int) -> None:
        if isinstance(node, dict | list):
            self._visit_container(node, at, depth)
        else:
            self._visit_scalar(node, at, key, depth)

    def _visit_scalar(self, node: JSONValue, at: str, key: str | None, depth: int) -> None:
        if node is None or isinstance(node, bool):
            return
        if isinstance(node, int | float):
            self._carry(node, at, key)
        elif isinstance(node, str):
            self._read_string(node, at, key, depth)

    def _visit_container(self, node: dict[str, JSONValue] | list[JSONValue], at: str, depth: int) -> None:
        """Read a container's children within the node budget; a list of rows is also folded into columns."""
        if depth >= MAX_DEPTH:
            self.truncated = True
            return
        room = max(MAX_NODES - self._nodes, 0)
        if len(node) > room:
            self.truncated = True
        self._nodes += min(len(node), room)
        children: Iterator[tuple[str | int, JSONValue]]
        if isinstance(node, dict):
            is_rows = len(node) >= 2 and all(isinstance(value, dict) for value in node.values())
            self._note_names(islice(node, room))
            children = islice(node.items(), room)
        else:
            is_rows = bool(node) and all(isinstance(value, dict) for value in node)
            children = enumerate(islice(node, room))
        child = _ChildPaths(at, isinstance(node, dict))
        if is_rows and depth + 1 < MAX_DEPTH:
            if len(node) > MAX_ROWS:
                self.truncated = True
            rows = [(child.path(name), child.key(name), row) for name, row in islice(children, MAX_ROWS)]
            self._read_rows(rows, at or "result", depth + 1)
        self._read_children(children, child, depth + 1)

    def _note_names(self, names: Iterable[str]) -> None:
        for name in names:
            if type(name) is str and _DIGIT_RE.search(name) and len(self.named) < MAX_BASIS_NUMBERS:
                self.named.update(numbers_in_text(name))

    def _read_children(
        self, children: Iterator[tuple[str | int, JSONValue]], child: _ChildPaths, depth: int
    ) -> None:
        """Read scalar children now and queue containers, so nesting never recurses."""
        containers: list[tuple[JSONValue, str, str | None, int]] = []
        for name, value in children:
            kind = type(value)
            if value is None or kind is bool:
                continue
            if kind is float or kind is int:
                if len(self.values) >= MAX_BASIS_NUMBERS:
                    self.truncated = True
                    continue
                self._carry(value, child.path(name), child.key(name))  # type: ignore[arg-type]
            elif kind is str:
                self._read_string(value, child.path(name), child.key(name), depth)  # type: ignore[arg-type]
            elif isinstance(value, dict | list):
                containers.append((value, child.path(name), child.key(name), depth))
            else:
                self._visit_scalar(value, child.path(name), child.key(name), depth)
        self._stack.extend(reversed(containers))

    def _read_rows(self, rows: list[tuple[str, str | None, JSONValue]], label: str, depth: int) -> None:
        """Read the rows column by column, collecting numeric and text columns for the fold."""
        if depth >= MAX_DEPTH:
            self.truncated = True
            return
        table = [(path, row) for path, _, row in rows if isinstance(row, dict)]
        cells_total = 0
        for index, (_, row) in enumerate(table):
            if self._nodes + cells_total + len(row) > MAX_NODES:
                self.truncated = True
                table = table[:index]
                break
            cells_total += len(row)
        self._nodes += cells_total
        numeric: dict[str, list[float]] = {}
        texts: dict[str, list[str | None]] = {}
        containers: list[tuple[JSONValue, str, str | None, int]] = []
        names = _field_names([row for _, row in table])
        self._note_names(names)
        for name in names:
            cells = [row.get(name) for _, row in table]
            kinds = set(map(type, cells))
            if kinds <= _NUMBER_KINDS and kinds & _NUMBER_KINDS - {type(None)}:
                column = self._carry_column(name, cells, table)  # type: ignore[arg-type]
                self._add_column(numeric, name, column)
            elif kinds <= {str, type(None)}:
                strings = cast("list[str | None]", cells)
                texts[name] = [text or None for text in strings]
                may_carry = {text: _may_carry(text) for text in set(strings) if text}
                for (path, _), text in zip(table, strings, strict=True):
                    if text and may_carry[text]:
                        self._read_string(text, f"{path}.{name}", name, depth + 1)
            else:
                mixed = self._read_mixed_column(name, cells, table, depth + 1, containers)
                if mixed is not None:
                    self._add_column(numeric, name, mixed)
        self._stack.extend(reversed(containers))
        self._fold(_RowTable(numeric, texts, len(table)), label)

    def _add_column(self, numeric: dict[str, list[float]], name: str, column: list[float]) -> None:
        if len(numeric) >= MAX_NUMERIC_FIELDS:
            self.truncated = True
        else:
            numeric[name] = column

    def _carry_column(
        self, name: str, cells: list[float | None], table: list[tuple[str, dict[str, JSONValue]]]
    ) -> list[float]:
        """Carry a column of JSON numbers (nulls and gaps allowed); returns it with NaN for the gaps."""
        try:
            column = [math.nan if cell is None else float(cell) for cell in cells]
        except OverflowError:
            column = [math.nan if cell is None else _finite_or_nan(cell) for cell in cells]
        present = [index for index, number in enumerate(column) if number - number == 0.0]
        if len(present) < len(column):
            column = [number if number - number == 0.0 else math.nan for number in column]
        room = MAX_BASIS_NUMBERS - len(self.values)
        if len(present) > room:
            self.truncated = True
            present = present[: max(room, 0)]
        if len(present) == len(column):
            self.values.extend(column)
            self.paths.extend(zip([path for path, _ in table], repeat(name)))
        else:
            self.values.extend([column[index] for index in present])
            self.paths.extend([(table[index][0], name) for index in present])
        self.keys.extend([name] * len(present))
        return column

    def _read_mixed_column(
        self,
        name: str,
        cells: list[JSONValue],
        table: list[tuple[str, dict[str, JSONValue]]],
        depth: int,
        containers: list[tuple[JSONValue, str, str | None, int]],
    ) -> list[float] | None:
        """Read a column of mixed values cell by cell; its numbers still form a column."""
        column = [math.nan] * len(cells)
        has_numbers = False
        for index, ((path, _), cell) in enumerate(zip(table, cells, strict=True)):
            if isinstance(cell, int | float) and not isinstance(cell, bool):
                column[index] = _finite_or_nan(cell)
                has_numbers = True
                self._carry(cell, (path, name), name)
            elif isinstance(cell, dict | list):
                containers.append((cell, f"{path}.{name}", name, depth))
            else:
                self._visit_scalar(cell, f"{path}.{name}", name, depth)
        return column if has_numbers else None

    def _carry(self, value: float, at: _Path, key: str | None) -> None:
        if len(self.values) >= MAX_BASIS_NUMBERS:
            self.truncated = True
            return
        number = _finite_or_nan(value)
        if number == number:  # not NaN
            self.values.append(number)
            self.paths.append(at or "result")
            self.keys.append(key)

    def _read_string(self, text: str, at: str, key: str | None, depth: int) -> None:
        if _DIGIT_RE.search(text) is None:
            return
        stripped = text.lstrip()
        if stripped[:1] in _JSON_OPENERS and depth < MAX_DEPTH:
            parsed, rest = _json_prefix(stripped)
            if parsed is not None:
                self._stack.append((rest, at, None, depth))
                self._stack.append((parsed, at, key, depth + 1))
                return
        if _NUMBER_TOKEN_START_RE.search(text) is None:
            return
        number = _plain_number(normalize_token(text)) if len(text) <= 64 else None
        if number is not None:
            self._carry(number, at, key)
            return
        for value in numbers_in_text(text):
            if len(self.values) >= MAX_BASIS_NUMBERS:
                self.truncated = True
                return
            self._carry(value, at, None)

    def _fold(self, table: _RowTable, label: str) -> None:
        """Record the column derivations over all rows, then over each group of a grouping text field."""
        complete = self._derive(table, table.totals(), table.row_count, f"{label}[]")
        for name, group, group_totals, group_rows in table.groupings():
            for value, totals, rows in zip(group, group_totals, group_rows, strict=True):
                complete = complete and self._derive(table, totals, rows, f"{label}[{name}={value}]")
            if not complete:
                break
        self.truncated |= table.truncated

    def _derive(self, table: _RowTable, totals: dict[str, float], rows: int, label: str) -> bool:
        """Record the sums, ratios, differences and complements of some rows' column totals."""
        derived: list[tuple[float, tuple[str, str, str, str]]] = []
        if rows > 1:
            derived.extend((total, ("column-sum", label, name, "")) for name, total in totals.items())
        for a, b in table.like_unit_pairs:
            if a not in totals or b not in totals:
                continue
            sum_a, sum_b = totals[a], totals[b]
            if sum_b != 0:
                ratio = 100 * sum_a / sum_b
                derived.append((ratio, ("column-ratio", label, a, b)))
                if 0 <= ratio <= 100:
                    derived.append((100 - ratio, ("complement", label, a, b)))
            if sum_b - sum_a > 0:
                derived.append((sum_b - sum_a, ("column-difference", label, a, b)))
        for value, how in derived:
            if value - value != 0.0:  # not finite
                continue
            if len(self.derived.values) >= MAX_DERIVED:
                self.truncated = True
                return False
            self.derived.values.append(value)
            self.derived.how.append(how)
        return True


class _DerivedValues:
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


class _RowTable:
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
                total = math.fsum(present.tolist())
                if math.isfinite(total):
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


def _field_names(rows: list[dict[str, JSONValue]]) -> list[str]:
    """Every field of the rows in first-seen order (one look when all rows share the first row's fields)."""
    if not rows:
        return []
    first = rows[0].keys()
    if all(row.keys() == first for row in rows):
        return list(first)
    return list(dict.fromkeys(name for row in rows for name in row))


def _may_carry(text: str) -> bool:
    """Whether a string can carry a number: JSON to parse, or a token that can start a number."""
    if _DIGIT_RE.search(text) is None:
        return False
    return text.lstrip()[:1] in _JSON_OPENERS or _NUMBER_TOKEN_START_RE.search(text) is not None


def _finite_or_nan(value: float) -> float:
    try:
        number = float(value)
    except OverflowError:
        return math.nan
    return number if math.isfinite(number) else math.nan


def _like_unit_pairs(fields: list[str]) -> list[tuple[str, str]]:
    """Ordered pairs of different fields wearing the same unit suffix, percentages left out."""
    units: dict[str, str] = {}
    for name in fields:
        match = _UNIT_SUFFIX_RE.search(name)
        if match and not _PERCENT_KEY_RE.search(name):
            units[name] = match.group(1).lower()
    return [(a, b) for a in units for b in units if a != b and units[a] == units[b]]


def _json_prefix(text: str) -> tuple[JSONValue, str]:
    """The JSON value ``text`` starts with and the text after it; ``(None, text)`` when there is none."""
    try:
        return json.loads(text), ""
    except (ValueError, RecursionError):
        pass
    try:
        value, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None, text
    return value, text[end:]


def _plain_number(token: str) -> float | None:
    if not _PLAIN_NUMBER_RE.fullmatch(token):
        return None
    number = float(token)
    return number if math.isfinite(number) else None


def numbers_in_text(text: str) -> Iterator[float]:
    """The numbers a text states: its numeric tokens, and the number of each figure token (``24.8TB``).

    Tokens are runs of ``[A-Za-z0-9:_-/.,%+@#$]``, cut at commas that are not between digits. Only
    tokens that can start a number are visited, so a long text costs one regex scan, not a Python loop
    over every word.
    """
    for start in _NUMBER_TOKEN_START_RE.finditer(text):
        position = start.start()
        if (
            position >= 2
            and text[position - 1] == ","
            and _is_digit(text[position - 2])
            and _is_digit(text[position])
        ):
            continue  # inside a number such as 1,234
        token = _TOKEN_RE.match(text, position)
        piece = token.group(0) if token else ""
        if "," in piece:
            piece = _TOKEN_COMMA_RE.split(piece, maxsplit=1)[0]
        normalized = normalize_token(piece)
        number = _plain_number(normalized)
        if number is None:
            figure = _FIGURE_TOKEN_RE.fullmatch(normalized)
            number = _plain_number(_plain_value(figure.group("number"))) if figure else None
        if number is not None:
            yield number


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"


# --- the derivation question ----------------------------------------------------------------------


def explain_figure(value: str, basis: FigureBasis) -> Derivation | None:
    """The first declared derivation of ``value`` from ``basis``, or ``None`` when there is none.

    ``value`` is a plain number as the answer wrote it (``1526.3``, ``61``, ``61.0``); its digits after
    the point set the precision it is compared at (±0.5 for a whole number, ±0.05 for one decimal…).
    The order is the reference's: rounded, unit-scale (÷ 1000^k or 1024^k, k = 1…5), complement of a
    percentage, a column derivation, then a unit-scaled column sum.
    """
    match = _PLAIN_NUMBER_RE.fullmatch(value)
    if match is None:
        return None
    target = float(value)
    # The window is closed (a half-even rounding lands exactly on its edge); the slack absorbs the float
    # error of the subtraction, which grows with the magnitude (an ulp of 49590.662 is ~7e-12).
    tolerance = 0.5 * 10.0 ** -len(match.group(2) or "") * (1 + 1e-9) + 4 * math.ulp(target) + 1e-12

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


def _first_scaled(
    index: _SortedNumbers, low: float, high: float, near: Callable[[float], bool]
) -> tuple[int, str] | None:
    """The earliest number ≥ 1000 in magnitude that some scale divides into the window, with that scale."""
    best: tuple[int, int] | None = None
    for order, (scale, _) in enumerate(_SCALES):

        def accept(x: float, scale: float = scale) -> bool:
            return abs(x) >= 1000 and near(x / scale)

        position = index.first_within(low * scale, high * scale, accept)
        if position is not None and (best is None or (position, order) < best):
            best = (position, order)
    return None if best is None else (best[0], _SCALES[best[1]][1])


# --- one answer's finding -------------------------------------------------------------------------


@dataclass(frozen=True)
class ComputedFigure:
    """A figure no tool result carried that a declared derivation explains."""

    written: str
    value: str
    derivation: str
    source: str

    def describe(self) -> str:
        """``"<value> = <derivation>: <from>"``, the form of ``shapecheck.figures.derivations``."""
        return f"{self.value} = {self.derivation}: {self.source}"


@dataclass(frozen=True)
class FiguresFinding:
    """What the figures check found in one answer."""

    checked: int
    """Candidate figures in the answer (one per distinct value)."""
    carried: tuple[str, ...]
    """Figures (as written) that a tool result carried as-is, or that the user supplied."""
    computed: tuple[ComputedFigure, ...]
    unsupported: tuple[str, ...]
    """Figures (as written) that nothing carried and no declared derivation explains."""
    truncated: bool
    """A bound cut the basis (can only flag more, never fewer)."""

    @property
    def supported_share(self) -> float:
        """Share of the checked figures that are carried or computed; 1.0 when there were none."""
        if not self.checked:
            return 1.0
        return (len(self.carried) + len(self.computed)) / self.checked


def check_figures(
    answer: str,
    tool_results: Iterable[ToolResult],
    user_texts: Iterable[str] = (),
    *,
    min_digits: int = DEFAULT_MIN_DIGITS,
) -> FiguresFinding:
    """Check every figure of ``answer`` against the tool results it could have seen.

    Numbers stated in the user's own messages are exempt (counted as carried).

    Raises:
        ValueError: ``min_digits`` is not a whole number ≥ 1.
    """
    figures = figures_in(answer, min_digits)
    if not figures:
        return FiguresFinding(0, (), (), (), False)
    basis = figure_basis(tool_results)
    user_numbers = {number for text in user_texts for number in numbers_in_text(text)}
    carried: list[str] = []
    computed: list[ComputedFigure] = []
    unsupported: list[str] = []
    for figure in figures:
        number = float(figure.value)
        if number in user_numbers or basis.carries(number):
            carried.append(figure.written)
            continue
        derivation = explain_figure(figure.value, basis)
        if derivation is None:
            unsupported.append(figure.written)
        else:
            computed.append(
                ComputedFigure(figure.written, figure.value, derivation.derivation, derivation.source)
            )
    return FiguresFinding(len(figures), tuple(carried), tuple(computed), tuple(unsupported), basis.truncated)


def figures_conclusion_line(unsupported: Sequence[str]) -> str | None:
    """The library's finding about the flagged figures, as one line for the end of a revision request.

    Names at most :data:`MAX_CONCLUSION_VALUES` figures, then ``and N more``; ``None`` when nothing is
    flagged. Worded as the check's finding, not as the person's correction.
    """
    values = list(dict.fromkeys(value.strip() for value in unsupported if value and value.strip()))
    if not values:
        return None
    named = ", ".join(values[:MAX_CONCLUSION_VALUES])
    if len(values) > MAX_CONCLUSION_VALUES:
        named += f" and {len(values) - MAX_CONCLUSION_VALUES} more"
    subject = "this figure" if len(values) == 1 else "these figures"
    return (
        f"Note from the figures check (the library, not the user): no tool result carries {named}, "
        f"and no declared derivation of the numbers they do carry gives {subject}; "
        f"do not state {subject} unless a tool result supports them."
    )
