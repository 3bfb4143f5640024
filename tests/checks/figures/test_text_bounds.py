"""Bounds of reading numbers in text: the distinct figures read from one answer, the thousands groups of
one number, long tokens read in pieces, and peak memory that stays flat on ten-megabyte runs."""

from __future__ import annotations

import json

import pytest

from otel_shapecheck import FiguresCheck
from otel_shapecheck._attributes import FIGURES_CHECKED, FIGURES_TRUNCATED
from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._text import (
    MAX_ANSWER_FIGURES,
    MAX_THOUSANDS_GROUPS,
    figures_in,
    is_number_text,
    normalize_token,
    numbers_in_text,
    read_figures,
)
from tests.reliability.fresh_process import run_fresh

from .fixtures import capacity_result
from .test_figures_check import answer_subject


def _distinct_figures(count: int) -> str:
    return " ".join(f"{i}.5 TB" for i in range(count))


class TestDistinctFigureBound:
    def test_exactly_at_the_bound_every_figure_is_read(self) -> None:
        """An answer of exactly MAX_ANSWER_FIGURES distinct figures is read whole, and not said to be cut."""
        figures, cut = read_figures(_distinct_figures(MAX_ANSWER_FIGURES) + " and 0.5 TB again")
        assert len(figures) == MAX_ANSWER_FIGURES and not cut
        assert figures[-1].written == f"{MAX_ANSWER_FIGURES - 1}.5 TB"

    def test_one_past_the_bound_the_rest_is_not_read(self) -> None:
        """The figure past the bound is not read, and the cut is said."""
        answer = _distinct_figures(MAX_ANSWER_FIGURES + 1)
        figures, cut = read_figures(answer)
        assert len(figures) == MAX_ANSWER_FIGURES and cut
        assert f"{MAX_ANSWER_FIGURES}.5 TB" not in {figure.written for figure in figures}
        assert figures_in(answer) == figures

    def test_repeats_do_not_count_towards_the_bound(self) -> None:
        """A figure written many times is one figure, kept where it is first written."""
        answer = "x 12% " * (MAX_ANSWER_FIGURES * 3) + "and 13%"
        figures, cut = read_figures(answer)
        assert [(figure.written, figure.at) for figure in figures] == [("12%", 2), ("13%", len(answer) - 3)]
        assert not cut

    def test_the_finding_and_the_verdict_say_the_answer_was_cut(self) -> None:
        """check_figures reports figures_cut; the verdict sets figures.truncated and says why."""
        answer = _distinct_figures(MAX_ANSWER_FIGURES + 1)
        finding = check_figures(answer, [capacity_result()])
        assert finding.figures_cut and finding.checked == MAX_ANSWER_FIGURES
        assert not check_figures(_distinct_figures(MAX_ANSWER_FIGURES), [capacity_result()]).figures_cut
        (verdict,) = FiguresCheck().evaluate([answer_subject(answer, tool_results=(capacity_result(),))])
        assert verdict is not None and verdict.attributes[FIGURES_TRUNCATED] is True
        assert verdict.attributes[FIGURES_CHECKED] == MAX_ANSWER_FIGURES
        assert f"first {MAX_ANSWER_FIGURES} distinct figures" in verdict.explanation


class TestOneValueOnePrecisionIsOneFigure:
    def test_leading_zeros_separators_and_plus_signs_are_one_figure(self) -> None:
        """Ways of writing one value at one precision are one figure, read where it is first written;
        each of them used to be a figure of its own, and each a search of the same window of carried
        numbers (1 600 of them over 40 000 carried numbers near the value took seconds)."""
        variants = " ".join("0" * zeros + "1,000 TB" for zeros in range(1_600))
        figures = figures_in(f"{variants} +1000 TB -01.5 TB -1.5 TB")
        assert [(figure.written, figure.value) for figure in figures] == [
            ("1,000 TB", "1000"),
            ("-01.5 TB", "-1.5"),
        ]

    def test_another_precision_is_another_figure(self) -> None:
        """A trailing zero states a precision, so ``1000.0`` stays a figure of its own (and ``0.5`` keeps
        its leading zero)."""
        figures = figures_in("01000 TB, 1000.0 TB, 00.5 TB and 0.50 TB")
        assert [figure.value for figure in figures] == ["1000", "1000.0", "0.5", "0.50"]

    def test_the_variants_are_checked_as_one(self) -> None:
        """The finding checks the value once, and names the way it was first written."""
        carried = json.dumps({"values": [1000 + i / 100_000 for i in range(40_000)]})
        variants = " ".join("0" * zeros + "1000 TB" for zeros in range(1, 1_600))
        finding = check_figures(f"{variants} and 37.4 TB", [ToolResult(carried)])
        assert finding.checked == 2
        assert finding.unsupported == ("37.4 TB",)


class TestThousandsGroupBound:
    def test_a_number_of_the_most_groups_is_read(self) -> None:
        """A number of MAX_THOUSANDS_GROUPS groups is a number, a figure and a stated number."""
        number = "1" + ",000" * MAX_THOUSANDS_GROUPS
        (figure,) = figures_in(f"It holds {number} TB.")
        assert figure.written == f"{number} TB" and figure.value == number.replace(",", "")
        assert list(numbers_in_text(f"({number})")) == [float(number.replace(",", ""))]
        assert is_number_text(number) and normalize_token(number) == number.replace(",", "")

    def test_a_number_of_one_group_more_is_not(self) -> None:
        """One group more (at least 10³⁰⁹, past any double) is not read as a number."""
        number = "1" + ",000" * (MAX_THOUSANDS_GROUPS + 1)
        assert figures_in(f"It holds {number} TB.") == ()
        assert figures_in(number) == ()
        assert list(numbers_in_text(number)) == []
        assert not is_number_text(number) and normalize_token(number) == number


class TestLongTokens:
    def test_a_token_of_many_comma_joined_pieces_is_one_token(self) -> None:
        """A token of more pieces than one match reads is still read whole: one number, not several."""
        number = "9" + ",999" * 80
        assert list(numbers_in_text(f"a {number}, b 12")) == [float(number.replace(",", "")), 12.0]
        assert list(numbers_in_text(",".join(str(i) for i in range(200)) + " then 7")) == [7.0]

    def test_a_token_cut_at_a_comma_after_many_pieces(self) -> None:
        """A comma not between digits ends a long token, however many pieces came before it."""
        assert list(numbers_in_text("1" + ",1" * 200 + "x, 42")) == [42.0]
        assert list(numbers_in_text("1" + ",000" * 70 + ", 42")) == [float("1" + "000" * 70), 42.0]


TEN_MB = 10 * 1024 * 1024
PEAK_GROWTH_BOUND_MIB = 200
"""Peak resident growth allowed for reading one ten-megabyte text (the input itself, a translated copy
and a few slices of it). Before the patterns were bounded, these cost 300 MB to 1.4 GB."""

_CHILD = r"""
import json, resource, sys
from otel_shapecheck.checks.figures import _text
case, size = sys.argv[1], int(sys.argv[2])
texts = {
    "digit-token": lambda: "1" * size,
    "letter-token": lambda: "1" + "a" * size,
    "thousands-token": lambda: "1" + ",000" * (size // 4),
    "thousands-figure": lambda: "1" + ",000" * (size // 4) + " TB",
    "repeated-figure": lambda: "12% " * (size // 4),
}
calls = {
    "numbers": lambda text: list(_text.numbers_in_text(text)),
    "figures": lambda text: _text.figures_in(text),
    "token": lambda text: (_text.normalize_token(text), _text.is_number_text(text)),
}
text_case, call = case.split(":")
text = texts[text_case]()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
calls[call](text)
print(json.dumps({"growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before}))
"""


@pytest.mark.parametrize(
    "case",
    [
        "digit-token:numbers",
        "letter-token:numbers",
        "thousands-token:numbers",
        "thousands-token:figures",
        "thousands-token:token",
        "thousands-figure:figures",
        "repeated-figure:figures",
        "repeated-figure:numbers",
    ],
)
def test_ten_megabyte_runs_keep_peak_memory_flat(case: str) -> None:
    """A ten-megabyte token or run of figures: peak RSS (ru_maxrss, in a fresh process, so a spike inside
    one regular-expression call counts) grows by far less than a backtracking frame per character."""
    growth_kib = json.loads(run_fresh(_CHILD, case, str(TEN_MB)).strip().splitlines()[-1])["growth_kib"]
    assert growth_kib < PEAK_GROWTH_BOUND_MIB * 1024, f"{case}: {growth_kib // 1024} MiB"
