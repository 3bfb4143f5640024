"""Numbers that must never break a verdict: overflowing sums, huge figures, non-finite values."""

from __future__ import annotations

import json

import pytest

from otel_shapecheck import FiguresCheck, Subject
from otel_shapecheck._attributes import FIGURES_UNSUPPORTED
from otel_shapecheck._model import LLMCall, ToolResult
from otel_shapecheck.checks.figures import _check
from otel_shapecheck.checks.figures._basis import explain_figure, figure_basis
from otel_shapecheck.checks.figures._findings import FiguresFinding, check_figures, figures_conclusion_line

from .fixtures import capacity_result

OVERFLOWING_ROWS = ToolResult(json.dumps([{"x": 1e308}, {"x": 1e308}]))
"""Two rows whose column sum overflows a double: ``math.fsum`` raises ``OverflowError`` on them."""


def answer_subject(answer: str, result: ToolResult, span_id: str) -> Subject:
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    call = LLMCall(span_id=span_id, trace_id=trace_id, answer_text=answer, tool_results=(result,))
    return Subject(span_id=span_id, trace_id=trace_id, llm_call=call)


class TestOverflow:
    def test_overflowing_column_sum_is_skipped(self) -> None:
        """A column whose sum overflows records no sum; the rows' own numbers are still carried."""
        basis = figure_basis([OVERFLOWING_ROWS])
        assert [number.value for number in basis.carried] == [1e308, 1e308]
        assert all(derived.derivation != "column-sum" for derived in basis.derived)

    def test_answer_over_overflowing_rows_gets_a_finding(self) -> None:
        """The figures of an answer over such rows are still judged: invented ones are flagged."""
        finding = check_figures("The pools hold 12.5 TB.", [OVERFLOWING_ROWS])
        assert finding.unsupported == ("12.5 TB",)

    def test_partial_sum_overflow_is_skipped_too(self) -> None:
        """A column whose exact total is finite but whose partial sums overflow is skipped, not raised."""
        rows = ToolResult(json.dumps([{"x": 1e308}, {"x": 1e308}, {"x": -1e308}, {"y": 2}, {"y": 3}]))
        finding = check_figures("Totals: 5 TB and 12.5 TB.", [rows])
        assert finding.computed[0].source == "sum of result[].y"
        assert finding.unsupported == ("12.5 TB",)

    def test_one_bad_tool_result_costs_no_other_answer_its_verdict(self) -> None:
        """In one batch, the answer over overflowing rows and an ordinary answer both get their verdicts."""
        subjects = [
            answer_subject("The pools hold 12.5 TB.", OVERFLOWING_ROWS, "b7ad6b7169203331"),
            answer_subject("CLUSTER-A01 is 53.2% used.", capacity_result(), "b7ad6b7169203332"),
        ]
        first, second = FiguresCheck().evaluate(subjects)
        assert first is not None and first.attributes[FIGURES_UNSUPPORTED] == ("12.5 TB",)
        assert second is not None and second.attributes[FIGURES_UNSUPPORTED] == ("53.2%",)

    def test_a_failing_answer_gets_no_verdict_and_the_others_keep_theirs(
        self, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Should the check ever fail on one answer, that answer alone loses its verdict, and it is logged."""
        real = _check.check_figures

        def failing_on_poison(answer: str, *args: object, **kwargs: object) -> FiguresFinding:
            if "poison" in answer:
                raise OverflowError("injected")
            return real(answer, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(_check, "check_figures", failing_on_poison)
        subjects = [
            answer_subject("poison: 12.5 TB.", capacity_result(), "b7ad6b7169203331"),
            answer_subject("CLUSTER-A01 is 53.2% used.", capacity_result(), "b7ad6b7169203332"),
        ]
        first, second = FiguresCheck().evaluate(subjects)
        assert first is None
        assert second is not None and second.attributes[FIGURES_UNSUPPORTED] == ("53.2%",)
        assert "b7ad6b7169203331" in caplog.text


class TestHugeAndNonFinite:
    @pytest.mark.parametrize("digits", [309, 400])
    def test_figure_of_309_digits_or_more_is_not_rounded(self, digits: int) -> None:
        """A figure too large for a double is infinity, which rounds no carried number: it is flagged."""
        figure = "9" * digits
        for carried in (1e308, 5.0):
            result = ToolResult(json.dumps({"x": carried}))
            assert explain_figure(figure, figure_basis([result])) is None
            assert check_figures(f"It is {figure} TB.", [result]).unsupported == (f"{figure} TB",)

    def test_non_finite_tool_values_match_nothing(self) -> None:
        """NaN and infinities in a tool result are carried as nothing and support no figure."""
        result = ToolResult('{"x": Infinity, "y": -Infinity, "z": NaN, "rows": [{"a": NaN}, {"a": 1}]}')
        basis = figure_basis([result])
        assert [number.value for number in basis.carried] == [1.0]
        assert check_figures("It is 12 TB.", [result]).unsupported == ("12 TB",)


class TestConclusionLineNumbersOnly:
    def test_identifier_only_input_gives_no_line(self) -> None:
        """No flagged value is a number: the reference returns no line, and so do we."""
        assert figures_conclusion_line(["CLUSTER-A01"]) is None
        assert figures_conclusion_line(["ID-12345", "pool-a"]) is None

    def test_identifiers_are_left_out_of_a_line_about_numbers(self) -> None:
        """Only the numbers among the flagged values are named."""
        line = figures_conclusion_line(["CLUSTER-A01", "53.2%", "6.3 TB", "12,500"])
        assert line is not None
        assert "53.2%, 6.3 TB, 12,500" in line
        assert "CLUSTER-A01" not in line
