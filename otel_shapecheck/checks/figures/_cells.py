"""The cells of the tool results and where they sit: the rows, columns and texts extended derivations pair.

A *cell* is a carried number that was a value of its own: a JSON number, or a string that is one number
(``"$ 1,997.8"``, ``"12.5%"``, ``"(9,275)"``). Its path says where it sat: the part before its last
step is its *row* (the object or array holding it), the last step is its *column* key (a field name or
an array index), and the row's own parent is its *table*. So in ``rows[3].used_tb`` the row is
``rows[3]`` and the column is ``used_tb`` of ``rows``; in a table given as a list of lists, ``[5][1]``
is row ``[5]``, column 1.

- A **row group** holds the cells of one row: year over year, one record's fields.
- A **column group** holds the cells under one column key of one table: the items of one quantity.
- A **text group** holds the numbers read out of one longer text (``"2019: 5,765.2; 2018: 5,050.2"``);
  those numbers join no row or column.

Groups of more than :data:`MAX_GROUP_CELLS` cells are not paired: a column of thousands of readings has
no year-over-year structure, and its pairs would only add coincidences. An accounting negative
(``"(9,275)"``) is read here as −9275; the closed derivations keep reading it as written (9275).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal

import numpy as np

from otel_shapecheck.checks.figures._basis import BasisStructure
from otel_shapecheck.checks.figures._carried import (
    MARK_NEGATIVE,
    MARK_PERCENT,
    MARK_TEXT,
    CarriedPath,
    path_text,
)
from otel_shapecheck.checks.figures._columns import is_percent_key

MAX_GROUP_CELLS: Final = 32
"""Cells of one row, column or text that are paired; larger groups are not paired at all."""

GroupKind = Literal["row", "column", "text", "any"]
Pairing = Literal["structural", "any"]
"""Which pairs the extended derivations try: cells sharing a row, column or text, or any two cells."""


@dataclass(frozen=True)
class CellGroup:
    """Cells that may be paired, and how to name where they sit."""

    kind: GroupKind
    label: str
    """``row Total``, ``column used_tb``, ``text at notes``, ``any two carried numbers``."""
    members: tuple[int, ...]
    """Indices into :attr:`Cells.values`, in reading order."""


@dataclass(frozen=True)
class Cells:
    """The cells of a basis as numbers, with their groups."""

    values: np.ndarray
    """Each cell's value (float64), accounting negatives negated."""
    percent: np.ndarray
    """Whether each cell is a percentage: written with ``%`` or under a ``…pct``/``…percent`` field."""
    row_labels: tuple[str, ...]
    """Each cell's row, named by the row's first text (``Total``) or else its path."""
    groups: tuple[CellGroup, ...]
    """Groups to pair (2 to :data:`MAX_GROUP_CELLS` cells); under ``any`` pairing one group of all cells."""
    columns: tuple[CellGroup, ...]
    """The column groups (2 to :data:`MAX_GROUP_CELLS` cells), which also give the column totals."""
    distinct: int
    """Distinct cell values."""


def read_cells(structure: BasisStructure, pairing: Pairing = "structural") -> Cells:
    """The cells of a basis folded with ``structure=True``, grouped for pairing."""
    values = np.asarray(structure.values, dtype=np.float64)
    percent = np.zeros(values.size, dtype=bool)
    percent_keys = {key for key in set(structure.keys) if key and is_percent_key(key)}
    if percent_keys:
        percent |= np.fromiter((key in percent_keys for key in structure.keys), bool, values.size)
    texts: dict[str, list[int]] = {}
    for position, mark in structure.marks.items():
        if mark & MARK_NEGATIVE:
            values[position] = -abs(values[position])
        percent[position] |= bool(mark & MARK_PERCENT)
        if mark & MARK_TEXT:
            texts.setdefault(path_text(structure.paths[position]), []).append(position)
    rows, columns, row_of = _rows_and_columns(structure)
    _drop_year_headers(rows, columns, values)
    labels = structure.labels
    column_groups = tuple(
        CellGroup("column", f"column {name}", tuple(members))
        for (_, name), members in columns.items()
        if 2 <= len(members) <= MAX_GROUP_CELLS
    )
    groups: tuple[CellGroup, ...]
    if pairing == "any":
        groups = (CellGroup("any", "any two carried numbers", tuple(range(values.size))),)
    else:
        groups = (
            *_groups("row", rows, lambda row: f"row {labels.get(row) or row or 'result'}"),
            *_groups("text", texts, lambda text: f"text at {text}"),
            *column_groups,
        )
    return Cells(
        values=values,
        percent=percent,
        row_labels=tuple(labels.get(row) or row or "result" for row in row_of),
        groups=groups,
        columns=column_groups,
        distinct=int(np.unique(values).size),
    )


def _rows_and_columns(
    structure: BasisStructure,
) -> tuple[dict[str, list[int]], dict[tuple[str, str], list[int]], list[str]]:
    """Each row's and each (table, column)'s cells, and each number's row; text numbers join neither."""
    rows: dict[str, list[int]] = {}
    columns: dict[tuple[str, str], list[int]] = {}
    row_of: list[str] = []
    tables: dict[str, str] = {}
    marks = structure.marks
    for position, path in enumerate(structure.paths):
        if marks.get(position, 0) & MARK_TEXT:
            row_of.append(path_text(path))
            continue
        row, column = path if type(path) is tuple else split_path(path)
        table = tables.get(row)
        if table is None:
            table = tables[row] = split_path(row)[0]
        rows.setdefault(row, []).append(position)
        columns.setdefault((table, column), []).append(position)
        row_of.append(row)
    return rows, columns, row_of


def _drop_year_headers(
    rows: dict[str, list[int]], columns: dict[tuple[str, str], list[int]], values: np.ndarray
) -> None:
    """Take the cells of header rows of years out of the groups: rows of a list-of-lists table whose
    numbers are all whole years 1900–2100.

    ``["(In millions)", "2019", "2018"]`` names the columns; its numbers are labels, not amounts, and
    paired with the amounts below them they would only add coincidences. A row keyed by field names
    (``{"region": "east", "sales": 2013}``) names its own columns, so its numbers are amounts.
    """
    positional = {
        member for (_, column), members in columns.items() if column.isdigit() for member in members
    }
    headers = {
        row
        for row, members in rows.items()
        if all(
            member in positional and float(values[member]).is_integer() and 1900 <= values[member] <= 2100
            for member in members
        )
    }
    if not headers:
        return
    dropped = {member for row in headers for member in rows.pop(row)}
    for key, members in columns.items():
        columns[key] = [member for member in members if member not in dropped]


def _groups(kind: GroupKind, members: dict[str, list[int]], name: Callable[[str], str]) -> list[CellGroup]:
    return [
        CellGroup(kind, name(key), tuple(cells))
        for key, cells in members.items()
        if 2 <= len(cells) <= MAX_GROUP_CELLS
    ]


def split_path(path: CarriedPath) -> tuple[str, str]:
    """A path's container and its last step: ``rows[3].used_tb`` → (``rows[3]``, ``used_tb``).

    Paths are written by the fold as ``parent.key`` and ``parent[index]``; a key that itself contains
    a ``.`` is split at its last one, which can only put that cell in a group of its own.
    """
    if isinstance(path, tuple):
        return path
    if path.endswith("]"):
        start = path.rfind("[")
        if start >= 0 and path[start + 1 : -1].isdigit():
            return path[:start], path[start + 1 : -1]
    dot = path.rfind(".")
    return (path[:dot], path[dot + 1 :]) if dot >= 0 else ("", path)
