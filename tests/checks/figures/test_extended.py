"""Extended derivations: cell arithmetic over synthetic tables, the coincidence bound, and their bounds."""

from __future__ import annotations

import json
import math
import re

import pytest

from otel_shapecheck import FiguresCheck
from otel_shapecheck._attributes import (
    FIGURES_COMPUTED,
    FIGURES_DERIVATIONS,
    FIGURES_INFERRED,
    FIGURES_TRUNCATED,
    FIGURES_UNSUPPORTED,
)
from otel_shapecheck._model import JSONValue, ToolResult
from otel_shapecheck.checks.figures._basis import figure_basis
from otel_shapecheck.checks.figures._cells import MAX_GROUP_CELLS, read_cells, split_path
from otel_shapecheck.checks.figures._coincidence import (
    coincidence_chance,
    format_chance,
    magnitude_band,
    significant_step,
)
from otel_shapecheck.checks.figures._extended import (
    MAX_EXTENDED_CELLS,
    MAX_EXTENDED_FIGURES,
    MAX_EXTENDED_NUMBERS,
    MAX_PAIRS,
    ExtendedDerivations,
)
from otel_shapecheck.checks.figures._findings import FiguresFinding, check_figures

from .fixtures import capacity_result
from .test_figures_check import answer_subject

ASSETS: list[list[str]] = [
    ["(In millions)", "2019", "2018"],
    ["Food Care", "$ 1,997.8", "$ 1,914.4"],
    ["Product Care", "2,762.9", "2,273.8"],
    ["Other", "(12.5)", "30.0"],
    ["Total", "$ 5,765.2", "$ 5,050.2"],
]
"""A financial table as a tool returns it: a list of rows of cell strings, a header row of years."""

SEGMENTS: list[dict[str, JSONValue]] = [
    {"segment": "Cloud", "revenue": 412.0, "cost": 250.5},
    {"segment": "Devices", "revenue": 318.0, "cost": 201.25},
    {"segment": "Services", "revenue": 95.0, "cost": 60.75},
]
"""A list of rows of JSON numbers: a record per segment."""


def table(rows: JSONValue) -> ToolResult:
    return ToolResult(json.dumps(rows), name="get_table")


def check(figure: str, result: ToolResult, **settings: object) -> FiguresFinding:
    return check_figures(f"It is {figure} now.", [result], min_digits=1, **settings)  # type: ignore[arg-type]


def inferred_as(figure: str, result: ToolResult) -> str:
    """The one inferred entry of ``figure``, without its chance; it must be inferred below 1 %."""
    finding = check(figure, result)
    assert finding.unsupported == (), finding
    (inferred,) = finding.inferred
    assert inferred.chance < 0.01
    return f"{inferred.derivation}: {inferred.source}"


class TestOperations:
    def test_percent_change_of_a_row(self) -> None:
        """Year over year in one row: (2019 − 2018) / 2018, named by the row's label."""
        assert inferred_as("14.16%", table(ASSETS)) == "percent-change: (5765.2 − 5050.2) / 5050.2, row Total"

    def test_difference_and_average_of_a_row(self) -> None:
        """A row's difference and average, at the precision written."""
        assert inferred_as("715.0", table(ASSETS)) == "difference: 5765.2 − 5050.2, row Total"
        assert inferred_as("5407.7", table(ASSETS)) == "average: (5765.2 + 5050.2) / 2, row Total"

    def test_ratio_of_a_row(self) -> None:
        """A plain figure may be the ratio of two cells of one row."""
        assert inferred_as("1.142", table(ASSETS)) == "ratio: 5765.2 / 5050.2, row Total"

    def test_accounting_negative_is_read_as_negative(self) -> None:
        """'(12.5)' is −12.5 to the extended layer: −12.5 − 30 = −42.5."""
        assert inferred_as("-42.5", table(ASSETS)) == "difference: (-12.5) − 30, row Other"

    def test_difference_down_a_column_names_both_rows(self) -> None:
        """Two items of one column: the column and both rows are named."""
        assert (
            inferred_as("49.25", table(SEGMENTS))
            == "difference: 250.5 − 201.25, column cost, rows Cloud and Devices"
        )

    def test_share_of_a_column_total(self) -> None:
        """A cell's share of its column's sum."""
        assert (
            inferred_as("49.94%", table(SEGMENTS))
            == "share-of-total: 100 × 412 / 825 (total of column revenue), row Cloud"
        )

    def test_share_of_the_total_row(self) -> None:
        """A cell's share of its column's largest cell, the total row a financial table lists."""
        rows = [["Item", "2019"], ["North", "1,200.5"], ["South", "3,050.25"], ["Total", "4,250.75"]]
        assert (
            inferred_as("28.24%", table(rows))
            == "share-of-total: 100 × 1200.5 / 4250.75 (total of column 1), row North"
        )

    def test_numbers_of_one_text_pair(self) -> None:
        """Numbers read out of one text form a group of their own."""
        result = ToolResult("Revenue was 5,765.2 in fiscal 2019 against 5,050.2 the year before.")
        finding = check("14.16%", result)
        assert [figure.source for figure in finding.inferred] == [
            "(5765.2 − 5050.2) / 5050.2, text at result"
        ]

    def test_size_figure_is_a_scaled_difference(self) -> None:
        """A figure wearing a size unit may be a difference of bytes stated in TB."""
        result = table({"volume": {"total_bytes": 9_500_000_000_000, "used_bytes": 6_240_000_000_000}})
        finding = check("3.26 TB", result)
        assert [figure.source for figure in finding.inferred] == [
            "(9500000000000 − 6240000000000) ÷ 1000^4, row volume"
        ]

    def test_quotients_of_mixed_signs_are_not_taken(self) -> None:
        """A percent change from 30 to −12.5 is no percent change: the figure stays unsupported."""
        assert check("-141.67%", table(ASSETS)).unsupported == ("-141.67%",)

    def test_header_row_of_years_is_not_paired(self) -> None:
        """2019 − 2018 would be 1: the years name the columns and are not paired with anything."""
        cells = read_cells(figure_basis([table(ASSETS)], structure=True).structure)
        assert all(2019.0 not in cells.values[list(group.members)] for group in cells.groups)

    def test_amounts_that_look_like_years_are_amounts(self) -> None:
        """A row keyed by field names is no header: sales of 2013 and 1987 are still a column to share."""
        sales = table([{"region": "east", "sales": 2013}, {"region": "west", "sales": 1987}])
        assert inferred_as("50.3%", sales).startswith("share-of-total: 100 × 2013 / 4000")
        single = table([["", "2019"], ["Revenue", "1,500"], ["Cost", "1,000"]])
        cells = read_cells(figure_basis([single], structure=True).structure)
        assert [cells.values[list(group.members)].tolist() for group in cells.columns] == [[1500.0, 1000.0]]


class TestBound:
    def test_low_precision_figure_is_not_inferred(self) -> None:
        """'14%' matches the same percent change, but a random whole percentage would too, too often."""
        finding = check("14%", table(ASSETS))
        assert finding.unsupported == ("14%",)
        finding = check("14%", table(ASSETS), coincidence=1.0)
        assert finding.inferred[0].chance > 0.1

    def test_invented_figures_next_to_the_capacity_rows_stay_flagged(self) -> None:
        """The invented answers of parity vector F1 are flagged under the extended layer too."""
        for figure in ("53.2%", "6.3 TB", "64.5%", "24.8 TB", "1527 TB"):
            assert check(figure, capacity_result()).unsupported == (figure,)

    def test_chance_counts_candidates_against_the_values_the_precision_allows(self) -> None:
        """n candidates in [f/2, 2f] against (2f − f/2) / step values: 14.16 has 2124 values there."""
        seen: list[tuple[float, float]] = []

        def three(low: float, high: float) -> int:
            seen.append((low, high))
            return 3

        assert coincidence_chance("14.16", three) == pytest.approx(3 / 2124)
        assert seen == [pytest.approx((7.08, 28.32))]
        assert coincidence_chance("-14.16", three) == pytest.approx(3 / 2124)

    @pytest.mark.parametrize(
        ("value", "step"),
        [("14.16", 0.01), ("14.10", 0.1), ("316", 1.0), ("2000", 1000.0), ("120.00", 10.0), ("0.05", 0.01)],
    )
    def test_round_figures_count_fewer_values(self, value: str, step: float) -> None:
        """Trailing zeros are not precision: a round figure is one of fewer values."""
        assert significant_step(value) == pytest.approx(step)

    @pytest.mark.parametrize("value", ["0", "0.00", "-0", "1" * 400, "abc"])
    def test_zero_huge_and_non_numbers_have_chance_one(self, value: str) -> None:
        """Zero (equal cells), infinity and non-numbers are never inferred."""
        assert coincidence_chance(value, lambda low, high: 0) == 1.0

    def test_band_keeps_the_sign(self) -> None:
        """A negative figure is compared with negative candidates."""
        assert magnitude_band(-10.0) == (-20.0, -5.0)

    def test_chance_formatting(self) -> None:
        """Two significant digits, with a floor."""
        assert [format_chance(c) for c in (0.004, 0.0123, 0.25, 1e-9)] == ["0.4%", "1.2%", "25%", "<0.001%"]

    def test_inferred_only_below_p(self) -> None:
        """The same figure is inferred at a p above its chance and flagged at a p below it."""
        chance = check("4.36%", table(ASSETS), coincidence=1.0).inferred[0].chance
        assert check("4.36%", table(ASSETS), coincidence=chance * 1.01).inferred
        assert check("4.36%", table(ASSETS), coincidence=chance).unsupported == ("4.36%",)

    def test_any_pairs_see_more_candidates(self) -> None:
        """Pairing any two cells puts more candidates around a figure, so its chance can only grow."""
        structural = check("14.16%", table(ASSETS), coincidence=1.0).inferred[0].chance
        anywhere = check("14.16%", table(ASSETS), coincidence=1.0, pairing="any").inferred[0].chance
        assert anywhere >= structural


class TestClosedParity:
    def test_closed_never_infers(self) -> None:
        """Under derivations='closed' a cell-arithmetic figure is unsupported, as in the reference."""
        assert check("14.16%", table(ASSETS), derivations="closed").unsupported == ("14.16%",)

    def test_closed_verdicts_are_the_same_under_both(self) -> None:
        """Carried and computed figures do not move; only unsupported ones can become inferred."""
        answer = "CLUSTER-A01 is 59.2% used: 1,526.3 TB usable, 61% on f710, 53.2% elsewhere, 6.3 TB free."
        closed = check_figures(answer, [capacity_result()], derivations="closed")
        extended = check_figures(answer, [capacity_result()])
        assert (closed.carried, closed.computed, closed.unsupported) == (
            extended.carried,
            extended.computed,
            extended.unsupported,
        )

    @pytest.mark.parametrize(
        ("settings", "message"),
        [
            ({"derivations": "open"}, "derivations"),
            ({"coincidence": 1.5}, "coincidence"),
            ({"coincidence": math.nan}, "coincidence"),
            ({"coincidence": True}, "coincidence"),
            ({"pairing": "all"}, "pairing"),
        ],
    )
    def test_bad_settings(self, settings: dict[str, object], message: str) -> None:
        """A bad setting is a ValueError naming it."""
        with pytest.raises(ValueError, match=message):
            check("14.16%", table(ASSETS), **settings)


class TestCost:
    def test_past_the_distinct_number_cap_the_layer_is_skipped_and_says_so(self) -> None:
        """Too many distinct cells: no extended derivation is tried, and the finding says why."""
        rows = [[f"row {i}", i + 0.5, i + 0.25] for i in range(MAX_EXTENDED_NUMBERS // 2 + 1)]
        finding = check("14.16%", table(rows))
        assert finding.unsupported == ("14.16%",)
        assert finding.extended_skipped is not None and "distinct carried numbers" in finding.extended_skipped

    def test_past_the_pair_budget_the_layer_is_skipped(self) -> None:
        """Rows of many cells make too many pairs: skipped and said."""
        width = MAX_GROUP_CELLS
        rows = [
            [r * 1000 + c + 0.5 for c in range(width)] for r in range(MAX_PAIRS // (width * (width - 1)) + 1)
        ]
        extended = ExtendedDerivations(figure_basis([table(rows)], structure=True))
        assert extended.skipped is not None and "pairs of cells" in extended.skipped

    def test_past_the_number_cap_the_layer_is_skipped(self) -> None:
        """Too many carried numbers, even if few are distinct (a long log): skipped and said."""
        text = " ".join(f"{index % 7}.5" for index in range(MAX_EXTENDED_CELLS + 1))
        extended = ExtendedDerivations(figure_basis([ToolResult(text)], structure=True))
        assert extended.skipped is not None and "carried numbers" in extended.skipped

    @pytest.mark.parametrize("figures", [MAX_EXTENDED_FIGURES, MAX_EXTENDED_FIGURES + 1])
    def test_past_the_figure_cap_the_layer_is_skipped_and_says_so(self, figures: int) -> None:
        """An answer with more figures left to derive than the layer weighs: none inferred, and said."""
        others = " ".join(f"A site holds {900_000 + i}.25 units." for i in range(figures - 1))
        finding = check_figures(f"Total assets grew 14.16% from 2018 to 2019. {others}", [table(ASSETS)])
        assert finding.checked == figures  # the years are dates
        if figures <= MAX_EXTENDED_FIGURES:
            assert [figure.written for figure in finding.inferred] == ["14.16%"]
            assert finding.extended_skipped is None
        else:
            assert finding.inferred == () and "14.16%" in finding.unsupported
            assert finding.extended_skipped == (
                f"{figures} figures to derive, over the {MAX_EXTENDED_FIGURES} the extended derivations weigh"
            )

    def test_large_groups_are_not_paired(self) -> None:
        """A column of more than MAX_GROUP_CELLS cells forms no group."""
        rows = [{"reading": float(i)} for i in range(MAX_GROUP_CELLS + 1)]
        cells = read_cells(figure_basis([table(rows)], structure=True).structure)
        assert [group.kind for group in cells.groups] == []

    def test_paths_split_at_their_last_step(self) -> None:
        """Rows and columns come from the fold's paths."""
        assert split_path("rows[3].used_tb") == ("rows[3]", "used_tb")
        assert split_path("[5][1]") == ("[5]", "1")
        assert split_path(("rows[0]", "used_pct")) == ("rows[0]", "used_pct")
        assert split_path("result") == ("", "result")


class TestVerdict:
    def test_inferred_figures_are_counted_listed_and_supported(self) -> None:
        """shapecheck.figures.inferred counts them, the derivation names operands and chance, score 1."""
        subject = answer_subject("The figure grew 14.16% to 5,765.2.", tool_results=(table(ASSETS),))
        (verdict,) = FiguresCheck().evaluate([subject])
        assert verdict is not None
        assert verdict.attributes[FIGURES_INFERRED] == 1
        assert verdict.attributes[FIGURES_COMPUTED] == 0
        (entry,) = verdict.attributes[FIGURES_DERIVATIONS]  # type: ignore[misc]
        assert re.fullmatch(
            r"14\.16% = percent-change: \(5765\.2 − 5050\.2\) / 5050\.2, row Total \(chance 0\.\d+%\)", entry
        )
        assert (verdict.score, verdict.label, verdict.flags) == (1.0, "grounded", ())
        assert verdict.explanation == (
            "2 of 2 figures in the answer are carried by a tool result (1) or derived from one "
            "(1, 1 of them inferred from cell arithmetic)."
        )

    def test_closed_setting_flags_the_same_answer(self) -> None:
        """FiguresCheck(derivations='closed') flags it, with no inferred figure."""
        subject = answer_subject("Total assets grew 14.16% to 5,765.2.", tool_results=(table(ASSETS),))
        (verdict,) = FiguresCheck(derivations="closed").evaluate([subject])
        assert verdict is not None
        assert verdict.attributes[FIGURES_UNSUPPORTED] == ("14.16%",)
        assert verdict.attributes[FIGURES_INFERRED] == 0

    def test_coincidence_setting_is_the_bound(self) -> None:
        """FiguresCheck(coincidence=0) infers nothing: no chance is below 0."""
        subject = answer_subject("Total assets grew 14.16%.", tool_results=(table(ASSETS),))
        (verdict,) = FiguresCheck(coincidence=0.0).evaluate([subject])
        assert verdict is not None and verdict.attributes[FIGURES_UNSUPPORTED] == ("14.16%",)

    def test_skipped_layer_shows_as_truncated(self) -> None:
        """A skipped extended layer sets shapecheck.figures.truncated and is named in the explanation."""
        rows = [[f"row {i}", i + 0.5, i + 0.25] for i in range(MAX_EXTENDED_NUMBERS // 2 + 1)]
        subject = answer_subject("It grew 14.16%.", tool_results=(table(rows),))
        (verdict,) = FiguresCheck().evaluate([subject])
        assert verdict is not None and verdict.attributes[FIGURES_TRUNCATED] is True
        assert "extended derivations were not tried" in verdict.explanation

    @pytest.mark.parametrize(
        ("settings", "name"),
        [
            ({"derivations": "all"}, "derivations"),
            ({"coincidence": -0.1}, "coincidence"),
            ({"coincidence": 2}, "coincidence"),
        ],
    )
    def test_bad_arguments(self, settings: dict[str, object], name: str) -> None:
        """A bad constructor argument is a ValueError naming it."""
        with pytest.raises(ValueError, match=name):
            FiguresCheck(**settings)  # type: ignore[arg-type]
