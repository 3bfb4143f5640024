"""Terminal output: the verdict table, the run summary, and progress on stderr for large inputs (rich)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from otel_shapecheck.checks.tool_choice._labels import SKIP_NOTHING_CHOSEN
from otel_shapecheck.cli._report import VerdictRow

PROGRESS_THRESHOLD_SPANS = 2000
"""Inputs with more spans than this get a progress bar on stderr."""

STATUS_THRESHOLD_BYTES = 4_000_000
"""Input files larger than this get a spinner on stderr while they are read."""

_PIPED_WIDTH = 120

MAX_LISTED_ROWS = 60
"""Past this many verdict rows the table lists the flagged ones only (``--json`` always has them all)."""
_SKIPPED = "skipped"


def stdout_console() -> Console:
    """A console on stdout: 120 columns when stdout is a pipe or a file, unless ``COLUMNS`` says otherwise."""
    console = Console()
    if not console.is_terminal and not os.environ.get("COLUMNS"):
        console = Console(width=_PIPED_WIDTH)
    return console


def print_verdicts(console: Console, rows: Sequence[VerdictRow], title: str = "shapecheck verdicts") -> None:
    """Print one table row per verdict: span, check, verdict, score, why; flagged verdicts in red.

    Calls that answered without invoking any tool are counted under the table instead of listed: they
    are no choice at all, and on a real export they would be most of the rows. Past
    :data:`MAX_LISTED_ROWS` rows only the flagged verdicts are listed.
    """
    listed = [row for row in rows if row.skipped != SKIP_NOTHING_CHOSEN]
    unflagged_left_out = 0
    if len(listed) > MAX_LISTED_ROWS:
        flagged = [row for row in listed if row.flagged]
        unflagged_left_out = len(listed) - len(flagged)
        listed = flagged
    if not rows:
        console.print("[dim]No span carried anything the checks evaluate.[/dim]")
        return
    table = Table(title=title, title_justify="left", expand=True)
    table.add_column("span")
    table.add_column("check", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("why", ratio=1, overflow="fold")
    for row in listed:
        why = Text(row.explanation)
        if row.detail:
            why.append("\n" + row.detail, style="italic")
        table.add_row(
            _span_cell(row),
            row.check,
            Text(row.label, style=_label_style(row)),
            "" if row.score is None else f"{row.score:.3f}",
            why,
            style="dim" if row.label == _SKIPPED else None,
        )
    console.print(table)
    unlisted = len(rows) - len(listed) - unflagged_left_out
    if unlisted:
        console.print(
            f"[dim]{unlisted} LLM calls answered without invoking a tool (tool choice not scored).[/dim]"
        )
    if unflagged_left_out:
        console.print(
            f"[dim]{unflagged_left_out} verdicts that raised no flag are not listed (--json lists all).[/dim]"
        )


def _span_cell(row: VerdictRow) -> Text:
    cell = Text(row.span_name, style="bold")
    if row.root_name and row.root_name != row.span_name:
        cell.append("\nin " + row.root_name)
    return cell.append("\n" + row.span_id, style="dim")


def _label_style(row: VerdictRow) -> str:
    if row.flagged:
        return "bold red"
    return "dim" if row.label == _SKIPPED else "green"


def print_runs(console: Console, runs: Sequence[Mapping[str, Any]], title: str = "shapecheck runs") -> None:
    """Print one row per agent run (its agent span's ``shapecheck.run.*``); nothing when there is none."""
    if not runs:
        return
    table = Table(title=title, title_justify="left", expand=True)
    table.add_column("run")
    table.add_column("flagged", justify="right", no_wrap=True)
    table.add_column("tool choice", ratio=1)
    table.add_column("figures", ratio=1)
    table.add_column("conformance", ratio=1)
    for run in runs:
        counts = run["summary"]
        cell = Text(run["name"], style="bold").append("\n" + run["span_id"], style="dim")
        if counts.get("incomplete"):
            cell.append("\nincomplete", style="yellow")
        if counts.get("coverage") is not None:
            cell.append(
                f"\ncoverage {counts['coverage']}", style="yellow" if counts["coverage"] != "full" else "dim"
            )
        flagged = int(counts.get("flagged", 0))
        table.add_row(
            cell,
            Text(f"{flagged} of {counts.get('evaluated', 0)}", style="bold red" if flagged else "green"),
            f"{counts.get('llm_calls_with_tools', 0)} calls with tools, {counts.get('scored', 0)} scored, "
            f"{counts.get('narrow', 0)} narrow, {counts.get('proxy_disagreement', 0)} disagreement, "
            f"{counts.get('skipped', 0)} skipped",
            f"{counts.get('answers_checked', 0)} answers, {counts.get('figures_checked', 0)} figures, "
            f"{counts.get('figures_unsupported', 0)} unsupported",
            f"{counts.get('analysts', 0)} analysts, {counts.get('collapsed', 0)} collapsed, "
            f"{counts.get('recovered', 0)} recovered",
        )
    console.print(table)


def print_summary(console: Console, summary: Mapping[str, Any]) -> None:
    """Print the run's counts in a few lines."""
    flagged = summary["flagged"]
    flag_style = "bold red" if flagged else "green"
    console.print(
        f"[bold]{summary['spans']}[/bold] spans, [bold]{summary['evaluated']}[/bold] evaluated, "
        f"[{flag_style}]{flagged} flagged[/{flag_style}]"
        + (f", {summary['duplicates']} duplicate spans not counted" if summary.get("duplicates") else "")
    )
    tool_choice, conformance, figures = summary["tool_choice"], summary["conformance"], summary["figures"]
    console.print(
        f"  tool choice: {tool_choice['llm_calls_with_tools']} calls with tools, "
        f"{tool_choice['scored']} scored, {tool_choice['narrow']} narrow, "
        f"{tool_choice['proxy_disagreement']} proxy disagreement, "
        f"{tool_choice['skipped']} skipped"
    )
    console.print(
        f"  conformance: {conformance['analysts']} analysts, {conformance['collapsed']} collapsed, "
        f"{conformance['recovered']} recovered"
    )
    console.print(
        f"  figures: {figures['answers']} answers, {figures['checked']} figures checked, "
        f"{figures['computed']} computed, {figures.get('inferred', 0)} inferred, "
        f"{figures['unsupported']} unsupported" + _figures_skipped(figures)
    )
    classified = summary.get("classified")
    if classified is not None:
        console.print(
            "  classified: " + ", ".join(f"{count} {label}" for label, count in classified.items())
            if classified
            else "  classified: no span is a model call, tool execution or agent in a convention read "
            "(OTel GenAI, OpenInference, OpenLLMetry, the AI SDK's ai.*)"
        )
    runs = summary.get("runs") or {}
    if runs.get("runs"):
        console.print(
            f"  runs: {runs['runs']} agent runs, {runs.get('flagged', 0)} flagged"
            + (f", {runs['incomplete']} incomplete" if runs.get("incomplete") else "")
            + _coverage(runs.get("coverage") or {})
        )


def _coverage(counts: Mapping[str, int]) -> str:
    """``; coverage: N full, N partial, N none`` (the levels present), ``none`` in yellow."""
    parts = [
        f"[yellow]{counts[level]} {level}[/yellow]" if level == "none" else f"{counts[level]} {level}"
        for level in ("full", "partial", "none")
        if counts.get(level)
    ]
    return f"; coverage: {', '.join(parts)}" if parts else ""


def print_unchecked_runs(console: Console, runs: Sequence[Mapping[str, Any]]) -> None:
    """One line per run in which no model call was read: its zero counts are no clean run."""
    for run in runs:
        console.print(
            f"[yellow]Run {run['name']} ({run['span_id']}): no model call was read (coverage none); "
            "its counts say nothing about the run.[/yellow]"
        )


def _figures_skipped(figures: Mapping[str, Any]) -> str:
    """``, N not checked (...)``: answers that ended a turn without readable content or results."""
    if not figures.get("skipped"):
        return ""
    reasons = [
        f"{figures[key]} {label}"
        for key, label in (
            ("skipped_no_content", "no-content"),
            ("skipped_no_results", "no-results"),
            ("skipped_results_lost", "results-lost"),
        )
        if figures.get(key)
    ]
    style = "yellow"
    return f", [{style}]{figures['skipped']} not checked[/{style}] ({', '.join(reasons)})"


class SpanProgress:
    """A progress bar over spans, drawn on stderr; does nothing below :data:`PROGRESS_THRESHOLD_SPANS`."""

    def __init__(self, progress: Progress | None, total: int) -> None:
        self._progress = progress
        self._task = progress.add_task("checking spans", total=total) if progress is not None else None

    def advance(self, *_: object) -> None:
        """Count one more span done (thread-safe; extra arguments are ignored so it fits any callback)."""
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)


@contextmanager
def reading_status(source: str, size_bytes: int | None) -> Iterator[None]:
    """A spinner on stderr while a large input (over :data:`STATUS_THRESHOLD_BYTES`, or stdin) is read."""
    if size_bytes is not None and size_bytes <= STATUS_THRESHOLD_BYTES:
        yield
        return
    with Console(stderr=True).status(f"reading {source}", spinner="dots"):
        yield


@contextmanager
def span_progress(total: int, *, enabled: bool = True) -> Iterator[SpanProgress]:
    """A :class:`SpanProgress` for ``total`` spans, shown on stderr when the input is large."""
    if not enabled or total <= PROGRESS_THRESHOLD_SPANS:
        yield SpanProgress(None, total)
        return
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with progress:
        yield SpanProgress(progress, total)
