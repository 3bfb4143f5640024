"""The cells an answer's words name: the words read, the labels matched, the bound over their candidates."""

from __future__ import annotations

import json

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._answer_words import AnswerSentences, answer_words
from otel_shapecheck.checks.figures._basis import figure_basis
from otel_shapecheck.checks.figures._cells import Cells, read_cells
from otel_shapecheck.checks.figures._extended import FOCUSED, NAMED_CAP, NAMED_FACTOR, named_limit
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._focus import find_focus
from otel_shapecheck.checks.figures._table_labels import TableLabels

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

    def test_each_figure_reads_its_own_sentence_and_those_before_it(self) -> None:
        answer = "Additions rose. Disposals fell by 0.6 million; transfers were 1.2. Totals hold 6.1 in all."
        sentences = AnswerSentences(answer)
        disposals = sentences.around(answer.index("0.6"), 3)
        assert "disposal" in disposals.words and "transfer" not in disposals.words
        assert [("addition" in context.words) for context in disposals.context] == [True]
        assert "decrease" in disposals.operations and disposals.context[0].operations == disposals.operations
        totals = sentences.around(answer.index("6.1"), 3)
        assert "total" in totals.words and len(totals.context) == 3  # a semicolon ends a sentence too
        assert sentences.own(answer.index("1.2"), 3).words >= {"transfer"}

    def test_a_break_inside_the_figure_does_not_end_its_sentence(self) -> None:
        answer = "Pools hold 5.\nTB of space in all. Bye."
        at = answer.index("5.")
        assert "space" in AnswerSentences(answer).own(at, len("5.\nTB")).words

    def test_an_unknown_position_reads_the_whole_answer(self) -> None:
        whole = AnswerSentences("Additions rose. Disposals fell.").around(-1, 3)
        assert {"addition", "disposal"} <= whole.words and whole.context == ()


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
        assert _finding("The answer is 0.7 million.").unsupported == ("0.7 million",)  # type: ignore[attr-defined]

    def test_a_wrong_figure_with_the_same_words_stays_flagged(self) -> None:
        finding = _finding("The change in Additions in 2019 from 2018 was 0.9 million.")
        assert finding.unsupported == ("0.9 million",)  # type: ignore[attr-defined]

    def test_a_two_step_average_over_the_years_named(self) -> None:
        finding = _finding("The average Additions from 2017 to 2019 were 2.43 million.")
        (inferred,) = finding.inferred  # type: ignore[attr-defined]
        assert inferred.source.startswith("(3.1 + 2.4 + 1.8) / 3, row Additions")

    def test_the_named_limit_is_capped_below_one(self) -> None:
        """min(cap, factor · p): the cap binds from the default p (5 %) up, the factor below it."""
        assert named_limit(0.005) == NAMED_FACTOR * 0.005
        assert named_limit(0.05) == NAMED_CAP == 0.5
        assert named_limit(0.5) == 0.5
        assert named_limit(0.2, cap=1.0) == 1.0

    def test_a_named_match_at_better_than_even_odds_is_refused(self) -> None:
        """1 = 3 − 2 among the named cells: a whole number in [0.5, 2] is 1 or 2, so one candidate there
        is a 67 % chance of coincidence. Under the cap of 0.5 it stays flagged; under 1 it passes."""
        table = [["", "2019", "2018"], ["Additions", "3", "2"]]
        answer = "The change in Additions in 2019 from 2018 was 1."
        assert _inferred_source(answer, table) is None
        assert (
            _inferred_source(answer, table, named_factor=100.0, named_cap=1.0)
            == "named-cells: 3 − 2, row Additions, 2019 / 2018"
        )


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


def _labels_of(table: list[list[str]]) -> tuple[TableLabels, Cells, ToolResult]:
    result = ToolResult(json.dumps(table), name="get_table")
    basis = figure_basis([result], structure=True)
    cells = read_cells(basis.structure)
    return TableLabels(cells, basis.structure.paths, [result]), cells, result


def _inferred_source(
    answer: str, table: list[list[str]], named_factor: float = NAMED_FACTOR, named_cap: float = NAMED_CAP
) -> str | None:
    """The derivation's words for the answer's only inferred figure, or ``None`` when one is flagged."""
    result = ToolResult(json.dumps(table), name="get_table")
    finding = check_figures(answer, [result], min_digits=1, named_factor=named_factor, named_cap=named_cap)
    if finding.unsupported:
        return None
    (inferred,) = finding.inferred
    return f"{inferred.derivation}: {inferred.source}"


# A row of three years with its own percent-change columns, as financial tables print them.
GROSS: list[list[str]] = [
    ["", "2019", "2018", "2017", "2019 vs 2018", "2018 vs 2017"],
    ["Cost of sales", "$(5,860)", "$(5,803)", "$(5,075)", "1.0%", "(14.3)%"],
    ["Gross profit", "$3,696", "$3,861", "$3,272", "(4.3)%", "18.0%"],
    ["Operating expenses", "$1,204", "$1,187", "$1,090", "1.4%", "8.9%"],
]


class TestTwoStepCandidates:
    def test_a_rows_amounts_are_averaged_apart_from_its_percentages(self) -> None:
        """ "The average Gross profit" is the mean of its three amounts, not of the amounts and % cells."""
        source = _inferred_source("The average Gross profit: 3609.67 million.", GROSS)
        assert source == "named-cells: (3696 + 3861 + 3272) / 3, row Gross profit"

    def test_two_cells_of_a_row_are_averaged_when_no_year_is_named(self) -> None:
        """A row of three years: the average of two of them is a candidate of its own."""
        source = _inferred_source("The average Gross profit was 3778.5 million.", GROSS)
        assert source == "named-cells: (3696 + 3861) / 2, row Gross profit"

    def test_under_a_sum_word_the_pair_is_summed(self) -> None:
        """Operation words choose the arithmetic: "the total" of the row's two years is their sum."""
        source = _inferred_source("The total Gross profit was 7557 million.", GROSS)
        assert source == "named-cells: 3696 + 3861, row Gross profit"


class TestLabelsRead:
    def test_a_quoted_one_word_label_names_its_row(self) -> None:
        """ "the total" names the Total row, whose label has no content word."""
        table = [
            ["", "2019", "2018"],
            ["Pension", "41.0", "38.2"],
            ["Other", "3.5", "2.8"],
            ["Total", "44.5", "41.0"],
        ]
        labels, cells, _ = _labels_of(table)
        focus = find_focus(
            answer_words("The percentage change in the total from 2018 to 2019", "8.54%"), labels, cells
        )
        assert focus is not None and focus.rows == ("Total",)
        assert _inferred_source("The percentage change in the total from 2018 to 2019: 8.54%.", table) == (
            "named-cells: (44.5 − 41) / 41, row Total, 2019 / 2018"
        )

    def test_an_unlabelled_subtotal_takes_the_heading_above_it(self) -> None:
        table = [
            ["", "2019", "2018"],
            ["Basic earnings per share (cents per share)", "", ""],
            ["Continuing operations", "114.3", "123.4"],
            ["Discontinued operations", "91.9", "9.2"],
            ["", "206.2", "132.6"],
        ]
        labels, cells, _ = _labels_of(table)
        words = answer_words("The difference in basic earnings per share from 2018 to 2019: 73.6", "73.6")
        focus = find_focus(words, labels, cells)
        assert focus is not None and focus.rows == ("Basic earnings per share (cents per share)",)
        assert sorted(float(cells.values[m]) for m in focus.members) == [132.6, 206.2]

    def test_a_header_marks_percentages_only_in_its_own_cells(self) -> None:
        """ "(in thousands, except percentages)" is no percentage column, and neither is the column a
        spanning "Percent Change" reaches from the left; a header's own "%" is."""
        table = [
            ["", "", "Percent Change", "", ""],
            ["", "2019 (in thousands, except percentages)", "Actual", "2018", "% of total"],
            ["Interest expense", "2,082", "3", "2,025", "11"],
        ]
        labels, cells, _ = _labels_of(table)
        percent = {labels.column_names[m]: labels.column_percent[m] for m in range(len(labels.column_names))}
        assert percent == {
            "2019 (in thousands, except percentages)": False,
            "Percent Change Actual": True,
            "Percent Change 2018": False,
            "Percent Change % of total": True,
        }
        assert _inferred_source(
            "The difference in interest expense between 2019 and 2018: 57 million.", table
        ) == (
            "named-cells: 2082 − 2025, row Interest expense, 2019 (in thousands, except percentages) / "
            "Percent Change 2018"
        )


class TestRoundingAsWritten:
    TIES: list[list[str]] = [
        ["", "2019", "2018"],
        ["Revenue", "3,704.5", "1,234.0"],
        ["Costs", "811.0", "640.0"],
    ]

    def test_half_up_and_bankers_rounding_of_a_tie_both_match(self) -> None:
        """2470.5 written whole is 2471 rounded half up and 2470 rounded half to even: both are the cells'."""
        for written in ("2471", "2470"):
            source = _inferred_source(
                f"The change in revenue from 2018 to 2019 was {written} million.", self.TIES
            )
            assert source == "named-cells: 3704.5 − 1234, row Revenue, 2019 / 2018"

    def test_one_unit_past_the_tie_is_flagged(self) -> None:
        assert (
            _inferred_source("The change in revenue from 2018 to 2019 was 2472 million.", self.TIES) is None
        )

    def test_percentage_points_and_percent_change_of_two_rates_both_match(self) -> None:
        """11.3% and 12.6% give −1.3 percentage points, written "-1.3%", and a −10.32% relative change:
        both are what analysts write, each named as what it is."""
        table = [
            ["", "2019", "2018"],
            ["Wafer yield", "11.3%", "12.6%"],
            ["Line yield", "25.3%", "28.4%"],
        ]
        assert _inferred_source("The change in wafer yield from 2018 to 2019: -1.3%.", table) == (
            "named-cells: 11.3 − 12.6, row Wafer yield, 2019 / 2018"
        )
        assert _inferred_source("The change in wafer yield from 2018 to 2019: -10.32%.", table) == (
            "named-cells: (11.3 − 12.6) / 12.6, row Wafer yield, 2019 / 2018"
        )


class TestLimits:
    def test_the_named_factor_sets_the_named_limit(self) -> None:
        """named_factor=0 accepts nothing among the named cells; the default accepts the same figure."""
        answer = "The change in Additions in 2019 from 2018 was 0.7 million."
        assert _inferred_source(answer, TABLE) is not None
        assert _inferred_source(answer, TABLE, named_factor=0.0) is None
        assert named_limit(0.02, 5.0) == 0.1

    def test_a_bad_named_factor_is_a_value_error(self) -> None:
        import pytest

        for bad in (-1.0, float("nan")):
            with pytest.raises(ValueError, match="named_factor"):
                check_figures("It was 0.7.", [RESULT], min_digits=1, named_factor=bad)

    def test_a_bad_named_cap_is_a_value_error(self) -> None:
        import pytest

        for bad in (-0.1, 1.5, float("nan"), True):
            with pytest.raises(ValueError, match="named_cap"):
                check_figures("It was 0.7.", [RESULT], min_digits=1, named_cap=bad)

    def test_the_whole_table_gets_a_quarter_of_p_when_the_named_cells_miss(self) -> None:
        """Words that name cells the figure is none of: the whole table is asked below p / 4; words that
        name no cells: below p."""
        from otel_shapecheck.checks.figures._extended import MISSED_FOCUS_FACTOR, ExtendedDerivations
        from otel_shapecheck.checks.figures._text import figures_in

        basis = figure_basis([RESULT], structure=True)
        extended = ExtendedDerivations(basis, "structural", [RESULT])
        (figure,) = figures_in("5.3", 1)  # 2.4 + 2.9, a sum in the row "At beginning of period"
        named_elsewhere = answer_words("The change in Transfers from 2018 to 2019 was 5.3", "5.3")
        bare = answer_words("The answer is 5.3", "5.3")
        missed = extended.infer(figure, named_elsewhere, 0.02)
        whole = extended.infer(figure, bare, 0.02)
        assert missed is not None and whole is not None
        assert missed.derivation != FOCUSED and whole.derivation != FOCUSED
        assert missed.limit == MISSED_FOCUS_FACTOR * 0.02
        assert whole.limit == 0.02
        assert missed.source == whole.source == "2.4 + 2.9, row At beginning of period"
        assert missed.chance >= whole.chance  # the named cells' candidates are counted too


class TestMoreOfWhatAnalystsWrite:
    def test_the_change_of_two_neighbouring_averages(self) -> None:
        """ "The change in the average between 2017-2018 and 2018-2019": the difference of the averages of
        neighbouring years, a second step taken only when the sentence names both."""
        table = [
            ["", "2019", "2018", "2017"],
            ["Free cash flow", "4,411", "4,044", "3,316"],
            ["Capex", "950", "1,018", "1,062"],
        ]
        answer = "The change in the average free cash flow between 2017-2018 and 2018-2019: 547.5 million."
        assert _inferred_source(answer, table) == (
            "named-cells: (4411 + 4044) / 2 − (4044 + 3316) / 2, row Free cash flow, 2019 / 2018 / 2017"
        )

    def test_a_percent_change_across_zero_among_the_named_cells(self) -> None:
        """From −34.8 to 46.0 is −232.18 % as analysts compute it; the named cells take it, the whole
        table (same signs only) does not."""
        table = [["", "2019", "2018"], ["Net profit/(loss)", "46.0", "(34.8)"], ["Revenue", "812.4", "790.1"]]
        answer = "The percentage change in Net profit/(loss) from 2018 to 2019: -232.18%."
        assert _inferred_source(answer, table) == (
            "named-cells: (46 − (-34.8)) / (-34.8), row Net profit/(loss), 2019 / 2018"
        )
        assert _inferred_source("The answer is -232.18%.", table) is None

    def test_a_row_of_negatives_is_averaged_as_sizes(self) -> None:
        """ "(16)" and "(15)": the average allowance is 15.5 as written, not only −15.5."""
        table = [
            ["", "2019", "2018"],
            ["Trade receivables", "1,396", "1,292"],
            ["Allowance for doubtful accounts", "(16)", "(15)"],
        ]
        source = _inferred_source("The average Allowance for doubtful accounts: 15.5.", table)
        assert source == "named-cells: −(((-16) + (-15)) / 2), row Allowance for doubtful accounts"

    def test_a_footnote_mark_in_a_label_does_not_hide_the_row(self) -> None:
        """ "Brian Kinion(3)": the 3 is read as a number of the label's own text; the row keeps its name."""
        table = [
            ["Name of Beneficial Owner", "Number of Shares Beneficially Owned", "Percent Owned"],
            ["L. Gordon Crovitz(1)", "53,819", "*"],
            ["Brian Kinion(3)", "16,016", "*"],
            ["Christopher Lien(4)", "326,584", "4.7"],
            ["Daina Middleton(5)", "36,888", "*"],
        ]
        answer = "The average number of shares owned by Brian Kinion and Christopher Lien: 171300."
        assert _inferred_source(answer, table) == (
            "named-cells: (16016 + 326584) / 2, row Christopher Lien(4) / Brian Kinion(3)"
        )

    def test_change_columns_are_not_periods_of_the_row(self) -> None:
        """A row of three years with "Change" columns between them: its average is over the years only."""
        table = [
            [
                "(In thousands)",
                "2019",
                "Change increase (decrease)",
                "2018",
                "Change increase (decrease)",
                "2017",
            ],
            ["Revenues", "284,936", "(31,321)", "316,257", "80,941", "235,316"],
            ["Gross Profit", "$60,301", "$(2,567)", "$62,868", "$22,506", "$40,362"],
        ]
        labels, cells, _ = _labels_of(table)
        revenues = labels.by_row["[1]"]
        assert [labels.column_change[m] for m in revenues] == [False, True, False, True, False]
        source = _inferred_source("The average annual Gross Profit: 54510.33 thousand.", table)
        assert source == "named-cells: (60301 + 62868 + 40362) / 3, row Gross Profit"

    def test_a_row_of_negative_amounts_beside_its_percentages_is_averaged_as_sizes(self) -> None:
        table = [
            ["", "2019", "2018", "2017", "2019 vs 2018"],
            ["Cost of sales", "$(5,860)", "$(5,803)", "$(5,075)", "1.0%"],
        ]
        source = _inferred_source("The average Cost of sales: 5579.33 million.", table)
        assert source == "named-cells: −(((-5860) + (-5803) + (-5075)) / 3), row Cost of sales"


def test_the_default_bound_is_the_one_chosen_on_the_seen_files() -> None:
    """p = 5 %, named cells below min(0.5, 10 · p), the whole table below p / 4 when the named cells miss."""
    from otel_shapecheck.checks.figures._check import FiguresCheck
    from otel_shapecheck.checks.figures._coincidence import DEFAULT_COINCIDENCE
    from otel_shapecheck.checks.figures._extended import MISSED_FOCUS_FACTOR

    assert FiguresCheck().coincidence == DEFAULT_COINCIDENCE == 0.05
    assert (NAMED_FACTOR, NAMED_CAP, MISSED_FOCUS_FACTOR) == (10.0, 0.5, 0.25)
    assert named_limit(DEFAULT_COINCIDENCE) == 0.5
    assert named_limit(0.01) == 0.1


def test_the_report_set_shares_no_table_with_the_tuning_file() -> None:
    """The report set is held out by table: none of its tables is a table of the tuning file."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data"

    def tables(name: str) -> set[str]:
        with (data / name).open(encoding="utf-8") as lines:
            return {
                json.dumps(json.loads(line)["table"], ensure_ascii=False, separators=(",", ":"))
                for line in lines
            }

    report, tuning = tables("tatqa_fresh.jsonl"), tables("tatqa_tuning.jsonl")
    assert len(report) == 47 and len(tuning) > 300
    assert not report & tuning


def test_the_finqa_report_set_shares_no_table_with_the_tatqa_files() -> None:
    """FinQA is the report set: 241 questions on 181 tables, none of them a table of either TAT-QA file,
    each answer written as its record's number (``%`` under scale ``percent``)."""
    from pathlib import Path

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data"

    def records(name: str) -> list[dict[str, object]]:
        with (data / name).open(encoding="utf-8") as lines:
            return [json.loads(line) for line in lines]

    def tables(loaded: list[dict[str, object]]) -> set[str]:
        return {json.dumps(record["table"], ensure_ascii=False, separators=(",", ":")) for record in loaded}

    finqa = records("finqa_fresh.jsonl")
    tatqa = tables(records("tatqa_tuning.jsonl")) | tables(records("tatqa_fresh.jsonl"))
    assert len(finqa) == 241 and len(tables(finqa)) == 181
    assert not tables(finqa) & tatqa
    for record in finqa:
        suffix = "%" if record["scale"] == "percent" else ""
        assert record["answer_text"] == f"{record['answer']}{suffix}"
        assert str(record["id"]).startswith("finqa-test-")


class TestRowsOfOneColumn:
    """Two cells of one column across rows, when the words name both rows (or the years labelling them)."""

    def test_a_quoted_total_row_is_taken_with_the_rows_the_other_words_name(self) -> None:
        """ "The portion of the total purchase price related to stock awards": the quoted total is the
        denominator, the other words name the numerator's row; their quotient is a candidate."""
        table = [
            ["", "amount"],
            ["value of common stock", "$ 4066.4"],
            ["value of stock awards", "121.4"],
            ["total purchase price", "$ 4187.8"],
        ]
        answer = "The portion of the total purchase price related to stock awards is 0.029."
        source = _inferred_source(answer, table)
        assert source == (
            "named-cells: 121.4 / 4187.8, "
            "row total purchase price / value of stock awards / value of common stock"
        )

    def test_years_that_label_rows_name_those_rows(self) -> None:
        """A table with its years down the first column: the years named pick the rows, and the percent
        change is taken between two rows of one column."""
        table = [
            ["millions", "operating leases", "capital leases"],
            ["2019", "$ 419", "$ 148"],
            ["2020", "378", "155"],
            ["2021", "303", "159"],
            ["2022", "272", "142"],
        ]
        source = _inferred_source(
            "The growth rate of operating lease payments from 2019 to 2020: -9.79%.", table
        )
        assert source is not None and source.startswith("named-cells: (378 − 419) / 419, row ")
        labels, cells, _ = _labels_of(table)
        assert sorted(labels.rows_by_year) == [2019, 2020, 2021, 2022]
        assert all(cells.values[m] in (2019, 2020, 2021, 2022) for m in labels.year_labels)

    def test_years_in_the_headers_name_columns_not_rows(self) -> None:
        """Where the columns are years, a year in a row's label does not name the row."""
        table = [["", "2019", "2018"], ["2019 revenue", "10", "9"], ["Other", "5", "4"]]
        labels, cells, _ = _labels_of(table)
        words = answer_words("The change in Other from 2018 to 2019 was 1", "1")
        focus = find_focus(words, labels, cells)
        assert focus is not None and focus.rows == ("Other",)

    def test_one_year_under_a_change_word_is_a_change_from_the_year_before(self) -> None:
        assert answer_words("The growth in mutual funds in 2010 was 10.25%", "10.25%").years == {2009, 2010}
        assert answer_words("Mutual funds in 2010 were 6850", "6850").years == {2010}
        table = [
            ["", "2010", "2009"],
            ["money market funds", "$ 1840", "$ 1730"],
            ["mutual funds", "6850", "6213"],
        ]
        source = _inferred_source("The growth rate in the balance of mutual funds in 2010: 10.25%.", table)
        assert source == "named-cells: (6850 − 6213) / 6213, row mutual funds, 2010 / 2009"

    def test_a_decrease_is_stated_as_its_size(self) -> None:
        """ "The percentage decrease … was 7.95%": the negative percent change, as a positive size."""
        words = answer_words("The percentage decrease in cash flows from 2009 to 2010 was 7.95%", "7.95%")
        assert words.operations == {"difference", "decrease"}
        table = [["", "2010", "2009"], ["cash flows from operations", "$ 515.2", "$ 559.7"]]
        answer = "The percentage decrease in cash flows from operations from 2009 to 2010: 7.95%."
        source = _inferred_source(answer, table)
        assert (
            source == "named-cells: −((515.2 − 559.7) / 559.7), row cash flows from operations, 2010 / 2009"
        )
        increase = "The percentage increase in cash flows from operations from 2009 to 2010: 7.95%."
        assert _inferred_source(increase, table) is None


def test_a_row_named_by_its_path_is_not_quoted_by_the_figures_digits() -> None:
    """Rows of field-keyed records have no label; their path ``[0]`` must not be read as quoted by the
    ``0`` of ``0.009``: that would choose the focus from the figure's own value."""
    rows = [{"reading": 2.0}, {"reading": 210.6}]
    finding = check_figures("It reads 0.009 ms.", [ToolResult(json.dumps(rows))], coincidence=1.0)
    assert finding.unsupported == ("0.009 ms",)


def test_the_convfinqa_report_set_shares_no_page_or_table_with_the_seen_files() -> None:
    """ConvFinQA's dev turns are the report set: 492 on 156 tables, none a FinQA page of
    ``finqa_fresh.jsonl`` or a table (its cell numbers) of any seen file."""
    from pathlib import Path

    from benchmarks._convfinqa import _numbers, _page

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data"

    def records(name: str) -> list[dict[str, object]]:
        with (data / name).open(encoding="utf-8") as lines:
            return [json.loads(line) for line in lines]

    report = records("convfinqa_fresh.jsonl")
    seen = [
        record
        for name in ("tatqa_tuning.jsonl", "tatqa_fresh.jsonl", "finqa_fresh.jsonl")
        for record in records(name)
    ]
    assert len(report) == 492 and len({json.dumps(record["table"]) for record in report}) == 156
    seen_tables = {_numbers(record["table"]) for record in seen}  # type: ignore[arg-type]
    seen_pages = {_page(str(record["id"]).removeprefix("finqa-test-")) for record in seen}
    for record in report:
        conversation = str(record["id"]).removeprefix("convfinqa-dev-").rsplit("-", 1)[0]
        assert _page(conversation) not in seen_pages
        assert _numbers(record["table"]) not in seen_tables  # type: ignore[arg-type]
        suffix = "%" if record["scale"] == "percent" else ""
        assert record["answer_text"] == f"{record['answer']}{suffix}"


class TestProductsRunsAndEarlierSentences:
    """The candidates added for FinQA-style tables: products, runs of 3+ cells, a follow-up's context."""

    AWARDS: list[list[str]] = [
        ["", "shares", "weighted average grant date fair value"],
        ["granted in 2017", "160196", "$ 58.02"],
        ["vested", "(120000)", "$ 40.50"],
    ]

    def test_a_product_the_answer_names_is_inferred(self) -> None:
        source = _inferred_source("The value of the shares granted in 2017: 9294571.92.", self.AWARDS)
        assert source == "named-cells: 160196 × 58.02, row granted in 2017"

    def test_a_mutated_product_is_flagged(self) -> None:
        assert _inferred_source("The value of the shares granted in 2017: 9294571.29.", self.AWARDS) is None
        assert _inferred_source("The value of the shares granted in 2017: 9924571.92.", self.AWARDS) is None

    def test_the_same_product_among_many_named_cells_is_refused_by_the_bound(self) -> None:
        """12 = 3 × 4 is a match among few candidates in a row of two cells; in a row of six small cells,
        products, sums and differences cover most whole numbers of its band, and it stays flagged."""
        sparse = [["", "units", "price"], ["widgets", "3", "4"]]
        assert _inferred_source("The value of widgets: 12.", sparse) == "named-cells: 3 × 4, row widgets"
        dense = [["", "a", "b", "c", "d", "e", "f"], ["widgets", "3", "4", "5", "6", "7", "2"]]
        assert _inferred_source("The value of widgets: 12.", dense) is None

    def test_a_run_of_three_cells_of_a_named_row_is_summed(self) -> None:
        table = [
            ["", "Q1", "Q2", "Q3", "Q4", "Full year"],
            ["Revenue", "120.5", "131.25", "140.75", "150.5", "543"],
            ["Costs", "80", "85", "90", "95", "350"],
        ]
        source = _inferred_source("The total revenue of the first three quarters: 392.5.", table)
        assert source == "named-cells: (120.5 + 131.25 + 140.75), row Revenue"

    def test_a_follow_up_names_its_row_through_the_sentences_before_it(self) -> None:
        answer = "What was the cash from operations in 2013? And in 2012? So what was the difference: 662."
        words = answer_words(answer, "662")
        assert not words.words and words.years == set()
        assert "cash" in words.context[-1].words and words.context[-1].years == {2012, 2013}
        assert all(read.operations == {"difference"} for read in words.context)
        table = [
            ["", "2013", "2012", "2011"],
            ["cash from operations", "6823", "6161", "5940"],
            ["capital expenditures", "(1200)", "(1105)", "(998)"],
            ["dividends paid", "(2500)", "(2410)", "(2300)"],
            ["net change in cash", "3123", "2646", "2642"],
        ]
        source = _inferred_source(answer, table)
        assert source == "named-cells: 6823 − 6161, row cash from operations, 2013 / 2012"


def test_the_finqa_sample_report_set_shares_no_page_or_table_with_the_seen_files() -> None:
    """The FinQA sample is the report set: 78 questions on 67 tables of FinQA's dev and train files, none
    a FinQA page or a table (its cell numbers) of the four seen files."""
    from pathlib import Path

    from benchmarks._convfinqa import _numbers, _page, _seen
    from benchmarks._finqa_sample import SEEN_FILES

    data = Path(__file__).resolve().parents[3] / "benchmarks" / "data"
    with (data / "finqa_sample_fresh.jsonl").open(encoding="utf-8") as lines:
        report = [json.loads(line) for line in lines]
    assert len(report) == 78 and len({json.dumps(record["table"]) for record in report}) == 67
    assert SEEN_FILES == (
        "tatqa_tuning.jsonl",
        "tatqa_fresh.jsonl",
        "finqa_fresh.jsonl",
        "convfinqa_fresh.jsonl",
    )
    seen_pages, seen_tables = _seen(data, SEEN_FILES)
    assert len(seen_pages) > 300
    for record in report:
        split, _, page = str(record["id"]).removeprefix("finqa-").partition("-")
        assert split in ("dev", "train")
        assert _page(page) not in seen_pages
        assert _numbers(record["table"]) not in seen_tables
        suffix = "%" if record["scale"] == "percent" else ""
        assert record["answer_text"] == f"{record['answer']}{suffix}"
