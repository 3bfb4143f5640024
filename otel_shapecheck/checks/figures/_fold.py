"""Folding tool results into the numbers they carry and the column derivations over their lists.

Content is walked iteratively (nesting cannot exhaust the stack) within bounds on nodes, depth, rows,
fields and recorded numbers; every bound that cuts the fold sets ``truncated``, which can only flag
more figures, never fewer. The result is kept as parallel columns (:class:`~._carried.CarriedNumbers`,
which this walk fills), read by :class:`FigureBasis`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from operator import itemgetter
from typing import Final, TypeVar, cast

from otel_shapecheck._model import JSONValue
from otel_shapecheck.checks.figures._bounded_json import STRUCTURED_DEPTH, TALLY_DEPTH, read_bounded_json
from otel_shapecheck.checks.figures._carried import (
    DIGIT_RE,
    MARK_TEXT,
    MAX_BASIS_NUMBERS,
    CarriedNumbers,
    bounded_path,
    finite_or_nan,
    path_step,
    text_label,
)
from otel_shapecheck.checks.figures._columns import (
    MAX_GROUP_FIELDS,
    MAX_GROUP_VALUES,
    MIN_GROUP_VALUES,
    RowTable,
)
from otel_shapecheck.checks.figures._table_forms import split_table, text_table
from otel_shapecheck.checks.figures._text import (
    is_lone_number,
    may_state_a_number,
    normalize_token,
    numbers_in_text,
    plain_number,
)

MAX_ROWS: Final = 5_000
"""Rows of one list folded into columns."""

MAX_NUMERIC_FIELDS: Final = 64
"""Numeric fields of one list folded into columns."""

MAX_DEPTH: Final = 64
"""Deepest nesting of a tool result that is walked; deeper parts are skipped (and ``truncated`` set)."""

MAX_NODES: Final = 500_000
"""JSON nodes walked per basis, so one huge result costs bounded time."""

BOUNDED_READ_CHARS: Final = 1 << 16
"""Length from which a JSON text is read only as far as the fold can walk it (shorter ones are parsed
whole: they are cheap, and cannot hold more than the basis keeps)."""

BOUNDED_READ_LEVELS: Final = STRUCTURED_DEPTH + TALLY_DEPTH + 4
"""Levels below a JSON text within which the bounded reader counts numbers (its outer levels, an
element's nesting, and the levels the fold adds), kept under :data:`MAX_DEPTH`."""

_JSON_OPENERS: Final = frozenset("[{")
T = TypeVar("T")
_NUMBER_KINDS: Final = frozenset({int, float, type(None)})


class _ChildPaths:
    """Paths and field names of a container's children, built only for the children that need one.

    A child's path is its container's (:func:`bounded_path`) and its own step (:func:`path_step`), so it
    costs bounded memory however long the names above it: every number carried holds its path.
    """

    def __init__(self, at: str, keyed: bool) -> None:
        self.at = at
        """The container's own path (bounded)."""
        self._prefix = f"{at}." if at else ""
        self._keyed = keyed

    def path(self, name: str | int) -> str:
        return f"{self._prefix}{path_step(str(name))}" if self._keyed else f"{self.at}[{name}]"

    def key(self, name: str | int) -> str | None:
        return str(name) if self._keyed else None


class BasisBuilder(CarriedNumbers):
    """Folds tool-result content into parallel columns: carried numbers, their paths and fields, derivations.

    The walk is iterative (no recursion, so nesting cannot exhaust the stack). With ``structure`` it also
    notes what the extended derivations need and the closed ones ignore: which carried numbers were read
    out of a longer text, or written with ``%`` or as accounting negatives (:data:`MARK_TEXT`…), and the
    first text of each container (a row's label). Without it the fold is exactly the reference's.
    """

    def __init__(self, structure: bool = False) -> None:
        super().__init__()
        self.structure = structure
        self._nodes = 0
        self._stack: list[tuple[JSONValue, str, str | None, int]] = []

    def add(self, content: JSONValue) -> None:
        """Fold one tool result's content (JSON, JSON followed by text, or text) within the node budget.

        Once :data:`MAX_BASIS_NUMBERS` numbers are carried, nothing more is walked, of this result or
        of later ones: no number could be carried from it, and walking a huge remainder only to learn
        that cost most of the time of an answer. ``truncated`` says so.
        """
        if self.full:
            self.truncated |= _may_add(content, 0)
            return
        self._stack.append((content, "", None, 0))
        while self._stack:
            node, at, key, depth = self._stack.pop()
            self._nodes += 1
            if self._nodes > MAX_NODES:
                self.truncated = True
                self._stack.clear()
                return
            self._visit(node, at, key, depth)
            if self.full and self._stack:
                self.truncated |= any(_may_add(node, depth) for node, _, _, depth in self._stack)
                self._stack.clear()
                return

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
        if self.structure and isinstance(node, dict):
            table = split_table(node)
            if table is not None:  # column names beside rows of values: read as the list of lists they are
                node = cast("list[JSONValue]", table)
        room = max(MAX_NODES - self._nodes, 0)
        if len(node) > room:
            self.truncated = True
        self._nodes += min(len(node), room)
        children: Iterator[tuple[str | int, JSONValue]]
        at = bounded_path(at)
        keyed = isinstance(node, dict)
        if isinstance(node, dict):
            is_rows = len(node) >= 2 and _all_dicts(node.values())
            self._note_names(islice(node, room))
            children = islice(node.items(), room)
        else:
            is_rows = bool(node) and _all_dicts(node)
            children = enumerate(islice(node, room))
        child = _ChildPaths(at, keyed)
        if is_rows and depth + 1 < MAX_DEPTH:
            if len(node) > MAX_ROWS:
                self.truncated = True
            rows: list[tuple[str, str | None, JSONValue]]
            if keyed:  # _ChildPaths.path() and .key(), inline: a row each
                prefix = f"{at}." if at else ""
                rows = [
                    (f"{prefix}{path_step(str(name))}", str(name), row)
                    for name, row in islice(children, MAX_ROWS)
                ]
            else:
                rows = [(f"{at}[{name}]", None, row) for name, row in islice(children, MAX_ROWS)]
            self._read_rows(rows, at or "result", depth + 1)
        self._read_children(children, child, depth + 1)

    def _read_children(
        self, children: Iterator[tuple[str | int, JSONValue]], child: _ChildPaths, depth: int
    ) -> None:
        """Read scalar children now and queue containers, so nesting never recurses."""
        containers: list[tuple[JSONValue, str, str | None, int]] = []
        for name, value in children:
            if len(self.values) >= MAX_BASIS_NUMBERS:  # the basis bound: the rest is not walked
                self.truncated |= _may_add(value, depth) or any(_may_add(rest, depth) for _, rest in children)
                break
            kind = type(value)
            if value is None or kind is bool:
                continue
            if kind is float or kind is int:
                if len(self.values) >= MAX_BASIS_NUMBERS:
                    self.truncated = True
                    continue
                self._carry(value, child.path(name), child.key(name))  # type: ignore[arg-type]
            elif kind is str:
                if self.structure:
                    self._note_label(child.at, value)  # type: ignore[arg-type]
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
        row_dicts = [row for _, row in table]
        row_paths = [path for path, _ in table]
        row_count = len(table)
        names, shared = _field_names(row_dicts)
        self._note_names(names)
        for name, present, cells in _columns(row_dicts, names, shared):
            kinds = set(map(type, cells))
            paths = row_paths if present is None else [row_paths[index] for index in present]
            gaps = present is not None and len(present) < row_count
            if kinds <= _NUMBER_KINDS and kinds & _NUMBER_KINDS - {type(None)}:
                column = self._carry_column(name, cells, paths, gaps or type(None) in kinds)  # type: ignore[arg-type]
                if len(numeric) < MAX_NUMERIC_FIELDS:
                    column = _dense(column, present, row_count, math.nan)
                self._add_column(numeric, name, column)
            elif kinds <= {str, type(None)}:
                strings = cast("list[str | None]", cells)
                if _may_group(strings, row_count) and len(texts) <= MAX_GROUP_FIELDS:
                    texts[name] = _dense([text or None for text in strings], present, row_count, None)
                may_carry = {text: _may_carry(text) for text in set(strings) if text}
                labels = self.labels if self.structure else None
                label_of: dict[str, str | None] = {}  # a column repeats its texts: each is judged once
                step = path_step(name)
                for path, text in zip(paths, strings, strict=True):
                    if text and labels is not None and path not in labels and len(labels) < MAX_BASIS_NUMBERS:
                        if text not in label_of:
                            label_of[text] = text_label(text)
                        row_label = label_of[text]
                        if row_label is not None:
                            labels[path] = row_label
                    if text and may_carry[text]:
                        self._read_string(text, f"{path}.{step}", name, depth + 1)
            else:
                mixed = self._read_mixed_column(name, cells, paths, depth + 1, containers)
                if mixed is not None:
                    if len(numeric) < MAX_NUMERIC_FIELDS:
                        mixed = _dense(mixed, present, row_count, math.nan)
                    self._add_column(numeric, name, mixed)
        self._stack.extend(reversed(containers))
        self._fold(RowTable(numeric, texts, len(table)), label)

    def _add_column(self, numeric: dict[str, list[float]], name: str, column: list[float]) -> None:
        if len(numeric) >= MAX_NUMERIC_FIELDS:
            self.truncated = True
        else:
            numeric[name] = column

    def _read_mixed_column(
        self,
        name: str,
        cells: Sequence[JSONValue],
        paths: Sequence[str],
        depth: int,
        containers: list[tuple[JSONValue, str, str | None, int]],
    ) -> list[float] | None:
        """Read a column of mixed values cell by cell (``paths`` are the cells' rows); its numbers still
        form a column."""
        column = [math.nan] * len(cells)
        has_numbers = False
        step = path_step(name)
        for index, (path, cell) in enumerate(zip(paths, cells, strict=True)):
            if isinstance(cell, int | float) and not isinstance(cell, bool):
                column[index] = finite_or_nan(cell)
                has_numbers = True
                self._carry(cell, (path, step), name)
            elif isinstance(cell, dict | list):
                containers.append((cell, f"{path}.{step}", name, depth))
            else:
                self._visit_scalar(cell, f"{path}.{step}", name, depth)
        return column if has_numbers else None

    def _read_string(self, text: str, at: str, key: str | None, depth: int) -> None:
        if DIGIT_RE.search(text) is None:
            return
        stripped = text.lstrip()
        if stripped[:1] in _JSON_OPENERS and depth < MAX_DEPTH:
            parsed, rest = self._read_json(stripped, depth)
            if parsed is not None:
                self._stack.append((rest, at, None, depth))
                self._stack.append((parsed, at, key, depth + 1))
                return
            # Read as text from here; if it was cut short when recorded (an attribute length limit
            # cuts the value, not the document), what it held past the cut is missing from the basis.
            self.truncated |= _cut_short(stripped)
        if self.structure and "\n" in text and depth + 1 < MAX_DEPTH:  # a table has lines
            table = text_table(text)
            if table is not None:  # read as the list of lists it writes out, the text around it as text
                self._stack.append((table.rest, at, None, depth))
                self._stack.append((cast("JSONValue", table.rows), at, key, depth + 1))
                return
        if not may_state_a_number(text):
            return
        number = plain_number(normalize_token(text)) if len(text) <= 64 else None
        if number is not None:
            self._carry(number, at, key)
            if self.structure:
                self._mark_cell(text)
            return
        first = len(self.values)
        for value in numbers_in_text(text):
            if len(self.values) >= MAX_BASIS_NUMBERS:
                self.truncated = True
                break
            self._carry(value, at, None)
        if not self.structure:
            return
        if len(self.values) == first + 1 and is_lone_number(text):
            self._mark_cell(text)
        else:
            self.marks.update(dict.fromkeys(range(first, len(self.values)), MARK_TEXT))

    def _read_json(self, text: str, depth: int) -> tuple[JSONValue, str]:
        """The JSON value ``text`` starts with and the text after it, as :func:`_json_prefix` gives them.

        A text of :data:`BOUNDED_READ_CHARS` or more is read only as far as the fold can walk it: once an
        array of it is past the rows folded into columns and what was read fills the basis (or the node
        budget), the rest of the text is not parsed, and ``truncated`` says so. Only near the top, so
        that every number the reader counts lies above the depth bound and is one the fold carries.
        """
        if len(text) >= BOUNDED_READ_CHARS and depth + BOUNDED_READ_LEVELS < MAX_DEPTH:
            room = MAX_BASIS_NUMBERS - len(self.values)
            read = read_bounded_json(text, room, MAX_NODES - self._nodes, MAX_ROWS)
            if read is not None:
                self.truncated |= read.cut
                return read.value, read.rest
        return _json_prefix(text)


def _field_names(rows: list[dict[str, JSONValue]]) -> tuple[list[str], bool]:
    """Every field of the rows in first-seen order (one look when all rows share the first row's fields),
    and whether they all do."""
    if not rows:
        return [], True
    first = rows[0].keys()
    if all(row.keys() == first for row in rows):
        return list(first), True
    return list(dict.fromkeys(name for row in rows for name in row)), False


def _columns(
    rows: list[dict[str, JSONValue]], names: list[str], shared: bool
) -> Iterator[tuple[str, list[int] | None, Sequence[JSONValue]]]:
    """Each field, in the order of ``names``, with the rows that have it (``None``: every row) and its
    cells in them, built in one pass over the rows: rows of different fields cost their cells, not
    fields × rows."""
    if shared:
        if len(names) > 1:  # every row has every field: one C-level transpose
            columns: Iterable[Sequence[JSONValue]] = zip(*map(itemgetter(*names), rows), strict=True)
        else:
            columns = ([row[name] for row in rows] for name in names)
        for name, cells in zip(names, columns, strict=True):
            yield name, None, cells
        return
    present: dict[str, list[int]] = {name: [] for name in names}
    cells_of: dict[str, list[JSONValue]] = {name: [] for name in names}
    for index, row in enumerate(rows):
        for name, cell in row.items():
            present[name].append(index)
            cells_of[name].append(cell)
    for name in names:
        yield name, present[name], cells_of[name]


def _dense(column: list[T], present: list[int] | None, rows: int, gap: T) -> list[T]:
    """A sparse column's cells down all ``rows`` (``gap`` where a row lacks the field)."""
    if present is None or len(present) == rows:
        return column
    dense = [gap] * rows
    for index, cell in zip(present, column, strict=True):
        dense[index] = cell
    return dense


def _may_group(strings: list[str | None], rows: int) -> bool:
    """Whether a text column can group its rows (:meth:`RowTable.groupings` reads only those)."""
    distinct = len({text for text in strings if text})
    return MIN_GROUP_VALUES <= distinct <= MAX_GROUP_VALUES and distinct < rows


def _may_add(node: JSONValue, depth: int) -> bool:
    """Whether walking ``node`` could add to a full basis (a named number, a derivation) or would have
    set ``truncated`` itself: anything but ``null``, booleans, text without a digit and empty containers
    above the depth bound. Skipping it then sets ``truncated``."""
    if node is None or isinstance(node, bool):
        return False
    if isinstance(node, str):
        return DIGIT_RE.search(node) is not None
    if isinstance(node, dict | list):
        return bool(node) or depth >= MAX_DEPTH
    return True


def _all_dicts(values: Iterable[JSONValue]) -> bool:
    """Whether every value is a dict (``isinstance`` over the distinct types, not every value)."""
    return all(issubclass(kind, dict) for kind in set(map(type, values)))


def _may_carry(text: str) -> bool:
    """Whether a string can carry a number: JSON to parse, or a token that can start a number."""
    if DIGIT_RE.search(text) is None:
        return False
    return text.lstrip()[:1] in _JSON_OPENERS or may_state_a_number(text)


_JSON_TOKEN: Final = re.compile(r'[][{}"]')
"""A bracket, or the quote opening a JSON string."""
_STRING_STOP: Final = re.compile(r'["\\]')
"""Where a JSON string's plain run stops: its closing quote or an escape."""


def _cut_short(text: str) -> bool:
    """Whether ``text``, which is not JSON, reads as a JSON document cut before its end: its brackets
    nest, and one is still open (or a string inside one is) where the text stops.

    Strings are skipped by searching for their quote or next escape, never by one pattern repeated over
    their characters: a regular expression's repetition keeps a backtracking record per character, about
    a hundred bytes each, so an unterminated ten-megabyte string cost a gigabyte.
    """
    opened: list[str] = []
    position = 0
    while (match := _JSON_TOKEN.search(text, position)) is not None:
        token = match.group()
        if token == '"':
            end = _string_end(text, match.end())
            if end < 0:  # a string the text ends in
                return bool(opened)
            position = end
            continue
        position = match.end()
        if token == "{" or token == "[":
            opened.append("}" if token == "{" else "]")
        elif not opened or opened.pop() != token or not opened:
            return False  # mismatched, or the document closed: malformed, not cut
    return bool(opened)


def _string_end(text: str, start: int) -> int:
    """Where the JSON string whose content starts at ``start`` ends (past its closing quote), or ``-1``
    when the text ends inside it (or an escape escapes nothing: a line break, or the end)."""
    position = start
    while (stop := _STRING_STOP.search(text, position)) is not None:
        if stop.group() == '"':
            return stop.end()
        escaped = stop.end()
        if escaped >= len(text) or text[escaped] == "\n":
            return -1
        position = escaped + 1
    return -1


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
