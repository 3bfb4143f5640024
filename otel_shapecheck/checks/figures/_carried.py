"""What the fold keeps of tool results, each part under its bound: the carried numbers and the derivations.

:class:`CarriedNumbers` holds the basis as the walk of :mod:`._fold` builds it, as parallel columns:
every carried number with its path, its field and how it was written (``MARK_*``), the containers' labels,
the numbers written as field names, and the column derivations recorded over each list of rows. Every
bound that drops something sets ``truncated``.
"""

from __future__ import annotations

import math
import re
import zlib
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Final, NamedTuple, overload

from otel_shapecheck.checks.figures._columns import DerivedValues, RowTable
from otel_shapecheck.checks.figures._text import (
    is_lone_number,
    normalize_token,
    numbers_in_text,
    plain_number,
)

MAX_BASIS_NUMBERS: Final = 50_000
"""Carried numbers kept per basis."""

MAX_DERIVED: Final = 50_000
"""Column-derived values (sums, ratios, differences, complements) kept per basis."""

MAX_LABEL_CHARS: Final = 60
"""Characters kept of a row's label (its first text), which names the row in an inferred derivation."""

MAX_PATH_STEP_CHARS: Final = 256
"""Characters of a field name kept as a step of a path; a longer name is cut and a digest of it added."""

MAX_PATH_CHARS: Final = 1_024
"""Characters of a container's path kept for its children's paths; a longer path is cut likewise, so a
number's path costs bounded memory whatever the names above it (every carried number holds one)."""

MARK_TEXT: Final = 1
"""A carried number read out of a longer text, not a value of its own (structure mode only)."""
MARK_PERCENT: Final = 2
"""A carried number written with a ``%`` sign (``"12.5%"``)."""
MARK_NEGATIVE: Final = 4
"""A carried number written as an accounting negative (``"(1,234)"``, ``"$(2,227)"``)."""

_ACCOUNTING_NEGATIVE_RE: Final = re.compile(
    r"\s*[$€£]?\s*\(\s*[$€£]?\s*[0-9][0-9,]*(?:\.[0-9]+)?\s*\)\s*%?\s*"
)
DIGIT_RE: Final = re.compile(r"[0-9]")
"""A digit: text without one carries no number."""

CarriedPath = str | tuple[str, str]
"""A carried number's path: the text itself, or (row path, field name) joined only when asked for."""


def path_text(path: CarriedPath) -> str:
    """A carried number's path as text (``rows[0].used_pct``)."""
    return path if isinstance(path, str) else f"{path[0]}.{path[1]}"


def path_step(name: str) -> str:
    """``name`` as a step of a path: itself, or past :data:`MAX_PATH_STEP_CHARS` its start and a digest
    of the whole (distinct names stay distinct paths)."""
    return name if len(name) <= MAX_PATH_STEP_CHARS else _cut(name, MAX_PATH_STEP_CHARS)


def bounded_path(path: str) -> str:
    """A container's path as its children's paths start: itself, or past :data:`MAX_PATH_CHARS` its start
    and a digest of the whole."""
    return path if len(path) <= MAX_PATH_CHARS else _cut(path, MAX_PATH_CHARS)


def _cut(text: str, keep: int) -> str:
    digest = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    return f"{text[:keep]}…{digest:08x}"


class CarriedPaths(Sequence[CarriedPath]):
    """The carried numbers' paths, a column of rows kept as its row paths and field name once.

    A 5 000-row result carries 50 000 numbers; a ``(row path, field)`` tuple for each would be 50 000
    objects the garbage collector tracks, and their allocation alone sets off collections that walk the
    whole heap of the application (about a third of the fold's time in a process holding large data).
    Runs keep plain strings, which the collector does not track; a position's tuple is built when read.
    """

    __slots__ = ("_length", "_runs", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._runs: list[_ColumnRun | list[CarriedPath]] = []
        """Each run: one field over rows, or paths appended one by one."""
        self._length = 0

    def append(self, path: CarriedPath) -> None:
        """Add one path (a number carried on its own, or one cell of a mixed column)."""
        last = self._runs[-1] if self._runs else None
        if isinstance(last, list):
            last.append(path)
        else:
            self._starts.append(self._length)
            self._runs.append([path])
        self._length += 1

    def add_column(self, row_paths: Sequence[str], name: str) -> None:
        """Add the paths of one field over rows, in row order."""
        if row_paths:
            self._starts.append(self._length)
            self._runs.append(_ColumnRun(row_paths, name))
            self._length += len(row_paths)

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> CarriedPath: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[CarriedPath]: ...
    def __getitem__(self, index: int | slice) -> CarriedPath | Sequence[CarriedPath]:
        if isinstance(index, slice):
            return [self[position] for position in range(*index.indices(self._length))]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError(index)
        run_index = bisect_right(self._starts, index) - 1
        run = self._runs[run_index]
        offset = index - self._starts[run_index]
        if isinstance(run, list):
            return run[offset]
        return (run.row_paths[offset], run.name)

    def __iter__(self) -> Iterator[CarriedPath]:
        for run in self._runs:
            if isinstance(run, list):
                yield from run
            else:
                name = run.name
                for path in run.row_paths:
                    yield (path, name)


class _ColumnRun(NamedTuple):
    row_paths: Sequence[str]
    name: str


class CarriedNumbers:
    """The basis being built: carried numbers and their paths, fields and marks; labels; derivations.

    The walk (:class:`~._fold.BasisBuilder`) carries numbers and notes labels and names through these
    methods, which keep each part within its bound and set ``truncated`` when one drops something.
    """

    def __init__(self) -> None:
        self.marks: dict[int, int] = {}
        """Position of a carried number → its ``MARK_*`` bits (structure mode; unmarked numbers absent)."""
        self.labels: dict[str, str] = {}
        """Container path → its first text that is not a number (structure mode)."""
        self.values: list[float] = []
        self.paths = CarriedPaths()
        self.keys: list[str | None] = []
        self.derived = DerivedValues()
        self.named: set[float] = set()
        """Numbers written as field names (``{"2024": …}``): carried as-is, never derived from."""
        self.truncated = False

    @property
    def full(self) -> bool:
        """Whether :data:`MAX_BASIS_NUMBERS` numbers are carried (the basis bound)."""
        return len(self.values) >= MAX_BASIS_NUMBERS

    def _note_names(self, names: Iterable[str]) -> None:
        """Keep the numbers written in field names (``{"2024": …}``), up to the basis bound."""
        for name in names:
            if type(name) is str and DIGIT_RE.search(name) and len(self.named) < MAX_BASIS_NUMBERS:
                self.named.update(numbers_in_text(name))

    def _carry(self, value: float, at: CarriedPath, key: str | None) -> None:
        """Carry one number (a NaN or infinity is not carried), unless the basis is full."""
        if len(self.values) >= MAX_BASIS_NUMBERS:
            self.truncated = True
            return
        number = finite_or_nan(value)
        if number == number:  # not NaN
            self.values.append(number)
            self.paths.append(at or "result")
            self.keys.append(key)

    def _carry_column(
        self, name: str, cells: list[float | None], row_paths: list[str], gaps: bool
    ) -> list[float]:
        """Carry a column of JSON numbers (nulls and gaps allowed); returns it with NaN for the gaps.

        ``cells`` and ``row_paths`` may be those of only the rows that have the field (a sparse column).
        """
        step = path_step(name)
        if not gaps and len(cells) <= MAX_BASIS_NUMBERS - len(self.values):
            try:
                numbers = list(map(float, cells))  # type: ignore[arg-type]  # no gaps: no None
            except OverflowError:
                pass
            else:
                if math.isfinite(sum(numbers)):  # hence every number is finite: all of them are carried
                    self.values.extend(numbers)
                    self.paths.add_column(row_paths, step)
                    self.keys.extend([name] * len(numbers))
                    return numbers
        try:
            column = [math.nan if cell is None else float(cell) for cell in cells]
        except OverflowError:
            column = [math.nan if cell is None else finite_or_nan(cell) for cell in cells]
        present = [index for index, number in enumerate(column) if number - number == 0.0]
        if len(present) < len(column):
            column = [number if number - number == 0.0 else math.nan for number in column]
        room = MAX_BASIS_NUMBERS - len(self.values)
        if len(present) > room:
            self.truncated = True
            present = present[: max(room, 0)]
        if len(present) == len(column):
            self.values.extend(column)
            self.paths.add_column(row_paths, step)
        else:
            self.values.extend([column[index] for index in present])
            self.paths.add_column([row_paths[index] for index in present], step)
        self.keys.extend([name] * len(present))
        return column

    def _mark_cell(self, text: str) -> None:
        """Note how the string the last carried number came from wrote it: with ``%``, in parentheses."""
        mark = (MARK_PERCENT if "%" in text else 0) | (
            MARK_NEGATIVE if "(" in text and _ACCOUNTING_NEGATIVE_RE.fullmatch(text) else 0
        )
        if mark and self.values:
            self.marks[len(self.values) - 1] = mark

    def _note_label(self, container: str, text: str) -> None:
        """Keep ``text`` as the container's label when it is its first text that is not a number."""
        if container in self.labels or len(self.labels) >= MAX_BASIS_NUMBERS:
            return
        label = text_label(text)
        if label is not None:
            self.labels[container] = label

    def _fold(self, table: RowTable, label: str) -> None:
        """Record the column derivations over all rows, then over each group of a grouping text field."""
        complete = self._derive(table, table.totals(), table.row_count, f"{label}[]")
        for name, group, group_totals, group_rows in table.groupings():
            for value, totals, rows in zip(group, group_totals, group_rows, strict=True):
                complete = complete and self._derive(table, totals, rows, f"{label}[{name}={value}]")
            if not complete:
                break
        self.truncated |= table.truncated

    def _derive(self, table: RowTable, totals: dict[str, float], rows: int, label: str) -> bool:
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


def text_label(text: str) -> str | None:
    """``text`` as a row's label (stripped, cut to :data:`MAX_LABEL_CHARS`); ``None`` when it is a number,
    also one written as an amount (``$ 463``, ``(9,275)``): a cell of the row, not its name."""
    label = text.strip()
    if label and plain_number(normalize_token(label)) is None and not is_lone_number(label):
        return label[:MAX_LABEL_CHARS]
    return None


def finite_or_nan(value: float) -> float:
    """``value`` as a float, NaN when it is not finite or too large for one."""
    try:
        number = float(value)
    except OverflowError:
        return math.nan
    return number if math.isfinite(number) else math.nan
