"""The cells an answer's own words point to, and the few candidates computed from them alone.

An analyst's figure usually says what it is computed from: "the change in Additions from 2018 to
2019", "the average of the three regions", "Taiwan and Japan as a percentage of total revenue". This
module reads the words of the sentence around a figure (content words, years, operation words), matches
them to the labels of the cells' rows (the row's first text) and columns (a field name, or the header
texts and years above a column of a list-of-lists table), and keeps the cells in the matched rows and
columns: the *focus*. The candidates are then only the arithmetic of those cells the operation words
name (differences, percent changes, averages, sums, quotients, products, and the two-step ones analysts
write: an average or sum of a row, a column or a run of the focus, and its change, percent change or
share), so there
are few of them; the coincidence bound counts exactly those, and a figure that matches one is accepted
at a much smaller chance than against every pair of the table. Nothing here looks at the figure's
value: the focus is chosen from the words, so the bound stays a bound on a random number.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import permutations
from typing import Final

import numpy as np

from otel_shapecheck.checks.figures._answer_words import AnswerWords
from otel_shapecheck.checks.figures._cells import Cells
from otel_shapecheck.checks.figures._table_labels import MAX_ROW_DOCUMENT_FREQUENCY, TableLabels

MAX_FOCUS_CELLS: Final = 12
"""A focus of more cells than this is too broad to be a focus: the figure is asked the full set only."""
MAX_FOCUS_ROWS: Final = 4
"""Rows kept in a focus, the best-matched first."""


@dataclass(frozen=True)
class Focus:
    """The cells an answer's words point to."""

    members: tuple[int, ...]
    """Cell positions, reading order."""
    rows: tuple[str, ...]
    """The rows' labels, best-matched first."""
    columns: tuple[str, ...]
    """The columns' names ("2019"), or ``()`` when every column of the rows is kept."""
    by_column: bool = False
    """No row was named: the one column the words or years name."""


def find_focus(words: AnswerWords, labels: TableLabels, cells: Cells) -> Focus | None:
    """The cells of the rows the words name best, in the columns their years (or words) name."""
    if not words.words and not labels.wordless_rows:
        return None
    by_row = labels.by_row
    quoted_labels = _quoted_labels(words, labels)
    quoted = _quoted_rows(words, labels, quoted_labels)
    first = sorted((-float(len(label)), labels.row_order[row], row) for row, label in quoted.items())
    # A quoted label names its row; the sentence's other words still name the rows it is taken with
    # ("the portion of the total purchase price related to stock awards"), ranked after it.
    remaining = words.words.difference(*(labels.row_vocabulary[row] for row in quoted))
    # Years name rows only in a table whose headers carry none of them (years down the first column).
    by_year = labels.year_scores(words.years) if not words.years & labels.header_years else {}
    year_rows = set(by_year)
    # Only a word few rows carry scores a row, so only the rows carrying such a word are scored: a long
    # table whose every label shares a word ("Item 1 revenue", …) costs its named rows, not all of them.
    rare = {
        word: len(labels.rows_by_word[word])
        for word in remaining
        if 0 < len(labels.rows_by_word.get(word, ())) <= MAX_ROW_DOCUMENT_FREQUENCY
    }
    scored: list[tuple[float, int, str]] = []
    for row in sorted({row for word in rare for row in labels.rows_by_word[word]} - quoted.keys()):
        shared = sorted(labels.row_vocabulary[row] & rare.keys())
        score = math.fsum(1.0 / rare[word] for word in shared) + by_year.pop(row, 0.0)
        scored.append((-score, labels.row_order[row], row))
    if not quoted:
        scored += _quoted_single_labels(words, labels, quoted_labels)
    named = {row for _, _, row in (*first, *scored)}
    scored += [(-score, labels.row_order[row], row) for row, score in by_year.items() if row not in named]
    if not first and not scored:
        return _column_focus(words, labels, cells)
    scored.sort()
    rows = [row for _, _, row in [*first, *scored][:MAX_FOCUS_ROWS]]
    members = sorted(
        position for row in rows for position in by_row[row] if position not in labels.year_labels
    )
    columns: tuple[str, ...] = ()
    if words.years:
        in_years = [
            position
            for position in members
            if labels.column_years[position] & words.years or labels.rows[position] in year_rows
        ]
        if in_years:
            members = in_years
            columns = tuple(
                dict.fromkeys(
                    labels.column_names[position]
                    for position in members
                    if labels.column_years[position] & words.years
                )
            )
    if not 1 <= len(members) <= MAX_FOCUS_CELLS:
        return None
    kept = {labels.rows[position] for position in members}
    names = tuple(labels.row_names[row] for row in rows if row in kept)
    return Focus(tuple(members), names, columns)


def _quoted_labels(words: AnswerWords, labels: TableLabels) -> set[str]:
    """Every row label the phrase contains, from one scan of its words
    (:class:`~._table_labels.LabelQuotes`)."""
    if words.source is None:  # no phrase: nothing is quoted
        return set()
    return labels.quotes.found_in(words.phrase)


def _quoted_rows(words: AnswerWords, labels: TableLabels, quoted_labels: set[str]) -> dict[str, str]:
    """The rows whose whole label (at least two words) the sentence quotes, except a label that is part of
    another quoted one ("assets" inside "total assets"). Only a row carrying one of the sentence's words,
    or no content word at all, is quoted."""
    rows = labels.quotes.rows_by_phrase
    found = {
        row: label
        for label in quoted_labels
        if len(label.split()) >= 2
        for row in rows[label]
        if not labels.row_vocabulary[row] or labels.row_vocabulary[row] & words.words
    }
    within = labels.quotes.contained(set(found.values()))
    return {
        row: found[row] for row in sorted(found, key=labels.row_order.__getitem__) if found[row] not in within
    }


def _quoted_single_labels(
    words: AnswerWords, labels: TableLabels, quoted_labels: set[str]
) -> list[tuple[float, int, str]]:
    """Rows labelled by one common word the sentence quotes ("Total", "Net"), scored as a word that names
    one row: "the percentage change in the total" names the Total row, beside the rows its other words name.
    Only when at most :data:`MAX_ROW_DOCUMENT_FREQUENCY` rows carry that label."""
    by_label: dict[str, list[str]] = {}
    rows_by_phrase = labels.quotes.rows_by_phrase
    candidates = sorted(
        (
            row
            for label in quoted_labels
            if len(label.split()) == 1
            for row in rows_by_phrase[label]
            if not labels.row_vocabulary[row]
        ),
        key=labels.row_order.__getitem__,
    )
    for row in candidates:
        label = labels.row_phrases[row]
        # A row named only by its path ("[0]") has no label to quote: its digits would be the figure's.
        if not label.strip().isdigit():
            by_label.setdefault(label, []).append(row)
    return [
        (-1.0 / len(rows), labels.row_order[row], row)
        for rows in by_label.values()
        if len(rows) <= MAX_ROW_DOCUMENT_FREQUENCY
        for row in rows
    ]


def _column_focus(words: AnswerWords, labels: TableLabels, cells: Cells) -> Focus | None:
    """When no row is named: the cells of the one column the words or years name ("the sum of all …")."""
    named = labels.columns_naming(words.words, words.years)
    if len(named) != 1:
        return None
    (header,) = named
    members = labels.by_column[header]
    if not 2 <= len(members) <= MAX_FOCUS_CELLS:
        return None
    rows = tuple(dict.fromkeys(labels.row_names[labels.rows[position]] for position in members))
    return Focus(tuple(members), rows, (header,), by_column=True)


@dataclass(frozen=True)
class FocusCandidates:
    """The candidate values of one focus for one kind of figure, each with its words."""

    values: np.ndarray
    """Sorted."""
    words: tuple[str, ...]
    """How each sorted value was made: ``(2.7 + 2.0 + 1.0) / 3``."""

    def count_within(self, low: float, high: float) -> int:
        """Distinct candidate values in ``[low, high]``."""
        inside = self.values[(self.values >= low) & (self.values <= high)]
        return int(np.unique(inside).size)

    def first_within(self, low: float, high: float) -> int | None:
        """The first-made candidate in ``[low, high]``, if any."""
        inside = np.flatnonzero((self.values >= low) & (self.values <= high))
        return int(inside[0]) if inside.size else None


@dataclass(frozen=True)
class _Operand:
    """A cell of the focus, or an aggregate of some of them, with where it sits."""

    value: float
    words: str
    row: str
    """The row it sits in; ``*`` for an aggregate over rows."""
    column: str
    """The column it sits in; ``*`` for an aggregate over columns."""
    percent: bool
    level: int = 0
    """0 for a cell, 1 for an aggregate of a row or a column of the focus, 2 for all of it."""
    change: bool = False
    """It sits in a column of changes (or aggregates such cells)."""


def focus_candidates(
    focus: Focus, cells: Cells, labels: TableLabels, operations: frozenset[str], percent: bool
) -> FocusCandidates:
    """The arithmetic of the focus the operation words name (all of it when they name none).

    Operands are the focus's cells and, under "average" or "sum", the averages or sums of each of its
    rows, each of its columns and all of it (the first step of a two-step derivation). From them: the
    aggregates themselves; under a difference word the differences of two operands and, for a ``%``
    figure, their percent changes; under a quotient word their quotients (``%`` figures: 100 × a / b),
    also over the largest cell of the operand's column (the share of a subtotal). Two operands are
    combined only when they are both cells or both aggregates of a row or column, share a row or a
    column, and both or neither are percentages (a cell written
    with ``%`` or under a header that says ``%``); quotients and percent changes take no percentages. A
    ``%`` figure is also asked the differences of amounts (percentage points written without ``%``).
    Under "average" or "sum", runs of three or more neighbouring cells of one row or column are summed
    and averaged too; a plain figure under no operation word, a sum word or a product word is asked the
    products of two cells of one row (an amount × a percentage as × rate / 100).
    """
    every = not operations
    operands = [
        _Operand(
            float(cells.values[m]),
            _number(float(cells.values[m])),
            labels.rows[m],
            labels.column_names[m],
            bool(cells.percent[m]) or labels.column_percent[m],
            change=labels.column_change[m],
        )
        for m in focus.members
    ]
    aggregates: list[_Operand] = []
    made: list[tuple[float, str]] = []
    if every or operations & {"average", "sum"}:
        for members, row, column in _subsets(operands):
            if len(members) < 2:
                continue
            total = math.fsum(member.value for member in members)
            joined = " + ".join(member.words for member in members)
            share, change = members[0].percent, members[0].change
            level = 2 if row == column == "*" else 1
            if every or "sum" in operations:
                aggregates.append(_Operand(total, f"({joined})", row, column, share, level, change))
            if every or "average" in operations:
                mean = total / len(members)
                words = f"({joined}) / {len(members)}"
                aggregates.append(_Operand(mean, words, row, column, share, level, change))
        made += _pair_aggregates(operands, operations, percent)
        made += _run_aggregates(operands, operations, percent)
        if {"average", "difference"} <= operations:
            aggregates += _adjacent_averages(operands)
    made += [(a.value, a.words) for a in aggregates if a.percent == percent]
    pool = operands + aggregates
    pairs = [
        (a, b)
        for a, b in permutations(pool, 2)
        if (a.row == b.row or a.column == b.column)
        and (a.percent, a.change) == (b.percent, b.change)
        and a.level == b.level < 2
    ]
    if every or "difference" in operations:
        for a, b in pairs:
            if percent or not a.percent:
                made.append((a.value - b.value, f"{a.words} − {b.words}"))
            if percent and b.value != 0:
                made.append((100 * (a.value - b.value) / b.value, f"({a.words} − {b.words}) / {b.words}"))
    if every or "quotient" in operations:
        totals = _column_totals(focus, cells, labels)
        shares = [(a, total) for a in pool for total in totals if total.column == a.column]
        for a, b in [*pairs, *shares]:
            if not a.percent and not b.percent and b.value != 0 and a.value * b.value > 0:
                ratio = a.value / b.value
                made.append(
                    (100 * ratio, f"100 × {a.words} / {b.words}")
                    if percent
                    else (ratio, f"{a.words} / {b.words}")
                )
    if not percent and (every or operations & {"product", "sum"}):
        made += _products(operands)
    if "decrease" in operations:
        made += [(-value, f"−({words})") for value, words in made if value < 0]
    amounts = [operand.value for operand in operands if not operand.percent]
    if amounts and all(value < 0 for value in amounts):
        # "(16)" and "(15)" are amounts an analyst averages as 15.5: a row of negatives read as sizes.
        made += [(-value, f"−({words})") for value, words in made]
    finite = [(value, words) for value, words in made if math.isfinite(value)]
    order = sorted(range(len(finite)), key=lambda index: (finite[index][0], index))
    return FocusCandidates(
        np.asarray([finite[index][0] for index in order], dtype=np.float64),
        tuple(finite[index][1] for index in order),
    )


def _column_totals(focus: Focus, cells: Cells, labels: TableLabels) -> list[_Operand]:
    """The totals a share of the focus divides by: the largest cell of each column the focus sits in
    (a table's own total row), for columns of one sign."""
    members = set(focus.members)
    totals: list[_Operand] = []
    for column in cells.columns:
        if not members & set(column.members):
            continue
        values = cells.values[list(column.members)]
        if values.size and np.any(values > 0):  # a total of the column's positive items
            at = int(np.argmax(values))
            largest = float(values[at])
            position = column.members[at]
            if all(largest != float(cells.values[m]) for m in members):
                name = labels.column_names[position]
                totals.append(_Operand(largest, f"{_number(largest)} (total of {name})", "*", name, False))
    return totals


def _pair_aggregates(
    operands: Sequence[_Operand], operations: frozenset[str], percent: bool
) -> list[tuple[float, str]]:
    """The sums and averages of two cells of one row of the focus, of one kind: "the average of 2018 and
    2019" when the sentence names no year and the row holds three or more."""
    every = not operations
    made: list[tuple[float, str]] = []
    for index, a in enumerate(operands):
        for b in operands[index + 1 :]:
            if a.row != b.row or (a.percent, a.change) != (b.percent, b.change) or a.percent != percent:
                continue
            total = a.value + b.value
            if every or "sum" in operations:
                made.append((total, f"{a.words} + {b.words}"))
            if every or "average" in operations:
                made.append((total / 2, f"({a.words} + {b.words}) / 2"))
    return made


MIN_RUN: Final = 3
"""The fewest cells a run summed apart from its whole row or column holds (two are pair sums)."""


def _run_aggregates(
    operands: Sequence[_Operand], operations: frozenset[str], percent: bool
) -> list[tuple[float, str]]:
    """The sums and averages of every run of :data:`MIN_RUN` or more neighbouring cells of one row or one
    column of the focus, of one kind, short of the whole row or column (its aggregate already is one):
    "the total of the notes due in 2015, 2016 and 2017" in a row of five years."""
    every = not operations
    made: list[tuple[float, str]] = []
    lines: dict[tuple[str, str, bool, bool], list[_Operand]] = {}
    for operand in operands:
        kind = (operand.percent, operand.change)
        lines.setdefault(("row", operand.row, *kind), []).append(operand)
        lines.setdefault(("column", operand.column, *kind), []).append(operand)
    for (_, _, share, _), line in lines.items():
        if share != percent:
            continue
        for start in range(len(line)):
            for stop in range(start + MIN_RUN, len(line) + (start > 0)):
                run = line[start:stop]
                total = math.fsum(member.value for member in run)
                joined = " + ".join(member.words for member in run)
                if every or "sum" in operations:
                    made.append((total, f"({joined})"))
                if every or "average" in operations:
                    made.append((total / len(run), f"({joined}) / {len(run)}"))
    return made


def _products(operands: Sequence[_Operand]) -> list[tuple[float, str]]:
    """The products of two amounts of one row of the focus in different columns (shares × price), and
    of an amount and a percentage of one row (an amount × its rate / 100)."""
    made: list[tuple[float, str]] = []
    cells = [operand for operand in operands if not operand.change]
    for index, a in enumerate(cells):
        for b in cells[index + 1 :]:
            if a.row != b.row or a.column == b.column or (a.percent and b.percent):
                continue
            if a.percent or b.percent:
                made.append((a.value * b.value / 100, f"{a.words} × {b.words} / 100"))
            else:
                made.append((a.value * b.value, f"{a.words} × {b.words}"))
    return made


def _adjacent_averages(operands: Sequence[_Operand]) -> list[_Operand]:
    """The averages of two neighbouring cells of one row (consecutive periods), as operands of a second
    step: "the change in the average between 2017-2018 and 2018-2019" is the difference of two of them.
    Only neighbours, and only when the sentence names both an average and a change: every pair's
    average as an operand was measured to add more coincidences than answers."""
    made: list[_Operand] = []
    for a, b in itertools.pairwise(operands):
        if a.row == b.row and (a.percent, a.change) == (b.percent, b.change):
            words = f"({a.words} + {b.words}) / 2"
            made.append(_Operand((a.value + b.value) / 2, words, a.row, "*", a.percent, 1, a.change))
    return made


def _subsets(operands: Sequence[_Operand]) -> list[tuple[list[_Operand], str, str]]:
    """The focus's rows, its columns and all of it, each with the row and column it sits in, each split
    by kind: a row's amounts are summed apart from its percentages (its "% change" cells)."""
    subsets: list[tuple[list[_Operand], str, str]] = []
    for kind in ((False, False), (False, True), (True, False), (True, True)):
        of_kind = [operand for operand in operands if (operand.percent, operand.change) == kind]
        by_row: dict[str, list[_Operand]] = {}
        by_column: dict[str, list[_Operand]] = {}
        for operand in of_kind:
            by_row.setdefault(operand.row, []).append(operand)
            by_column.setdefault(operand.column, []).append(operand)
        subsets += [(members, row, "*") for row, members in by_row.items()]
        if len(by_row) > 1:
            subsets += [(members, "*", column) for column, members in by_column.items()]
            subsets.append((of_kind, "*", "*"))
    return subsets


def _number(value: float) -> str:
    text = str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return f"({text})" if value < 0 else text
