"""The one line an agent framework appends to a revision request about flagged figures."""

from __future__ import annotations

from otel_shapecheck.checks.figures._findings import check_figures, figures_conclusion_line

from .fixtures import capacity_result


class TestConclusionLine:
    def test_nothing_flagged(self) -> None:
        """No flagged figure, no line."""
        assert figures_conclusion_line([]) is None
        assert figures_conclusion_line(["", "  "]) is None

    def test_names_the_flagged_figures_as_the_library_finding(self) -> None:
        """The line names each flagged figure as written and speaks as the library, not as the person."""
        finding = check_figures("CLUSTER-A01 is 53.2% used, with 6.3 TB free.", [capacity_result()])
        line = figures_conclusion_line(finding.unsupported)
        assert line is not None
        assert "53.2%, 6.3 TB" in line
        assert line.startswith("Note from the figures check (the library, not the user)")
        assert "\n" not in line
        lowered = line.lower()
        assert not any(word in lowered for word in ("you're right", "sorry", "apolog", "i said"))

    def test_at_most_eight_then_a_count(self) -> None:
        """At most eight figures are named; the rest are counted as 'and N more'."""
        values = [f"{n}.5 TB" for n in range(11)]
        line = figures_conclusion_line(values)
        assert line is not None
        assert "0.5 TB, 1.5 TB, 2.5 TB, 3.5 TB, 4.5 TB, 5.5 TB, 6.5 TB, 7.5 TB and 3 more" in line
        assert "8.5 TB" not in line

    def test_duplicates_are_named_once(self) -> None:
        """A figure listed twice is named once and not counted twice."""
        line = figures_conclusion_line(["12 ms", "12 ms"])
        assert line is not None
        assert line.count("12 ms") == 1
        assert "this figure" in line
