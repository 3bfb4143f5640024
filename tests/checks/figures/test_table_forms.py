"""Tables written as text (Markdown, CSV, TSV, aligned columns) are read as the list of lists they write
out: the same cells, labels and headers, so the same verdicts, as the table given as JSON."""

from __future__ import annotations

import csv
import io
import json

import pytest

from otel_shapecheck import FiguresCheck
from otel_shapecheck._attributes import FIGURES_DERIVATIONS, FIGURES_INFERRED, FIGURES_UNSUPPORTED
from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._basis import figure_basis
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._table_forms import MAX_TABLE_CHARS, TextTable, split_table, text_table

from .test_extended import ASSETS
from .test_figures_check import answer_subject


def markdown(rows: list[list[str]], *, pipes: bool = True) -> str:
    def line(cells: list[str]) -> str:
        inner = " | ".join(cell.replace("|", "\\|") for cell in cells)
        return f"| {inner} |" if pipes else inner

    return "\n".join([line(rows[0]), line([":---", *["---:"] * (len(rows[0]) - 1)]), *map(line, rows[1:])])


def separated(rows: list[list[str]], delimiter: str = ",") -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(rows)
    return out.getvalue()


def aligned(rows: list[list[str]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = ("   ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)) for row in rows)
    return "\n".join(lines)


class TestPipeTables:
    def test_header_delimiter_and_body_rows(self) -> None:
        assert text_table(markdown(ASSETS)) == TextTable(ASSETS, "")

    def test_pipes_at_the_ends_are_optional(self) -> None:
        assert text_table(markdown(ASSETS, pipes=False)) == TextTable(ASSETS, "")

    def test_an_escaped_pipe_is_part_of_its_cell(self) -> None:
        rows = [["segment", "2019"], ["Food | Care", "1,997.8"]]
        assert text_table(markdown(rows)) == TextTable(rows, "")

    def test_the_text_around_the_table_is_kept_as_text(self) -> None:
        written = f"Assets by segment:\n\n{markdown(ASSETS)}\n\nSource: 10-K, 2019."
        assert text_table(written) == TextTable(ASSETS, "Assets by segment:\n\n\nSource: 10-K, 2019.")

    def test_short_rows_are_padded_and_long_ones_cut_to_the_header(self) -> None:
        written = "| item | 2019 | 2018 |\n|---|---|---|\n| Cost | 5 |\n| Sales | 7 | 8 | 9 |"
        assert text_table(written) == TextTable(
            [["item", "2019", "2018"], ["Cost", "5", ""], ["Sales", "7", "8"]], ""
        )

    def test_a_delimiter_row_of_another_width_is_no_table(self) -> None:
        """GFM: the delimiter row must match the header's number of cells."""
        assert text_table("| item | 2019 |\n|---|---|---|\n| Cost | 5 |") is None

    def test_a_row_of_dashes_without_pipes_is_no_delimiter(self) -> None:
        assert text_table("item | 2019\n---\nCost | 5") is None


class TestSeparatedValues:
    @pytest.mark.parametrize("delimiter", [",", "\t", ";"])
    def test_csv_tsv_and_semicolons(self, delimiter: str) -> None:
        assert text_table(separated(ASSETS, delimiter)) == TextTable(ASSETS, "")

    def test_a_quoted_field_keeps_its_thousands_separator(self) -> None:
        """csv quotes ``2,762.9``: the row still has three fields."""
        assert '"2,762.9"' in separated(ASSETS)
        assert text_table(separated(ASSETS)) is not None

    def test_unquoted_fields_that_are_numbers_are_whole_values(self) -> None:
        """``834,712`` in a CSV line is two fields (a writer would have quoted one number)."""
        assert text_table("item,2019,2018\nOther,834,712\n") == TextTable(
            [["item", "2019", "2018"], ["Other", "834", "712"]], ""
        )

    def test_lines_of_different_field_counts_are_no_table(self) -> None:
        assert text_table("item,2019,2018\nCost,5\n") is None


class TestAlignedColumns:
    def test_columns_apart_by_two_spaces_or_more(self) -> None:
        rows = [
            ["Segment", "2019", "2018"],
            ["Food Care", "1,997.8", "1,914.4"],
            ["Total", "5,765.2", "5,050.2"],
        ]
        assert text_table(aligned(rows)) == TextTable(rows, "")

    def test_a_header_without_a_name_over_the_labels(self) -> None:
        """A data frame prints no name over its index: the header takes an empty first cell."""
        written = "             2019     2018\nFood Care  1997.8   1914.4\nTotal      5765.2   5050.2"
        (header, *_), _ = text_table(written) or ([[]], "")
        assert header == ["", "2019", "2018"]


class TestProseIsNotATable:
    @pytest.mark.parametrize(
        "text",
        [
            "Revenue grew, as expected.\nWe sold 5, then 6 more.",
            "Revenue grew, in 2019, by 5 percent.\nCosts fell, in 2019, by 2 percent.",
            "- Food Care: 1,997.8\n- Product Care: 2,762.9",
            "Sales were 1,997.8 in 2019\nand 2,762.9 in 2018",  # a comma inside a number: prose
            "a | b\nc | d",  # no delimiter row
            "Revenue  was high\nCosts  were low",  # aligned, but no number
            "Revenue 1997.8",  # one line
        ],
    )
    def test_prose_and_lists(self, text: str) -> None:
        assert text_table(text) is None

    def test_a_text_past_the_bound_is_read_as_text(self) -> None:
        body = "\n".join(f"| row {index} | {index}.5 |" for index in range(MAX_TABLE_CHARS // 10))
        assert len(body) > MAX_TABLE_CHARS
        assert text_table(f"| item | 2019 |\n|---|---|\n{body}") is None

    def test_many_tables_without_numbers_cost_one_pass(self) -> None:
        """A header and delimiter found over and over, never a number: each line is read at most twice."""
        assert text_table("| a | b |\n|---|---|\n| c | d |\n\n" * 2_000 + "| x | 1 |") is None


def _structure(content: str) -> object:
    structure = figure_basis([ToolResult(content)], structure=True).structure
    return (
        list(structure.values),
        [str(path) for path in structure.paths],
        structure.labels,
        structure.marks,
    )


WRITINGS = {
    "markdown": markdown(ASSETS),
    "markdown in prose": f"The assets:\n{markdown(ASSETS)}\nAll in millions.",
    "csv": separated(ASSETS),
    "tsv": separated(ASSETS, "\t"),
}


@pytest.mark.parametrize("form", WRITINGS)
def test_the_fold_reads_the_cells_a_json_table_gives(form: str) -> None:
    assert _structure(WRITINGS[form]) == _structure(json.dumps(ASSETS))


@pytest.mark.parametrize("form", WRITINGS)
def test_cell_arithmetic_is_inferred_as_from_json(form: str) -> None:
    """The change of Food Care from 2018 to 2019 (83.4) is inferred from the text table, with the cells,
    row and column names the JSON table gives; an invented figure stays unsupported."""
    answer = "Food Care grew by 83.4 million from 2018 to 2019, and Other by 99.7 million."
    verdicts = []
    for content in (WRITINGS[form], json.dumps(ASSETS)):
        (verdict,) = FiguresCheck().evaluate([answer_subject(answer, tool_results=(ToolResult(content),))])
        assert verdict is not None
        verdicts.append(verdict.attributes)
    text, as_json = verdicts
    assert text[FIGURES_INFERRED] == as_json[FIGURES_INFERRED] == 1
    assert text[FIGURES_DERIVATIONS] == as_json[FIGURES_DERIVATIONS]
    assert text[FIGURES_UNSUPPORTED] == as_json[FIGURES_UNSUPPORTED] == ("99.7 million",)


def test_read_as_text_when_it_is_no_table() -> None:
    """The control: the same table on one line is text, one group of numbers; the cells the sentence
    names are not found in it."""
    answer = "Food Care grew by 83.4 million from 2018 to 2019."
    on_one_line = check_figures(answer, [ToolResult(markdown(ASSETS).replace("\n", " "))])
    as_table = check_figures(answer, [ToolResult(markdown(ASSETS))])
    assert [figure.source for figure in on_one_line.inferred] == ["1997.8 − 1914.4, text at result"]
    assert [figure.source for figure in as_table.inferred] == ["1997.8 − 1914.4, row Food Care, 2019 / 2018"]


def test_the_closed_derivations_read_text_as_the_reference_does() -> None:
    """Under ``closed`` the fold is the reference's: a text table is text, its numbers carried as tokens."""
    basis = figure_basis([ToolResult(markdown(ASSETS))])
    assert {str(path) for path in basis._paths} == {"result"}


class TestColumnNamesBesideRows:
    def test_pandas_split_orient(self) -> None:
        """``{"columns", "index", "data"}``: the row names become each row's first cell."""
        written = {
            "columns": ["2019", "2018"],
            "index": ["Food Care", "Total"],
            "data": [["$ 1,997.8", "$ 1,914.4"], ["$ 5,765.2", "$ 5,050.2"]],
        }
        assert split_table(written) == [
            ["", "2019", "2018"],
            ["Food Care", "$ 1,997.8", "$ 1,914.4"],
            ["Total", "$ 5,765.2", "$ 5,050.2"],
        ]

    def test_a_sql_tools_columns_and_rows(self) -> None:
        """Read by shape, not by key names: the rows keep their own first cell."""
        written = {
            "fields": ["segment", "2019"],
            "count": 2,
            "records": [["Cloud", 412.0], ["Devices", 318.0]],
        }
        assert split_table(written) == [["segment", "2019"], ["Cloud", 412.0], ["Devices", 318.0]]

    @pytest.mark.parametrize(
        "written",
        [
            {"columns": ["a", "b"], "data": [[1, 2], [3]]},  # rows of different widths
            {"columns": ["a", "b", "c"], "data": [[1, 2], [3, 4]]},  # names of another width
            {"columns": ["a", "b"], "data": [[1, 2]], "more": [[3, 4]]},  # two lists of rows
            {"tags": ["a", "b"], "count": 2},  # no rows
        ],
    )
    def test_other_objects_are_no_split_table(self, written: dict[str, object]) -> None:
        assert split_table(written) is None

    @pytest.mark.parametrize("shape", ["split", "columns and rows"])
    def test_the_fold_reads_the_cells_a_json_table_gives(self, shape: str) -> None:
        header, *rows = ASSETS
        if shape == "split":
            written = {
                "columns": header[1:],
                "index": [row[0] for row in rows],
                "data": [r[1:] for r in rows],
            }
            expected = [["", *header[1:]], *rows]
        else:
            written = {"columns": header, "rows": rows}
            expected = ASSETS
        assert _structure(json.dumps(written)) == _structure(json.dumps(expected))
        answer = "Food Care grew by 83.4 million from 2018 to 2019."
        finding = check_figures(answer, [ToolResult(json.dumps(written))])
        assert [figure.source for figure in finding.inferred] == [
            "1997.8 − 1914.4, row Food Care, 2019 / 2018"
        ]


def test_an_amount_is_no_row_label() -> None:
    """A row whose first text is an amount (``$ 463`` after a year) is named by its place, not by it."""
    labels = figure_basis([ToolResult(json.dumps([["", "total"], ["2011", "$ 463"]]))], structure=True)
    assert labels.structure.labels == {"[0]": "total"}
