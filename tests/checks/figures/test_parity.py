"""Parity vectors F1–F4 and the extractor vectors of the reference, and our one deliberate difference."""

from __future__ import annotations

import pytest

from otel_shapecheck._model import JSONValue, ToolResult
from otel_shapecheck.checks.figures._basis import explain_figure, figure_basis
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._text import figures_in, normalize_token

from .fixtures import capacity_result


class TestExtractorVectors:
    def test_units_make_short_numbers_figures(self) -> None:
        """Every number wearing a unit is a figure, glued or one space apart, with an optional /s."""
        text = "53.2% used, 6.3 TB free, 24.8TB, 41,200 IOPS, 7 ms, 2 GB/s"
        assert [figure.value for figure in figures_in(text)] == ["53.2", "6.3", "24.8", "41200", "7", "2"]
        assert {figure.shape for figure in figures_in(text)} == {"figure"}

    def test_prose_numbers_are_not_figures(self) -> None:
        """Counts, durations, compound adjectives, versions and multipliers are prose."""
        assert figures_in("3 issues over 24 hours on a 48-port switch, OneFS 9.5, 1.5x") == ()

    def test_f4_identifier_is_not_a_figure(self) -> None:
        """F4: in 'CLUSTER-A01 is 53.2% used, with 6.3 TB free.' only 53.2 and 6.3 are figures."""
        figures = figures_in("CLUSTER-A01 is 53.2% used, with 6.3 TB free.")
        assert [(figure.written, figure.value, figure.shape) for figure in figures] == [
            ("53.2%", "53.2", "figure"),
            ("6.3 TB", "6.3", "figure"),
        ]


class TestF1CapacityRows:
    @pytest.mark.parametrize(
        ("value", "derivation", "source"),
        [
            ("1526.3", "column-sum", "sum of rows[].usable_tb"),
            ("3200", "column-sum", "sum of rows[].used_tb"),
            ("5402.9", "column-sum", "sum of rows[].total_tb"),
            ("59.2", "column-ratio", "100 × rows[].used_tb ÷ rows[].total_tb"),
            ("61", "rounded", "rows[0].used_pct"),
            ("38.9", "complement", "100 − rows[0].used_pct"),
            ("2202.9", "column-difference", "rows[].total_tb − rows[].used_tb"),
            ("1526", "column-sum", "sum of rows[].usable_tb"),
        ],
    )
    def test_derived_figures(self, value: str, derivation: str, source: str) -> None:
        """F1: sums, a ratio of like-unit columns, a rounding, a complement and a difference are explained."""
        explained = explain_figure(value, figure_basis([capacity_result()]))
        assert explained is not None
        assert (explained.derivation, explained.source) == (derivation, source)

    @pytest.mark.parametrize("value", ["53.2", "6.3", "64.5", "24.8", "1527"])
    def test_invented_figures(self, value: str) -> None:
        """F1: figures of the invented answers are no derivation of the rows."""
        assert explain_figure(value, figure_basis([capacity_result()])) is None


class TestF2UnitScale:
    @pytest.mark.parametrize("value", ["435.5", "2", "2.2"])
    def test_bytes_stated_in_larger_units(self, value: str) -> None:
        """F2: bytes divided by 1000^k or 1024^k are unit-scale derivations."""
        basis = figure_basis([ToolResult({"avail_bytes": 435.5e12, "used": 2 * 1024**4})])
        explained = explain_figure(value, basis)
        assert explained is not None
        assert explained.derivation == "unit-scale"

    def test_unrelated_figure(self) -> None:
        """F2: 6.3 is no scale of either carried number."""
        basis = figure_basis([ToolResult({"avail_bytes": 435.5e12, "used": 2 * 1024**4})])
        assert explain_figure("6.3", basis) is None

    def test_exact_binary_scale_is_named(self) -> None:
        """A value that only a binary scale explains names that scale."""
        basis = figure_basis([ToolResult({"used": 2 * 1024**4})])
        explained = explain_figure("2.00", basis)
        assert explained is not None
        assert explained.source == "used ÷ 1024^4"


class TestF3GroupedSums:
    def test_sum_over_rows_sharing_a_text_value(self) -> None:
        """F3: 14.75 is the sum of usable_tb over the rows whose cluster is A."""
        rows: JSONValue = [
            {"cluster": "A", "usable_tb": 10.5},
            {"cluster": "A", "usable_tb": 4.25},
            {"cluster": "B", "usable_tb": 99},
        ]
        explained = explain_figure("14.75", figure_basis([ToolResult({"rows": rows})]))
        assert explained is not None
        assert (explained.derivation, explained.source) == ("column-sum", "sum of rows[cluster=A].usable_tb")


class TestWrittenPrecision:
    """Precision is the answer's own as written; the reference drops trailing zeros first."""

    def test_whole_number_matches_within_half(self) -> None:
        """'61%' matches a carried 61.1 as rounded."""
        finding = check_figures("The pool is 61% used.", [capacity_result()])
        assert [figure.derivation for figure in finding.computed] == ["rounded"]
        assert finding.unsupported == ()

    def test_trailing_zero_keeps_one_decimal_precision(self) -> None:
        """'61.0%' is compared within ±0.05, so a carried 61.1 does not support it."""
        finding = check_figures("The pool is 61.0% used.", [capacity_result()])
        assert finding.unsupported == ("61.0%",)
        assert explain_figure("61.0", figure_basis([capacity_result()])) is None

    def test_difference_from_the_reference_normalisation(self) -> None:
        """The reference re-prints '61.0' as '61' before asking, which would accept 61.0% as rounded."""

        def reference_normalize(token: str) -> str:
            # The reference's last normalisation step: a plain number is re-printed through a double.
            number = float(normalize_token(token))
            return str(int(number)) if number.is_integer() else repr(number)

        basis = figure_basis([capacity_result()])
        assert reference_normalize("61.0%") == "61"
        reference_answer = explain_figure(reference_normalize("61.0%"), basis)
        assert reference_answer is not None and reference_answer.derivation == "rounded"
        assert normalize_token("61.0%") == "61.0"
        assert explain_figure(normalize_token("61.0%"), basis) is None

    def test_trailing_zero_matching_exactly_is_carried(self) -> None:
        """'57.70%' equals a carried 57.7, so it is carried, not flagged."""
        finding = check_figures("The h700 pool is 57.70% used.", [capacity_result()])
        assert finding.carried == ("57.70%",)

    @pytest.mark.parametrize(
        ("carried", "written"),
        [(49590.6625, "49590.662"), (49590.6635, "49590.664"), (0.25, "0.2"), (999999.99995, "999999.9999")],
    )
    def test_half_even_rounding_on_the_window_edge_is_rounded(self, carried: float, written: str) -> None:
        """A carried number rounded half-even lands exactly on the window's closed edge, at any magnitude."""
        derivation = explain_figure(written, figure_basis([ToolResult({"value": carried})]))
        assert derivation is not None and derivation.derivation == "rounded"
