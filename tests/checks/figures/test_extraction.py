"""Which numbers of an answer are figures, and how they are normalised."""

from __future__ import annotations

import pytest

from otel_shapecheck.checks.figures._text import figures_in


class TestFiguresWearingUnits:
    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("latency 7ms", "7"),
            ("latency 7 MS", "7"),
            ("3 us per call", "3"),
            ("a 10 Gbps link", "10"),
            ("40mbps", "40"),
            ("5 percent", "5"),
            ("8 KiB", "8"),
            ("1.5 PiB", "1.5"),
            ("9 PB", "9"),
            ("12 TiB/s", "12"),
            ("-3.5%", "-3.5"),
            ("+2%", "2"),
            ("1,234,567.25 IOPS", "1234567.25"),
        ],
    )
    def test_unit_makes_a_figure(self, text: str, value: str) -> None:
        """Any listed unit, in any case, makes the number before it a figure."""
        assert [figure.value for figure in figures_in(text)] == [value]

    @pytest.mark.parametrize(
        "text",
        [
            "7 users",  # 'us' followed by a letter
            "4 msgs",  # 'ms' followed by a letter
            "2 tbsp",  # 'tb' followed by a letter
            "3  TB",  # two spaces apart
            "v2.5%",  # preceded by a word character
            "1.2.5 ms",  # preceded by a dot
        ],
    )
    def test_unit_lookalikes_are_not_figures(self, text: str) -> None:
        """A unit must end the word and sit glued or one whitespace away; the number must start a word."""
        assert figures_in(text) == ()

    @pytest.mark.parametrize(
        ("text", "written", "value"),
        [
            ("revenue was $1.23M", "1.23M", "1.23"),
            ("4.3 million users", "4.3 million", "4.3"),
            ("about 12 thousand", "12 thousand", "12"),
            ("roughly 5k", "5k", "5"),
            ("1,234.6K rows", "1,234.6K", "1234.6"),
            ("3.4bn and 2 BN", "3.4bn", "3.4"),
            ("a 7 mn budget", "7 mn", "7"),
            ("$2B deal", "2B", "2"),
        ],
    )
    def test_a_scale_makes_a_figure(self, text: str, written: str, value: str) -> None:
        """A number with a scale is a figure whatever its digits, its value the number as written."""
        assert (figures_in(text)[0].written, figures_in(text)[0].value) == (written, value)

    @pytest.mark.parametrize("text", ["ran 5 km in 30 m", "2 B rows", "7 mins", "3 kg", "9 bnb"])
    def test_scale_lookalikes_are_not_figures(self, text: str) -> None:
        """Spaced or lower-case m and b, and words that only start with a scale, are not scales."""
        assert figures_in(text) == ()

    def test_written_form_is_kept(self) -> None:
        """A figure keeps its written form (for the flag) apart from its normalised value."""
        (figure,) = figures_in("usable: 1,526.3 TB.")
        assert (figure.written, figure.value) == ("1,526.3 TB", "1526.3")


class TestBareNumbers:
    def test_long_bare_numbers_are_candidates(self) -> None:
        """A bare number with at least four digits is a candidate; shorter ones are prose."""
        figures = figures_in("There are 12345 files and 5402.9 units in 3 folders; revenue was $12,500.")
        assert [(figure.value, figure.shape) for figure in figures] == [
            ("12345", "number"),
            ("5402.9", "number"),
            ("12500", "number"),
        ]

    def test_min_digits_is_configurable(self) -> None:
        """With min_digits=2, a two-digit count is a candidate."""
        assert [figure.value for figure in figures_in("3 issues and 42 alerts", min_digits=2)] == ["42"]

    @pytest.mark.parametrize(
        "text",
        [
            "host CLUSTER-A01",
            "ticket ID-12345",
            "on 2024-05-01 at 12:30",
            "available 24/7",
            "a 1024-port fabric",
            "release 1.2.3456",
            "issue #12345",
            "about 1200x faster",
        ],
    )
    def test_identifiers_and_compounds_are_not_candidates(self, text: str) -> None:
        """Numbers inside identifiers, dates, times, compounds, versions and issue refs are not figures."""
        assert figures_in(text) == ()

    @pytest.mark.parametrize(
        "text",
        [
            "As of 2024, the pool is full.",
            "It ran on March 15, 2024 and on Wednesday, September 25, 2024.",
            "In Q3 2024 and in FY 2023 it grew; fiscal 2022 was flat, as was the year 2021.",
            "from 2022 to 2024, and between 2019 and 2021.",
            "It has grown since 2019.",
            "in 15 Mar 2024 terms",
        ],
    )
    def test_calendar_years_date_things_and_are_not_figures(self, text: str) -> None:
        """A written date's year, a period's, or one a word places in time is no quantity to check."""
        assert figures_in(text) == ()

    @pytest.mark.parametrize(
        ("text", "values"),
        [
            ("In 2048 blocks we stored 5000.", ["2048", "5000"]),
            ("Sales: 2024 units, 1999 returned.", ["2024", "1999"]),
            ("The 2024 budget is 5000.", ["2024", "5000"]),
            ("We had 2024 incidents in 2023.", ["2024"]),
            ("fiscal 2023 revenue of 2024", ["2024"]),
            ("In 2024 EUR it cost 2100.", ["2024", "2100"]),
            ("in 2100, then 1899.", ["2100", "1899"]),
        ],
    )
    def test_year_like_quantities_stay_figures(self, text: str, values: list[str]) -> None:
        """Nothing dates these: a count, an amount, or a year outside 1900–2099 stays a figure."""
        assert [figure.value for figure in figures_in(text)] == values

    def test_each_value_is_checked_once(self) -> None:
        """A value written twice is one candidate, kept in its first written form."""
        figures = figures_in("61% now, 61% before, 61 ms")
        assert [(figure.written, figure.value) for figure in figures] == [("61%", "61")]

    def test_figure_and_bare_number_do_not_double_count(self) -> None:
        """A long number wearing a unit is a figure, not also a bare number."""
        assert [(f.value, f.shape) for f in figures_in("41,200 IOPS")] == [("41200", "figure")]

    @pytest.mark.parametrize("min_digits", [0, -1, True])
    def test_bad_min_digits(self, min_digits: int) -> None:
        """min_digits below one is a ValueError naming the setting."""
        with pytest.raises(ValueError, match="min_digits"):
            figures_in("12345", min_digits=min_digits)


def test_each_figure_knows_where_it_is_written() -> None:
    # "4500" is inside "14500" too: the figure's place is where it is written as a figure
    answer = "Stock was 14500 units, 4500 of them sold, and 14500 remain at 12.5 %."
    assert [(figure.value, figure.at) for figure in figures_in(answer)] == [
        ("14500", answer.index("14500")),
        ("4500", answer.index(" 4500") + 1),
        ("12.5", answer.index("12.5")),
    ]
