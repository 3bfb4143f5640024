"""Figures: is every number in a final answer carried by a tool result, or a derivation of one?

A *figure* is a number wearing a unit of measure (``53.2%``, ``6.3 TB``, ``41,200 IOPS``) whatever its
digit count, or a bare number with at least ``min_digits`` digits. Each figure of an answer is
*carried* when a tool result (or the user) states it, *computed* when it is one of a closed set of
derivations of carried numbers (rounded, unit-scale, complement, column sum, ratio, difference),
*inferred* when, under ``derivations="extended"``, it is cell arithmetic (a difference, a percent change,
an average…) whose coincidence chance is below ``coincidence``, and *unsupported* otherwise. Everything
here is plain arithmetic over plain data, bounded in time and memory.

The closed rules follow agentfootprint's evidence figures module (``figureBasisOf`` / ``explainFigure``),
with one deliberate difference: precision is the answer's own *as written*, so ``61.0%`` is compared
within ±0.05 and does not match a carried 61.1, where the reference's normalisation turns it into ``61``
first. The extended layer is asked only of figures the closed set leaves unsupported, so it never
changes a closed verdict; ``derivations="closed"`` is the reference's set alone.

The parts are ``_text`` (figures and numbers in text), ``_fold``, ``_carried`` and ``_columns`` (tool
results walked and folded into carried numbers and column derivations), ``_basis`` (the fold indexed,
and the closed question), ``_cells``, ``_extended`` and ``_coincidence`` (the extended layer and its
bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._answer_words import AnswerSentences
from otel_shapecheck.checks.figures._basis import (
    FigureBasis,
    explain_figure,
    figure_basis,
    magnitude_of_negative,
    percent_of_fraction,
)
from otel_shapecheck.checks.figures._cells import Pairing
from otel_shapecheck.checks.figures._coincidence import DEFAULT_COINCIDENCE, format_chance
from otel_shapecheck.checks.figures._extended import (
    MAX_EXTENDED_FIGURES,
    NAMED_CAP,
    NAMED_FACTOR,
    ExtendedDerivations,
)
from otel_shapecheck.checks.figures._text import (
    DEFAULT_MIN_DIGITS,
    Figure,
    is_number_text,
    numbers_in_text,
    read_figures,
)

MAX_CONCLUSION_VALUES: Final = 8
"""Flagged values named in the conclusion line; the rest are counted."""

Derivations = Literal["closed", "extended"]
DERIVATION_SETS: Final = ("closed", "extended")
"""``closed``: the reference's derivations only; ``extended``: also cell arithmetic under the bound."""
DEFAULT_DERIVATIONS: Final = "extended"


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
class InferredFigure:
    """A figure no closed derivation explains and an extended one does, below the coincidence bound."""

    written: str
    value: str
    derivation: str
    """One of the extended operations (``difference``, ``percent-change``, ``average``…)."""
    source: str
    """The operands and where they sit: ``(5765.2 − 5050.2) / 5050.2, row Total``."""
    chance: float
    """The chance that a random number of the figure's magnitude and precision would match a candidate."""

    def describe(self) -> str:
        """``"12.3% = percent-change: (5765.2 − 5050.2) / 5050.2, row Total (chance 0.4%)"``."""
        return f"{self.written} = {self.derivation}: {self.source} (chance {format_chance(self.chance)})"


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
    inferred: tuple[InferredFigure, ...] = ()
    """Figures an extended derivation explains below the coincidence bound."""
    extended_skipped: str | None = None
    """Why the extended layer was not tried although a figure needed it (a bound); ``None`` otherwise."""
    figures_cut: bool = False
    """The answer holds more than :data:`~._text.MAX_ANSWER_FIGURES` distinct figures: the rest of it was
    not read, so figures written past them are neither checked nor flagged."""

    @property
    def supported_share(self) -> float:
        """Share of the checked figures that are carried, computed or inferred; 1.0 when there were none."""
        if not self.checked:
            return 1.0
        return (len(self.carried) + len(self.computed) + len(self.inferred)) / self.checked


def check_figures(
    answer: str,
    tool_results: Iterable[ToolResult],
    supplied_texts: Iterable[str] = (),
    *,
    min_digits: int = DEFAULT_MIN_DIGITS,
    derivations: Derivations = DEFAULT_DERIVATIONS,
    coincidence: float = DEFAULT_COINCIDENCE,
    pairing: Pairing = "structural",
    named_factor: float = NAMED_FACTOR,
    named_cap: float = NAMED_CAP,
) -> FiguresFinding:
    """Check every figure of ``answer`` against the tool results it could have seen.

    Numbers stated in ``supplied_texts`` (the user's own messages, and the instructions the application
    gave the model) are exempt (counted as carried). Under
    ``derivations="extended"`` a figure no closed derivation explains is asked the extended derivations
    and accepted (inferred) when its coincidence chance is below ``coincidence``. ``pairing="any"``
    pairs any two cells instead of cells sharing a row, column or text (to measure what that adds), and
    ``named_factor`` and ``named_cap`` set the named cells' limit ``min(named_cap, named_factor · p)``
    (:func:`~._extended.named_limit`; the benchmark varies them).

    Raises:
        ValueError: ``min_digits`` is not a whole number ≥ 1, ``derivations`` is not ``closed`` or
            ``extended``, ``coincidence`` is not a number in [0, 1], ``pairing`` is unknown, or
            ``named_factor`` is not a number ≥ 0, or ``named_cap`` is not a number in [0, 1].
    """
    _require_settings(derivations, coincidence, pairing)
    if isinstance(named_factor, bool) or not isinstance(named_factor, int | float) or not named_factor >= 0:
        raise ValueError(f"named_factor={named_factor!r} is not a valid value: it must be a number ≥ 0")
    if isinstance(named_cap, bool) or not isinstance(named_cap, int | float) or not 0 <= named_cap <= 1:
        raise ValueError(f"named_cap={named_cap!r} is not a valid value: it must be a number in [0, 1]")
    figures, figures_cut = read_figures(answer, min_digits)
    if not figures:
        return FiguresFinding(0, (), (), (), False)
    results = tuple(tool_results)
    basis = figure_basis(results, structure=derivations == "extended")
    supplied_numbers = {number for text in supplied_texts for number in numbers_in_text(text)}
    sentences = AnswerSentences(answer)
    carried: list[str] = []
    computed: list[ComputedFigure] = []
    left: list[Figure] = []
    for figure in figures:
        number = float(figure.value)
        if number in supplied_numbers or basis.carries(number):
            carried.append(figure.written)
            continue
        derivation = explain_figure(figure.value, basis)
        if derivation is None and derivations == "extended":  # two conversions of a carried number
            if figure.unit == "%":
                derivation = percent_of_fraction(figure.value, basis)
            if derivation is None and "decrease" in sentences.own(figure.at, len(figure.written)).operations:
                derivation = magnitude_of_negative(figure.value, basis)  # its sentence names a fall
        if derivation is None:
            left.append(figure)
        else:
            computed.append(
                ComputedFigure(figure.written, figure.value, derivation.derivation, derivation.source)
            )
    inferred: list[InferredFigure] = []
    skipped: str | None = None
    if left and derivations == "extended":
        inferred, skipped = _infer(
            left, basis, (coincidence, named_factor, named_cap), pairing, sentences, results
        )
    explained = {figure.written for figure in inferred}
    unsupported = tuple(figure.written for figure in left if figure.written not in explained)
    return FiguresFinding(
        len(figures),
        tuple(carried),
        tuple(computed),
        unsupported,
        basis.truncated,
        tuple(inferred),
        skipped,
        figures_cut,
    )


def _infer(
    figures: Sequence[Figure],
    basis: FigureBasis,
    bounds: tuple[float, float, float],
    pairing: Pairing,
    sentences: AnswerSentences,
    tool_results: Sequence[ToolResult],
) -> tuple[list[InferredFigure], str | None]:
    """The figures the extended derivations explain below the bound, and why the layer was skipped."""
    if len(figures) > MAX_EXTENDED_FIGURES:
        return [], (
            f"{len(figures)} figures to derive, "
            f"over the {MAX_EXTENDED_FIGURES} the extended derivations weigh"
        )
    extended = ExtendedDerivations(basis, pairing, tool_results)
    if extended.skipped is not None:
        return [], extended.skipped
    inferred = []
    for figure in figures:
        inference = extended.infer(figure, sentences.around(figure.at, len(figure.written)), *bounds)
        if inference is not None and inference.accepted:
            inferred.append(
                InferredFigure(
                    figure.written, figure.value, inference.derivation, inference.source, inference.chance
                )
            )
    return inferred, None


def _require_settings(derivations: str, coincidence: float, pairing: str) -> None:
    if derivations not in DERIVATION_SETS:
        raise ValueError(
            f"derivations={derivations!r} is not a valid value: derivations must be one of closed, extended"
        )
    if (
        isinstance(coincidence, bool)
        or not isinstance(coincidence, int | float)
        or not math.isfinite(coincidence)
        or not 0 <= coincidence <= 1
    ):
        raise ValueError(
            f"coincidence={coincidence!r} is not a valid value: coincidence must be a number in [0, 1]"
        )
    if pairing not in ("structural", "any"):
        raise ValueError(f"pairing={pairing!r} is not a valid value: pairing must be structural or any")


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
