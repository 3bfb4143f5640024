"""Figures: is every number in a final answer carried by a tool result, or a declared derivation of one?

A *figure* is a number wearing a unit of measure (``53.2%``, ``6.3 TB``, ``41,200 IOPS``) whatever its
digit count, or a bare number with at least ``min_digits`` digits. Each figure of an answer is
*carried* when a tool result (or the user) states it, *computed* when it is one of a closed set of
derivations of carried numbers (rounded, unit-scale, complement, column sum, ratio, difference), and
*unsupported* otherwise. Everything here is plain arithmetic over plain data, bounded in time and memory.

The rules follow agentfootprint's evidence figures module (``figureBasisOf`` / ``explainFigure``), with
one deliberate difference: precision is the answer's own *as written*, so ``61.0%`` is compared within
±0.05 and does not match a carried 61.1, where the reference's normalisation turns it into ``61`` first.

This module gives one answer's finding; the parts are ``_figures_text`` (figures and numbers in text),
``_figures_fold`` (tool results folded into carried numbers and column derivations) and
``_figures_basis`` (the fold indexed, and the derivation question asked of it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._basis import explain_figure, figure_basis
from otel_shapecheck.checks.figures._text import (
    DEFAULT_MIN_DIGITS,
    figures_in,
    is_number_text,
    numbers_in_text,
)

MAX_CONCLUSION_VALUES: Final = 8
"""Flagged values named in the conclusion line; the rest are counted."""


@dataclass(frozen=True)
class ComputedFigure:
    """A figure no tool result carried that a declared derivation explains."""

    written: str
    value: str
    derivation: str
    source: str

    def describe(self) -> str:
        """``"<value> = <derivation>: <from>"``, the form of ``shapecheck.figures.derivations``."""
        return f"{self.value} = {self.derivation}: {self.source}"


@dataclass(frozen=True)
class FiguresFinding:
    """What the figures check found in one answer."""

    checked: int
    """Candidate figures in the answer (one per distinct value)."""
    carried: tuple[str, ...]
    """Figures (as written) that a tool result carried as-is, or that the user supplied."""
    computed: tuple[ComputedFigure, ...]
    unsupported: tuple[str, ...]
    """Figures (as written) that nothing carried and no declared derivation explains."""
    truncated: bool
    """A bound cut the basis (can only flag more, never fewer)."""

    @property
    def supported_share(self) -> float:
        """Share of the checked figures that are carried or computed; 1.0 when there were none."""
        if not self.checked:
            return 1.0
        return (len(self.carried) + len(self.computed)) / self.checked


def check_figures(
    answer: str,
    tool_results: Iterable[ToolResult],
    user_texts: Iterable[str] = (),
    *,
    min_digits: int = DEFAULT_MIN_DIGITS,
) -> FiguresFinding:
    """Check every figure of ``answer`` against the tool results it could have seen.

    Numbers stated in the user's own messages are exempt (counted as carried).

    Raises:
        ValueError: ``min_digits`` is not a whole number ≥ 1.
    """
    figures = figures_in(answer, min_digits)
    if not figures:
        return FiguresFinding(0, (), (), (), False)
    basis = figure_basis(tool_results)
    user_numbers = {number for text in user_texts for number in numbers_in_text(text)}
    carried: list[str] = []
    computed: list[ComputedFigure] = []
    unsupported: list[str] = []
    for figure in figures:
        number = float(figure.value)
        if number in user_numbers or basis.carries(number):
            carried.append(figure.written)
            continue
        derivation = explain_figure(figure.value, basis)
        if derivation is None:
            unsupported.append(figure.written)
        else:
            computed.append(
                ComputedFigure(figure.written, figure.value, derivation.derivation, derivation.source)
            )
    return FiguresFinding(len(figures), tuple(carried), tuple(computed), tuple(unsupported), basis.truncated)


def figures_conclusion_line(unsupported: Sequence[str]) -> str | None:
    """The library's finding about the flagged figures, as one line for the end of a revision request.

    Names at most :data:`MAX_CONCLUSION_VALUES` figures, then ``and N more``; ``None`` when no flagged
    value is a number (an identifier is not a figure: its correction is the instruction alone, as in
    the reference). Worded as the check's finding, not as the person's correction.
    """
    values = list(dict.fromkeys(value.strip() for value in unsupported if value and is_number_text(value)))
    if not values:
        return None
    named = ", ".join(values[:MAX_CONCLUSION_VALUES])
    if len(values) > MAX_CONCLUSION_VALUES:
        named += f" and {len(values) - MAX_CONCLUSION_VALUES} more"
    subject = "this figure" if len(values) == 1 else "these figures"
    return (
        f"Note from the figures check (the library, not the user): no tool result carries {named}, "
        f"and no declared derivation of the numbers they do carry gives {subject}; "
        f"do not state {subject} unless a tool result supports them."
    )
