"""The verdict table: what it lists, what it counts instead, and how it marks flagged verdicts."""

from __future__ import annotations

import io

from rich.console import Console

from otel_shapecheck.cli._report import VerdictRow
from otel_shapecheck.cli._terminal import MAX_LISTED_ROWS, print_verdicts


def _row(index: int, *, flagged: bool = False, skipped: str | None = None) -> VerdictRow:
    return VerdictRow(
        trace_id="0" * 32,
        span_id=f"{index:016x}",
        span_name="chat",
        check="tool_choice",
        label="skipped" if skipped else ("narrow" if flagged else "clear"),
        score=None if skipped else 0.5,
        explanation=f"row {index}",
        flagged=flagged,
        skipped=skipped,
        root_name="invoke_agent planner",
    )


def _printed(rows: list[VerdictRow]) -> str:
    console = Console(file=io.StringIO(), width=160)
    print_verdicts(console, rows)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output


class TestVerdictTable:
    def test_calls_without_a_tool_are_counted_not_listed(self) -> None:
        """A call that invoked no tool is no choice: it is counted under the table, not given a row."""
        output = _printed([_row(1), _row(2, skipped="nothing-chosen"), _row(3, skipped="no-menu")])
        assert "row 1" in output and "row 3" in output and "row 2" not in output
        assert "1 LLM calls answered without invoking a tool" in output
        assert "invoke_agent planner" in output

    def test_large_tables_list_only_flagged_verdicts(self) -> None:
        """Past the row limit only flagged verdicts get rows; the rest are counted."""
        rows = [_row(index, flagged=index % 10 == 0) for index in range(MAX_LISTED_ROWS + 40)]
        output = _printed(rows)
        flagged = sum(1 for row in rows if row.flagged)
        assert output.count("narrow") == flagged
        assert f"{len(rows) - flagged} verdicts that raised no flag are not listed" in output

    def test_empty_input_says_so(self) -> None:
        """With nothing evaluated the table is replaced by one sentence."""
        assert "No span carried anything the checks evaluate." in _printed([])
