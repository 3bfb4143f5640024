"""Tables in a tool result that are not rows of cells: written as text, or as column names beside rows.

A table as text is a Markdown pipe table, CSV or TSV, or aligned columns (:func:`text_table`); a table
as JSON may name its columns once beside rows of bare values (:func:`split_table`).

Tools often answer with a table as text (a SQL tool's Markdown, a CSV file, a data frame printed with
its columns aligned) rather than as JSON rows. Read as plain text, all its numbers form one text group,
and no cell arithmetic can be asked of them; read as a table, its rows and columns are what a JSON list
of lists gives. Each form is recognised by what its specification requires, so prose is not mistaken
for a table:

- a pipe table (GitHub Flavored Markdown, "Tables (extension)"): a header row, then a delimiter row of
  ``---`` cells (each may carry ``:`` for alignment) with as many cells as the header, then the body rows
  up to the first line without a ``|``; leading and trailing pipes are optional and ``\\|`` is a pipe
  inside a cell. Text before and after the table is kept as text;
- CSV (RFC 4180, read by :mod:`csv`), or TSV, or ``;``-separated values: the whole text, at least two
  lines, every line of the same number of fields (at least two); commas inside unquoted numbers on most
  lines (``Food Care: 1,997.8``) make the text prose, not CSV;
- aligned columns (a data frame's ``to_string()``): the whole text, fields separated by runs of two or
  more spaces or by tabs, every line of the same number of fields (the header may lack the first, the
  unnamed label column).

Some body row must carry a number alone in a field past its first (``$ 1,997.8``, ``(9,275)``), so that
lines of prose that happen to split alike are not read as a table. Texts past :data:`MAX_TABLE_CHARS`
are read as text.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Mapping
from itertools import pairwise
from typing import Final, NamedTuple

from otel_shapecheck.checks.figures._text import is_lone_number

MAX_TABLE_CHARS: Final = 1 << 20
"""Longer texts are not looked at as tables (a table that long is a data dump, read as text)."""
MAX_TABLE_LINES: Final = 5_000
"""A text of more lines is not looked at as a table (the fold keeps as many rows of a JSON table)."""

_DELIMITER_CELL_RE: Final = re.compile(r"\s*:?-+:?\s*")
_PIPE_RE: Final = re.compile(r"(?<!\\)\|")
_ALIGNED_GAP_RE: Final = re.compile(r"\t| {2,}")
_SEPARATORS: Final = (",", "\t", ";")
_GROUP_LEAD_RE: Final = re.compile(r"(?:^|[\s$€£¥(])[0-9]{1,3}$")
_GROUP_RE: Final = re.compile(r"[0-9]{3}(?![0-9])")


class TextTable(NamedTuple):
    """A table read out of a text: its rows as a list of lists, and the text around it."""

    rows: list[list[str]]
    rest: str
    """The text before and after the table (empty when the whole text is the table)."""


def text_table(text: str) -> TextTable | None:
    """The table ``text`` holds, or ``None`` when it holds none in a form this module reads."""
    if len(text) > MAX_TABLE_CHARS or "\n" not in text:
        return None
    lines = text.strip("\n").splitlines()
    if len(lines) > MAX_TABLE_LINES:
        return None
    if "|" in text:
        table = _pipe_table(lines)
        if table is not None:
            return table
    rows = _separated(lines) or _aligned(lines)
    return TextTable(rows, "") if rows is not None else None


def _pipe_table(lines: list[str]) -> TextTable | None:
    """The first pipe table of the lines holding a number, and the lines around it. Each line is read at
    most twice: a table without a number is passed over whole."""
    index = 0
    while index < len(lines) - 1:
        start, index = index, index + 1
        if "|" not in lines[start] or "-" not in lines[index]:
            continue
        header = _pipe_cells(lines[start])
        delimiter = _pipe_cells(lines[index])
        if len(header) != len(delimiter) or not all(_DELIMITER_CELL_RE.fullmatch(cell) for cell in delimiter):
            continue
        end = index + 1
        while end < len(lines) and "|" in lines[end]:
            end += 1
        body = [_pipe_cells(line) for line in lines[index + 1 : end]]
        index = end
        if any(map(_has_a_number, body)):
            width = len(header)
            rows = [header, *([*row[:width], *[""] * (width - len(row))] for row in body)]
            return TextTable(rows, "\n".join([*lines[:start], *lines[end:]]))
    return None


def _pipe_cells(line: str) -> list[str]:
    inner = line.strip()
    if inner.startswith("|"):
        inner = inner[1:]
    if inner.endswith("|") and not inner.endswith("\\|"):
        inner = inner[:-1]
    return [cell.strip().replace("\\|", "|") for cell in _PIPE_RE.split(inner)]


def _separated(lines: list[str]) -> list[list[str]] | None:
    if len(lines) < 2:
        return None
    for separator in _SEPARATORS:
        if separator not in lines[0]:
            continue
        try:
            fields = list(csv.reader(lines, delimiter=separator, strict=True))
        except csv.Error:
            continue
        rows = [[cell.strip() for cell in row] for row in fields]
        # Prose that splits alike on commas cuts a number on most lines; a table's label may end in digits.
        if _is_table(rows) and not (
            separator == "," and 2 * sum(map(_splits_a_number, fields)) > len(fields)
        ):
            return rows
    return None


def _splits_a_number(fields: list[str]) -> bool:
    """Whether a comma cuts a number of prose in two (``Food Care: 1`` | ``997.8``): a field that is no
    number of its own ends in 1–3 digits after a space or a currency sign, and the next one starts with
    3 digits. A CSV writer quotes a field holding a comma, so its fields are whole values (``834`` |
    ``712`` is two; a footnote ``Order intake1`` or a range ``1–90`` ends no number)."""
    return any(
        _GROUP_LEAD_RE.search(field) is not None
        and not is_lone_number(field)
        and _GROUP_RE.match(after) is not None
        for field, after in pairwise(fields)
    )


def _aligned(lines: list[str]) -> list[list[str]] | None:
    if len(lines) < 2:
        return None
    second = _ALIGNED_GAP_RE.split(lines[1].strip())
    if len(second) < 2:  # its first body line is one field: not a table, and the rest need not be split
        return None
    rows = [_ALIGNED_GAP_RE.split(line.strip()) for line in lines]
    if len(rows[0]) == len(rows[1]) - 1:
        rows[0] = ["", *rows[0]]  # a data frame's header has no name over its index (the row labels)
    return rows if _is_table(rows) else None


def _is_table(rows: list[list[str]]) -> bool:
    width = len(rows[0])
    return (
        len(rows) >= 2
        and width >= 2
        and all(len(row) == width for row in rows)
        and any(map(_has_a_number, rows[1:]))
    )


def _has_a_number(row: list[str]) -> bool:
    return any(is_lone_number(cell) for cell in row[1:])


def split_table(node: Mapping[str, object]) -> list[list[object]] | None:
    """An object that names a table's columns once beside rows of bare values, as the list of lists
    with its header row; ``None`` for any other object.

    pandas' ``orient="split"`` writes ``{"columns": [...], "index": [...], "data": [[...], ...]}``, and
    SQL tools answer ``{"columns": [...], "rows": [[...], ...]}``: read by shape, not by key names. The
    rows are the object's one member that is a list of lists, all of one width *W*; the column names the
    first member that is a list of *W* strings; the row names, if any, the next member that is a list of
    as many strings or numbers as there are rows, which then become each row's first cell.
    """
    lists = [value for value in node.values() if isinstance(value, list) and value]
    rows = [value for value in lists if all(isinstance(row, list) for row in value)]
    if len(rows) != 1:
        return None
    (data,) = rows
    width = len(data[0])
    if width == 0 or any(len(row) != width for row in data):
        return None
    names = [value for value in lists if value is not data and all(isinstance(name, str) for name in value)]
    columns = next((value for value in names if len(value) == width), None)
    if columns is None:
        return None
    index = next(
        (
            value
            for value in lists
            if value is not data
            and value is not columns
            and len(value) == len(data)
            and all(isinstance(name, str | int | float) and not isinstance(name, bool) for name in value)
        ),
        None,
    )
    if index is None:
        return [list(columns), *data]
    return [["", *columns], *([name, *row] for name, row in zip(index, data, strict=True))]
