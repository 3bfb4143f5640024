"""The labels of a table's cells, as the answer's words are matched to them: each row's first text and
each column's field name or, in a list-of-lists table, the header texts and years above it, with the
cells marked as percentages or changes by their own headers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Final, cast

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._answer_words import content_words, phrase_text, years_in
from otel_shapecheck.checks.figures._carried import path_step
from otel_shapecheck.checks.figures._cells import Cells, split_path
from otel_shapecheck.checks.figures._table_forms import split_table, text_table

MAX_ROW_DOCUMENT_FREQUENCY: Final = 3
"""A word names rows only when at most this many rows carry it ("total" in every subtotal does not)."""
MAX_HEADER_BYTES: Final = 65_536
"""Tool results longer than this are not re-read for column headers (their columns keep their keys)."""

_PERCENT_HEADER = re.compile(r"%|(?<!except )\bpercent", re.I)
""""%" or "percent" in a header marks a column of percentages; "(… except percentages)" does not."""
_CHANGE_HEADER = re.compile(r"\b(?:change|changes|increase|decrease|variation|vs|versus)\b", re.I)
"""A header naming a column of changes ("Change increase (decrease)", "2019 vs 2018"): its cells are not
periods of the row, and are summed, averaged and subtracted only among themselves."""


class TableLabels:
    """The label words of every cell's row and column, read from the cells and the tool results.

    A row is named by its first text; a column by its field name, or, in a table given as a list of
    lists, by the texts above its first amount (a header cell left empty takes the text to its left, as
    a spanning header does) and the years written there.
    """

    def __init__(self, cells: Cells, paths: Sequence[object], tool_results: Iterable[ToolResult]) -> None:
        headers, sections = _list_table_headers(tool_results)
        self.rows: list[str] = []
        self.row_words: list[frozenset[str]] = []
        self.row_texts: list[str] = []
        """Each cell's row label: its first text, or for an unlabelled row of a list-of-lists table (a
        subtotal under a section heading) the heading above it."""
        self.column_words: list[frozenset[str]] = []
        self.column_years: list[frozenset[int]] = []
        self.column_names: list[str] = []
        self.column_percent: list[bool] = []
        """Whether the column's header says its cells are percentages (``%``, ``percent``)."""
        self.column_change: list[bool] = []
        """Whether the column's header says it holds changes (:data:`_CHANGE_HEADER`)."""
        words_of: dict[str, frozenset[str]] = {}
        unlabelled: list[bool] = []
        column_of: dict[tuple[str, str], tuple[frozenset[str], frozenset[int], str, bool, bool]] = {}
        """Each column's words, years, name and kinds, read once (a column repeats down its rows)."""
        for position, path in enumerate(paths):
            row_label = cells.row_labels[position]
            if isinstance(path, tuple):
                table, column = split_path(path[0])[0], str(path[1])
                row = str(path[0])
            elif isinstance(path, str):
                row, column = split_path(path)
                table = split_path(row)[0]
            else:  # pragma: no cover - paths are strings or pairs
                row, column, table = str(path), "", ""
            if sections:  # only list-of-lists tables with unlabelled rows have any
                row_label = sections.get((table, split_path(row)[1]), row_label)
            if row_label not in words_of:  # labels repeat down a column and along a row: read each once
                words_of[row_label] = frozenset(content_words(row_label))
            key = (table, column)
            if key not in column_of:
                if column.isdigit():
                    header, own = headers.get(key, ("", ""))
                else:
                    header = own = column.replace("_", " ")
                column_of[key] = (
                    frozenset(content_words(header)),
                    frozenset(years_in(header)),
                    header.strip() or f"column {column}",
                    bool(_PERCENT_HEADER.search(own)),
                    bool(_CHANGE_HEADER.search(own)),
                )
            column_words, column_years, column_name, column_percent, column_change = column_of[key]
            self.rows.append(row)
            unlabelled.append(row_label in (row, path))
            self.row_texts.append(row_label)
            self.row_words.append(words_of[row_label])
            self.column_words.append(column_words)
            self.column_years.append(column_years)
            self.column_names.append(column_name)
            self.column_percent.append(column_percent)
            self.column_change.append(column_change)
        self.by_row: dict[str, list[int]] = {}
        """Each row's cell positions, reading order (every figure of an answer reads them)."""
        for position, row in enumerate(self.rows):
            self.by_row.setdefault(row, []).append(position)
        named = {
            row: next((m for m in members if not unlabelled[m]), members[0])
            for row, members in self.by_row.items()
        }
        """Each row's labelled cell: not a number read out of the row's label itself (the footnote "1" of
        "L. Gordon Crovitz(1)" is labelled by its own path)."""
        self.row_vocabulary = {row: self.row_words[member] for row, member in named.items()}
        self.row_names = {row: self.row_texts[member] for row, member in named.items()}
        self.row_phrases = {row: phrase_text(name) for row, name in self.row_names.items()}
        self.rows_by_word: dict[str, list[str]] = {}
        """The rows carrying each word, in reading order (its length is the word's row frequency)."""
        for row, vocabulary in self.row_vocabulary.items():
            for word in sorted(vocabulary):
                self.rows_by_word.setdefault(word, []).append(row)
        self.year_labels = frozenset(
            position
            for position, path in enumerate(paths)
            if isinstance(path, str)
            and split_path(path)[1] == "0"
            and float(cells.values[position]).is_integer()
            and 1900 <= cells.values[position] <= 2100
        )
        """Whole years in the first column of a list-of-lists table: a row's label ("2019"), not an amount."""
        row_years: dict[str, set[int]] = {row: set(years_in(name)) for row, name in self.row_names.items()}
        for position in self.year_labels:
            row_years[self.rows[position]].add(int(cells.values[position]))
        self.header_years = frozenset(year for years in self.column_years for year in years)
        """Every year a column header carries: where columns are years, a year names a column, not a row."""
        self.rows_by_year: dict[int, list[str]] = {}
        """The rows whose label carries each year ("fiscal 2019", "2014 net revenue", a first cell 2019)."""
        for row in self.by_row:
            for year in sorted(row_years[row]):
                self.rows_by_year.setdefault(year, []).append(row)
        self.row_order = {row: order for order, row in enumerate(self.by_row)}
        self.wordless_rows = [row for row, vocabulary in self.row_vocabulary.items() if not vocabulary]
        """Rows whose label has no content word ("Net change"): a sentence can still quote them whole."""
        self.by_column: dict[str, list[int]] = {}
        """Each column name's cell positions, reading order."""
        for position, name in enumerate(self.column_names):
            self.by_column.setdefault(name, []).append(position)
        self.columns_by_word: dict[str, set[str]] = {}
        """The column names whose (first cell's) header carries each word."""
        self.columns_by_year: dict[int, set[str]] = {}
        """The column names whose (first cell's) header carries each year."""
        for name, members in self.by_column.items():
            for word in self.column_words[members[0]]:
                self.columns_by_word.setdefault(word, set()).add(name)
            for year in self.column_years[members[0]]:
                self.columns_by_year.setdefault(year, set()).add(name)
        self._quotes: LabelQuotes | None = None

    @property
    def quotes(self) -> LabelQuotes:
        """The row labels found in a phrase by one scan of it, built on first use."""
        if self._quotes is None:
            self._quotes = LabelQuotes(self.row_phrases)
        return self._quotes

    def rows_sharing_count(self, words: frozenset[str]) -> int:
        """An upper bound on the number of :meth:`rows_sharing` ``words``, without collecting them."""
        return sum(len(self.rows_by_word.get(word, ())) for word in words)

    def columns_naming(self, words: frozenset[str], years: frozenset[int]) -> set[str]:
        """The column names whose header carries any of ``words`` or ``years``."""
        found: set[str] = set()
        for word in words:
            found.update(self.columns_by_word.get(word, ()))
        for year in years:
            found.update(self.columns_by_year.get(year, ()))
        return found

    def rows_sharing(self, words: frozenset[str]) -> list[str]:
        """The rows that carry any of ``words``, in reading order: only they can be named."""
        found = {row for word in words for row in self.rows_by_word.get(word, ())}
        return sorted(found, key=self.row_order.__getitem__)

    def year_scores(self, years: frozenset[int]) -> dict[str, float]:
        """Each row a named year labels, scored as a word: 1 / the number of rows that year labels, for
        the years labelling at most :data:`MAX_ROW_DOCUMENT_FREQUENCY` rows."""
        scores: dict[str, float] = {}
        for year in sorted(years):
            rows = self.rows_by_year.get(year, ())
            if len(rows) <= MAX_ROW_DOCUMENT_FREQUENCY:
                for row in rows:
                    scores[row] = scores.get(row, 0.0) + 1.0 / len(rows)
        return scores


class LabelQuotes:
    """The row labels (:func:`phrase_text` strings) a phrase quotes, found in one scan of its words.

    An Aho–Corasick automaton over the labels' words: a phrase of *n* words costs *n* steps and the
    labels found, however many labels the table has, where testing each label against the phrase costs
    the rows times the phrase. ``label in phrase`` holds exactly when the label's words run, in order,
    in the phrase's words (both are words joined by single spaces between a leading and a trailing one).
    """

    def __init__(self, phrases: dict[str, str]) -> None:
        self.rows_by_phrase: dict[str, list[str]] = {}
        """The rows carrying each label of at least one word, reading order."""
        for row, phrase in phrases.items():
            if phrase.split():
                self.rows_by_phrase.setdefault(phrase, []).append(row)
        self._goto: list[dict[str, int]] = [{}]
        self._label: list[str | None] = [None]
        for phrase in self.rows_by_phrase:
            node = 0
            for word in phrase.split():
                following = self._goto[node].get(word)
                if following is None:
                    following = len(self._goto)
                    self._goto[node][word] = following
                    self._goto.append({})
                    self._label.append(None)
                node = following
            self._label[node] = phrase
        self._fail = [0] * len(self._goto)
        self._output = [0] * len(self._goto)
        """The nearest node down the failure links that ends a label (0: none)."""
        queue = list(self._goto[0].values())
        for node in queue:  # breadth first: a node's failure link is shallower, so already set
            for word, child in self._goto[node].items():
                fallback = self._fail[node]
                while fallback and word not in self._goto[fallback]:
                    fallback = self._fail[fallback]
                target = self._goto[fallback].get(word, 0)
                self._fail[child] = target if target != child else 0
                link = self._fail[child]
                self._output[child] = link if self._label[link] is not None else self._output[link]
                queue.append(child)

    def found_in(self, phrase: str) -> set[str]:
        """The labels ``phrase`` contains."""
        return self._scan(phrase.split(), set(), skip=0)

    def contained(self, labels: set[str]) -> set[str]:
        """The labels that are part of another of ``labels`` (any label, not only those given)."""
        within: set[str] = set()
        for label in labels:
            self._scan(label.split(), within, skip=self._node_of(label))
        return within

    def _node_of(self, label: str) -> int:
        node = 0
        for word in label.split():
            node = self._goto[node][word]
        return node

    def _scan(self, words: list[str], found: set[str], skip: int) -> set[str]:
        """Add to ``found`` every label in ``words``, except the one ending at node ``skip``. A label
        already in ``found`` has had every label it ends with added too, so the walk down the output
        links stops there."""
        goto, fail, output, label_of = self._goto, self._fail, self._output, self._label
        node = 0
        for word in words:
            while node and word not in goto[node]:
                node = fail[node]
            node = goto[node].get(word, 0)
            at = node if label_of[node] is not None else output[node]
            if at == skip and at:
                at = output[at]
            while at:
                label = label_of[at]
                assert label is not None
                if label in found:
                    break
                found.add(label)
                at = output[at]
        return found


def _list_table_headers(
    tool_results: Iterable[ToolResult],
) -> tuple[dict[tuple[str, str], tuple[str, str]], dict[tuple[str, str], str]]:
    """``(table path, column index) → (header text, its own part)`` of the list-of-lists tables at a
    result's top level (or one member deep), and ``(table path, row index) → section heading`` of their
    unlabelled rows (:func:`_sections_of`)."""
    headers: dict[tuple[str, str], tuple[str, str]] = {}
    sections: dict[tuple[str, str], str] = {}
    for result in tool_results:
        content = result.content
        if not isinstance(content, str) or len(content) > MAX_HEADER_BYTES:
            continue
        try:
            parsed: object = json.loads(content)
        except (ValueError, RecursionError):
            parsed = content  # a table written as text, as the fold reads it (:mod:`._table_forms`)
        whole = _list_table(parsed)
        tables = [("", whole)]
        if whole is None and isinstance(parsed, dict):  # its members, named as the fold names them
            tables = [(path_step(str(key)), _list_table(value)) for key, value in parsed.items()]
        for path, table in tables:
            if table is not None:
                for column, text in _headers_of(table).items():
                    headers.setdefault((path, str(column)), text)
                for index, heading in _sections_of(table).items():
                    sections.setdefault((path, str(index)), heading)
    return headers, sections


def _list_table(value: object) -> list[list[object]] | None:
    """``value`` as a list-of-lists table: a JSON one, one written as text (a Markdown, CSV or aligned
    table), or column names beside rows of values, each as the fold reads it (:mod:`._table_forms`)."""
    if isinstance(value, str):
        written = text_table(value)
        return cast("list[list[object]]", written.rows) if written is not None else None
    if isinstance(value, dict):
        return split_table(value)
    if isinstance(value, list) and value and all(isinstance(row, list) for row in value):
        return value
    return None


def _is_amount(cell: object) -> bool:
    if isinstance(cell, bool):
        return False
    if isinstance(cell, int | float):
        return not (float(cell).is_integer() and 1900 <= cell <= 2100)
    if not isinstance(cell, str):
        return False
    text = cell.strip().strip("$€£()%").replace(",", "").strip()
    try:
        value = float(text)
    except ValueError:
        return False
    return not (value.is_integer() and 1900 <= value <= 2100 and "." not in text)


def _sections_of(table: list[list[object]]) -> dict[int, str]:
    """The heading of each unlabelled row holding amounts: the nearest row above with a first text and no
    amounts ("Basic earnings per share (cents per share)" over "Continuing operations", "Discontinued
    operations" and their unlabelled subtotal). A flattened financial table leaves a subtotal's label
    empty; the heading is what a sentence calls it."""
    sections: dict[int, str] = {}
    heading = ""
    for index, row in enumerate(table):
        first = str(row[0]).strip() if row and row[0] is not None else ""
        amounts = any(_is_amount(cell) for cell in row[1:])
        if first and not amounts:
            heading = first
        elif not first and amounts and heading:
            sections[index] = heading
            heading = ""  # one subtotal per heading: a later unlabelled row is another's
    return sections


def _headers_of(table: list[list[object]]) -> dict[int, tuple[str, str]]:
    """Each column's header text: the non-empty cells above the first row holding an amount, and its own
    cells' text, without a spanning header taken from the left: only its own text says it holds
    percentages or changes (a flattened table's "Percent Change" over two columns often sits one column
    off, and must not mark the next)."""
    texts: dict[int, list[str]] = {}
    owns: dict[int, list[str]] = {}
    for row in table:
        if any(_is_amount(cell) for cell in row[1:]):
            break
        carried = ""
        for column, cell in enumerate(row):
            text = str(cell).strip() if cell is not None else ""
            if column == 0:
                continue
            if text:
                carried = text
                owns.setdefault(column, []).append(text)
            elif carried:
                text = carried
            if text:
                texts.setdefault(column, []).append(text)
    return {column: (" ".join(parts), " ".join(owns.get(column, ()))) for column, parts in texts.items()}
