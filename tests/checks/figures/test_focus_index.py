"""The indexes the focus is found with find exactly what scanning every label, column and window found."""

from __future__ import annotations

import json
import random

import pytest

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures import _focus
from otel_shapecheck.checks.figures._answer_words import (
    _SENTENCE_END,
    MAX_CONTEXT_SENTENCES,
    AnswerSentences,
    AnswerWords,
    _sentence_words,
    phrase_text,
)
from otel_shapecheck.checks.figures._basis import figure_basis
from otel_shapecheck.checks.figures._cells import Cells, read_cells
from otel_shapecheck.checks.figures._focus import find_focus
from otel_shapecheck.checks.figures._table_labels import MAX_ROW_DOCUMENT_FREQUENCY, LabelQuotes, TableLabels

VOCABULARY = ["item", "revenue", "total", "net", "cost", "a", "b", "2019", "of", "sales", "other", "O'Neil's"]
"""Few words, so that labels repeat, contain one another and share words with sentences ("O'Neil's" is
quoted by "o neil s", which shares none of its words: it must not be quoted)."""


def _label(rng: random.Random) -> str:
    words = [rng.choice(VOCABULARY) for _ in range(rng.randint(1, 4))]
    text = " ".join(word.title() if rng.random() < 0.3 else word for word in words)
    return text + (" (1)" if rng.random() < 0.1 else "")


def _sentence(rng: random.Random) -> str:
    return " ".join(
        rng.choice([*VOCABULARY, "grew", "from", "2018", "to", "in", "o neil s"])
        for _ in range(rng.randint(0, 25))
    )


def _labels_of(table: list[list[str]]) -> tuple[TableLabels, Cells]:
    result = ToolResult(json.dumps(table), name="get_table")
    basis = figure_basis([result], structure=True)
    cells = read_cells(basis.structure)
    return TableLabels(cells, basis.structure.paths, [result]), cells


@pytest.mark.parametrize("seed", range(20))
def test_the_automaton_finds_exactly_the_labels_a_phrase_contains(seed: int) -> None:
    rng = random.Random(seed)
    phrases = {f"row {index}": phrase_text(_label(rng)) for index in range(rng.randint(1, 60))}
    quotes = LabelQuotes(phrases)
    for _ in range(50):
        phrase = phrase_text(_sentence(rng))
        found = quotes.found_in(phrase)
        assert found == {label for label in quotes.rows_by_phrase if label in phrase}
        contained = quotes.contained(found) & found
        assert contained == {
            label for label in found if any(label != other and label in other for other in found)
        }


def _scanned_quoted_rows(words: AnswerWords, labels: TableLabels, _: object) -> dict[str, str]:
    """The quoted rows found by testing every row that could be quoted, one label at a time."""
    if words.source is None:
        return {}
    quotable = sorted(
        [*labels.rows_sharing(words.words), *labels.wordless_rows], key=labels.row_order.__getitem__
    )
    found = {
        row: labels.row_phrases[row]
        for row in quotable
        if len(labels.row_phrases[row].split()) >= 2 and labels.row_phrases[row] in words.phrase
    }
    return {
        row: label
        for row, label in found.items()
        if not any(label != other and label in other for other in found.values())
    }


def _scanned_single_labels(
    words: AnswerWords, labels: TableLabels, _: object
) -> list[tuple[float, int, str]]:
    """The quoted one-word labels found by testing every row without content words."""
    by_label: dict[str, list[str]] = {}
    for row in labels.wordless_rows:
        label = labels.row_phrases[row]
        if len(label.split()) == 1 and not label.strip().isdigit() and label in words.phrase:
            by_label.setdefault(label, []).append(row)
    return [
        (-1.0 / len(rows), labels.row_order[row], row)
        for rows in by_label.values()
        if len(rows) <= MAX_ROW_DOCUMENT_FREQUENCY
        for row in rows
    ]


@pytest.mark.parametrize("seed", range(30))
def test_find_focus_by_the_index_is_find_focus_by_scanning_every_row(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(seed)
    rows = [
        [_label(rng), f"{rng.randint(1, 99)}.5", f"{rng.randint(1, 99)}.25"]
        for _ in range(rng.randint(1, 40))
    ]
    labels, cells = _labels_of([["", "2019", "2018"], *rows])
    answer = ". ".join(f"{_sentence(rng)} {index}.37%" for index in range(40))
    sentences = AnswerSentences(answer)
    reads = [
        read
        for figure in range(40)
        for words in [sentences.around(answer.index(f" {figure}.37%"), 4)]
        for read in (words, *words.context)
    ]
    indexed = [find_focus(read, labels, cells) for read in reads]
    monkeypatch.setattr(_focus, "_quoted_rows", _scanned_quoted_rows)
    monkeypatch.setattr(_focus, "_quoted_single_labels", _scanned_single_labels)
    assert indexed == [find_focus(read, labels, cells) for read in reads]


@pytest.mark.parametrize("seed", range(10))
def test_the_column_index_names_the_columns_a_scan_names(seed: int) -> None:
    rng = random.Random(seed)
    headers = [" ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(1, 3))) for _ in range(30)]
    table = [["", *headers], ["Sales", *(f"{index}.5" for index in range(30))]]
    labels, _ = _labels_of(table)
    for _ in range(50):
        words = _sentence_words(*(lambda text: (text, 0, len(text)))(_sentence(rng)))
        scanned = {
            header
            for header, members in labels.by_column.items()
            if labels.column_words[members[0]] & words.words or labels.column_years[members[0]] & words.years
        }
        assert labels.columns_naming(words.words, words.years) == scanned


PIECES = [
    "Revenue",
    "percent",
    "percentage",
    "%",
    "change",
    "changeover",
    "growth",
    "increase",
    "2017",
    "2019",
    "(a)",
    "(",
    ")",
    "a)",
    "Total",
    "costs",
    ".",
    ". ",
    ";\n",
    "\n",
    "\n \n",
    " ",
    "  ",
    "\r\n",
    "1.5",
    "Σ",
    "İtem",
]


ANSWERS = [
    # "percent" and "change" either side of a break read as a change only together: 2019 names 2018 too
    "Revenue in 2019 in percent\nchangeover of costs 1.5",
    "Revenue in 2019 percentage \n \n growthy costs 1.5; and 1.5",
    "Costs (\na) 1.5. Total (b)\n1.5",
]


@pytest.mark.parametrize("seed", range(-len(ANSWERS), 40))
def test_each_context_window_reads_as_its_joined_text(seed: int) -> None:
    rng = random.Random(seed)
    answer = (
        ANSWERS[seed]
        if seed < 0
        else "".join(rng.choice(PIECES) + rng.choice(["", " "]) for _ in range(rng.randint(1, 120)))
    )
    breaks = [match.span() for match in _SENTENCE_END.finditer(answer)]
    sentences = AnswerSentences(answer)
    at = answer.find("1.5")
    while at >= 0:
        words = sentences.around(at, 3)
        before = sum(1 for _, end in breaks if end <= at)
        end = next((start for start, _ in breaks if start >= at + 3), len(answer))
        starts = [breaks[before - back - 1][1] if before - back else 0 for back in range(1, before + 1)]
        expected = [_sentence_words(answer, start, end) for start in starts[:MAX_CONTEXT_SENTENCES]]
        assert [(read.words, read.years, read.phrase) for read in words.context] == [
            (read.words, read.years, read.phrase) for read in expected
        ]
        assert all(read.operations == words.operations for read in words.context)
        at = answer.find("1.5", at + 1)
