"""The coincidence bound: the chance that a random number like the figure would match some candidate.

Every derivation added to the closed set is a window an invented number can fall through. Before an
extended derivation is accepted, the check asks how likely that fall is for *this* figure against
*this* candidate set:

- A figure ``f`` written with ``d`` decimals matches a candidate ``c`` when ``|c − f| ≤ ½·10^−d``.
- A random number "of the figure's magnitude" is a value of the figure's sign in the band
  ``[|f| / B, |f| · B]`` (:data:`BAND_FACTOR` B = 2), "written at its precision" is one of the
  ``M = band width / step`` values the figure's precision allows there.
- Each distinct candidate value in the band matches at most one of those ``M`` values, so with ``n``
  candidates in the band the random number matches one with probability at most ``n / M``: that is
  the *chance*. Candidates are counted over the whole candidate set the figure is asked against (every
  extended operation of its kind, every closed value), never per operation: a per-operation estimate
  is smaller, and lets mutated figures through.
- **Round figures.** Trailing zeros are not precision. ``50.00%`` or ``2000`` is a round number, and
  round numbers are chosen among fewer values; quotients of table cells land on them more often than a
  uniform model says (``a = b / 2`` is 50 %). So the step is the figure's *significant* step:
  ``10^−d`` with the trailing zeros of the decimals dropped, and for a whole number ``10^z`` where
  ``z`` counts its trailing zeros (``2000`` → step 1000). Matching still uses the written precision.
- A zero is never inferred: equal cells make it the likeliest coincidence of all (chance 1).

The figure is accepted only when the chance is below ``p`` (:data:`DEFAULT_COINCIDENCE`, 5 %), or, for
the cells the answer's own words name, below min(0.5, 10 · p) (:data:`~._extended.NAMED_CAP`,
:data:`~._extended.NAMED_FACTOR`); when those
words name cells the figure is none of, the whole table is asked below p / 4
(:data:`~._extended.MISSED_FOCUS_FACTOR`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Final

BAND_FACTOR: Final = 2.0
"""A random number "of the figure's magnitude" lies within this factor of it, either way."""

DEFAULT_COINCIDENCE: Final = 0.05
"""The default ``p``: an extended derivation is accepted only when its chance is below it."""

_PLAIN_RE: Final = re.compile(r"[-+]?([0-9]+)(?:\.([0-9]+))?")


def significant_step(value: str) -> float | None:
    """The spacing of the values a figure's precision allows, trailing zeros dropped (``None``: no number).

    ``14.16`` → 0.01, ``14.10`` → 0.1, ``316`` → 1, ``2000`` → 1000, ``0`` → ``None`` (no magnitude).
    """
    match = _PLAIN_RE.fullmatch(value)
    if match is None:
        return None
    whole, decimals = match.group(1), (match.group(2) or "").rstrip("0")
    if decimals:
        return 10.0 ** -len(decimals)
    digits = whole.lstrip("0")
    if not digits:
        return None
    return 10.0 ** (len(digits) - len(digits.rstrip("0")))


def magnitude_band(target: float) -> tuple[float, float]:
    """The values of ``target``'s sign within :data:`BAND_FACTOR` of it: ``[|f| / B, |f| · B]``."""
    low, high = abs(target) / BAND_FACTOR, abs(target) * BAND_FACTOR
    return (low, high) if target > 0 else (-high, -low)


def coincidence_chance(value: str, candidates_within: Callable[[float, float], int]) -> float:
    """The chance that a random number like ``value`` matches a candidate: ``min(1, n / M)``.

    ``candidates_within(low, high)`` counts the distinct candidate values in ``[low, high]``. A value
    that is zero, not a plain number, or not finite gets 1 (it is never inferred).
    """
    step = significant_step(value)
    target = float(value) if step is not None else math.nan
    if step is None or not math.isfinite(target) or target == 0:
        return 1.0
    low, high = magnitude_band(target)
    allowed = (high - low) / step
    if not math.isfinite(allowed) or allowed <= 0:
        return 1.0
    return min(1.0, candidates_within(low, high) / allowed)


def format_chance(chance: float) -> str:
    """``0.004`` → ``0.4%``; below 0.001 % → ``<0.001%``."""
    percent = 100 * chance
    return "<0.001%" if percent < 0.001 else f"{percent:.2g}%"
