"""The cells an answer's words name: the words read, the labels matched, the bound over their candidates."""

from __future__ import annotations

import json

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._basis import figure_basis
from otel_shapecheck.checks.figures._cells import read_cells
from otel_shapecheck.checks.figures._extended import FOCUSED, NAMED_FACTOR, named_limit
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._focus import TableLabels, answer_words, find_focus

# Many small cells: every pair of the table gives whole numbers under 10, so a bare "0.7" is dense with
# candidates there, and only the words say which two cells it came from.
TABLE: list[list[str]] = [
    ["", "2019 £m", "2018 £m", "2017 £m"],
    ["At beginning of period", "2.4", "2.9", "3.3"],
    ["Additions", "3.1", "2.4", "1.8"],
    ["Disposals", "(0.6)", "(0.4)", "(1.1)"],
    ["Transfers", "1.2", "0.8", "1.5"],
    ["At end of period", "6.1", "5.6", "5.7"],
]
RESULT = ToolResult(json.dumps(TABLE), name="get_table")


def _finding(answer: str, coincidence: float = 0.02) -> object:
    return check_figures(answer, [RESULT], min_digits=1, coincidence=coincidence)


class TestAnswerWords:
    def test_the_sentence_around_the_figure_is_read(self) -> None:
        words = answer_words("Revenue was flat. Additions grew from 2018 to 2019 by 0.7 million. Bye.", "0.7")
        assert "addition" in words.words and "revenue" not in words.words
        assert words.years == {2018, 2019}
        assert words.operations == {"difference"}

    def test_a_year_range_covers_the_years_between(self) -> None:
        words = answer_words("The average of additions from 2017 to 2019 was 2.43", "2.43")
        assert words.years == {2017, 2018, 2019}
        assert words.operations == {"average"}

    def test_percentage_change_names_a_change_not_a_quotient(self) -> None:
        assert answer_words("The percentage change in additions was 29.17%", "29.17%").operations == {
            "difference"
        }
        assert answer_words("Additions as a percentage of the total: 50.82%", "50.82%").operations >= {
            "quotient"
        }


class TestLabels:
    def test_rows_by_first_text_and_columns_by_the_header_above(self) -> None:
        basis = figure_basis([RESULT], structure=True)
        cells = read_cells(basis.structure)
        labels = TableLabels(cells, basis.structure.paths, [RESULT])
        focus = find_focus(
            answer_words("The change in Additions from 2018 to 2019: 0.7", "0.7"), labels, cells
        )
        assert focus is not None
        assert focus.rows == ("Additions",)
        assert focus.columns == ("2019 £m", "2018 £m")
        assert sorted(float(cells.values[m]) for m in focus.members) == [2.4, 3.1]

    def test_no_word_of_a_label_gives_no_focus(self) -> None:
        basis = figure_basis([RESULT], structure=True)
        cells = read_cells(basis.structure)
        labels = TableLabels(cells, basis.structure.paths, [RESULT])
        assert find_focus(answer_words("The answer is 0.7", "0.7"), labels, cells) is None


class TestNamedCells:
    def test_a_figure_the_words_explain_is_inferred_naming_its_cells(self) -> None:
        finding = _finding("The change in Additions in 2019 from 2018 was 0.7 million.")
        assert not finding.unsupported  # type: ignore[attr-defined]
        (inferred,) = finding.inferred  # type: ignore[attr-defined]
        assert inferred.derivation == FOCUSED
        assert inferred.source == "3.1 − 2.4, row Additions, 2019 £m / 2018 £m"
        assert inferred.chance < NAMED_FACTOR * 0.02

    def test_the_same_figure_bare_stays_flagged(self) -> None:
        """Against every pair of the table, 0.7 is one of many small differences: a coincidence."""
        assert _finding("The answer is 0.7 million.").unsupported == ("0.7",)  # type: ignore[attr-defined]

    def test_a_wrong_figure_with_the_same_words_stays_flagged(self) -> None:
        finding = _finding("The change in Additions in 2019 from 2018 was 0.9 million.")
        assert finding.unsupported == ("0.9",)  # type: ignore[attr-defined]

    def test_a_two_step_average_over_the_years_named(self) -> None:
        finding = _finding("The average Additions from 2017 to 2019 were 2.43 million.")
        (inferred,) = finding.inferred  # type: ignore[attr-defined]
        assert inferred.source.startswith("(3.1 + 2.4 + 1.8) / 3, row Additions")

    def test_the_named_limit_is_capped_at_one(self) -> None:
        assert named_limit(0.02) == NAMED_FACTOR * 0.02
        assert named_limit(0.5) == 1.0


_ONE_PROCESS = """
import json, sys
from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._findings import check_figures
table = json.loads(sys.argv[1])
answers = ["The change in Additions in 2019 from 2018 was 0.7 million.",
           "The average Additions from 2017 to 2019 were 2.43 million.",
           "Transfers and disposals in 2019 as a percentage of the total: 19.67%."]
result = ToolResult(json.dumps(table), name="get_table")
for answer in answers:
    finding = check_figures(answer, [result], min_digits=1)
    print([item.describe() for item in finding.inferred], finding.unsupported)
"""


def test_the_same_verdicts_under_any_hash_seed() -> None:
    """Words are sets inside; the focus, its candidates and the named derivation must not depend on them."""
    import os
    import subprocess
    import sys

    outputs = set()
    for seed in ("0", "1", "12345"):
        environment = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", _ONE_PROCESS, json.dumps(TABLE)],
            capture_output=True,
            text=True,
            env=environment,
            check=True,
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1
    assert "named-cells" in next(iter(outputs))


def test_a_quoted_label_of_common_words_still_names_its_row() -> None:
    """ "Net change" has no content word, yet a sentence that quotes it whole names that row alone."""
    table = [["", "2019", "2018"], ["Net change", "14.6", "9.1"], ["Other change", "3.3", "2.2"]]
    result = ToolResult(json.dumps(table), name="get_table")
    basis = figure_basis([result], structure=True)
    cells = read_cells(basis.structure)
    labels = TableLabels(cells, basis.structure.paths, [result])
    words = answer_words("The net change from 2018 to 2019 grew by 5.5 million", "5.5")
    focus = find_focus(words, labels, cells)
    assert focus is not None and focus.rows == ("Net change",)
