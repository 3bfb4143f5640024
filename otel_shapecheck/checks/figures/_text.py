"""Numbers in text: the figures of a final answer, and the numbers a tool's or a user's text states.

A *figure* is a number wearing a unit of measure (``53.2%``, ``6.3 TB``, ``41,200 IOPS``) or a scale
(``$1.23M``, ``4.3 million``, ``5k``) whatever its digit count, or a bare number with at least
``min_digits`` digits. Plain numbers keep the precision
they were written with (``61.0`` stays ``61.0``), which is what the derivation question compares at.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final, Literal

FIGURE_UNITS: Final = (
    "%",
    "percent",
    "kb",
    "mb",
    "gb",
    "tb",
    "pb",
    "kib",
    "mib",
    "gib",
    "tib",
    "pib",
    "iops",
    "mbps",
    "gbps",
    "ms",
    "us",
)
"""Units that make a number a figure whatever its digit count (matched case-insensitively)."""

DEFAULT_MIN_DIGITS: Final = 4
"""Digits a bare number (no unit) needs to be a candidate; shorter ones read as prose (``3 issues``)."""

Shape = Literal["figure", "number"]

MAX_THOUSANDS_GROUPS: Final = 102
"""Thousands groups a number written with separators may have (``1,234,567`` has 2): one with more
(over 300 digits, so at least 10³⁰⁹, past any double) is not read as a number. The bound keeps the
regular expression from holding a backtracking frame per group of a long run (``1,000,000,…``)."""
_GROUPS = rf"(?:,[0-9]{{3}}){{1,{MAX_THOUSANDS_GROUPS}}}(?!,[0-9]{{3}})"
_NUMBER = rf"[-+]?(?:[0-9]{{1,3}}{_GROUPS}|[0-9]+)(?:\.[0-9]+)?"
_WORD_UNITS = sorted((unit for unit in FIGURE_UNITS if unit != "%"), key=len, reverse=True)
_UNIT = rf"%|(?:{'|'.join(_WORD_UNITS)})(?:/s)?(?![a-z0-9])"
SCALE_WORDS: Final = ("thousand", "million", "billion", "trillion", "mn", "bn", "tn", "k")
"""Scales that make a number a figure as a unit does (any case; ``M`` and ``B`` only glued and upper case,
``1.2M``: a spaced or lower-case ``m`` or ``b`` is as often metres, minutes or bytes). The figure's value
is the number as written: the derivations already compare it with carried amounts ÷ 1000ᵏ."""
_FIGURE = rf"(?<![\w.,])(?P<figure>{_NUMBER})\s?(?P<unit>(?i:{_UNIT}))"
_SCALED = (
    rf"(?<![\w.,])(?P<scaled>{_NUMBER})\s?(?P<scale>(?i:{'|'.join(SCALE_WORDS)})|(?<=[0-9])(?:M|B))"
    r"(?![A-Za-z0-9])"
)
# A bare number stands alone: not part of an identifier, date, time, range, ratio or version.
_BARE = rf"(?<![\w.,/:#@+\-])(?P<bare>{_NUMBER})(?![\w/:\-]|[.,][0-9])"
_ANSWER_FIGURE_RE: Final = re.compile(f"{_FIGURE}|{_SCALED}|{_BARE}")
"""A number wearing a unit, else one wearing a scale, else a bare number, in one left-to-right pass.

No match of one kind can start inside a match of another (each starts where no number goes on), so
trying them in that order at each place finds what reading units first, then scales, then bare numbers
over the whole answer would find, without holding every match of the answer at once."""
MAX_ANSWER_FIGURES: Final = 10_000
"""Distinct figures read from one answer: past them the rest of the answer is not read (and the finding
says so)."""
_MINUS: Final = str.maketrans({"\u2212": "-"})
"""The typographic minus sign (U+2212) read as a minus: ``−5.2%`` is −5.2, not 5.2."""
_PLAIN_NUMBER_RE: Final = re.compile(r"[-+]?([0-9]+)(?:\.([0-9]+))?")
_THOUSANDS_RE: Final = re.compile(rf"-?[0-9]{{1,3}}{_GROUPS}(?:\.[0-9]+)?")
_TOKEN_PIECES: Final = 64
_TOKEN_RE: Final = re.compile(rf"(?:[A-Za-z0-9:_\-/.%+@#$]+|(?<=[0-9]),(?=[0-9])){{1,{_TOKEN_PIECES}}}")
"""Up to 64 pieces of a token: runs of its characters and the commas between digits that join them. A
token ends at the first comma that is not between digits (so one match never reads past its token: a
long comma-joined line costs one pass, not one pass per number in it); a token of more pieces is read
64 at a time, so the expression never holds a backtracking frame per comma of a long run."""
_NUMBER_TEXT_RE: Final = re.compile(rf"{_NUMBER}(?:\s?(?:{_UNIT}))?", re.IGNORECASE)
_FIGURE_TOKEN_RE: Final = re.compile(rf"(?P<number>{_NUMBER})(?:{_UNIT})", re.IGNORECASE)
_LEADING_STRIP: Final = "$#@+'\"`([{<"
_TRAILING_STRIP: Final = ".,;:!?%'\"`)]}>"
# Where a token that normalises to a number can start: a superset test that skips identifiers cheaply.
_NUMBER_TOKEN_START_RE: Final = re.compile(r"(?<![A-Za-z0-9:_\-/.%@#$+])[$#@+]*-?[0-9]")


@dataclass(frozen=True)
class Figure:
    """One candidate figure of an answer."""

    written: str
    """The figure exactly as the answer wrote it, unit included (``1,526.3 TB``)."""
    value: str
    """The number without thousands separators or a ``+`` sign, trailing zeros kept (``1526.3``)."""
    shape: Shape
    """``figure`` for a number wearing a unit, ``number`` for a long bare number."""
    unit: str = ""
    """The unit it wears, lower case (``%``, ``tb``, ``gb/s``); empty for a bare number."""
    at: int = field(default=-1, compare=False)
    """Where in the answer it is first written (-1: not known)."""


def figures_in(answer: str, min_digits: int = DEFAULT_MIN_DIGITS) -> tuple[Figure, ...]:
    """The candidate figures of ``answer`` in order of appearance, one per distinct value: at most
    :data:`MAX_ANSWER_FIGURES` of them (:func:`read_figures` says whether the answer held more).

    Raises:
        ValueError: ``min_digits`` is not a whole number ≥ 1.
    """
    return read_figures(answer, min_digits)[0]


def read_figures(answer: str, min_digits: int = DEFAULT_MIN_DIGITS) -> tuple[tuple[Figure, ...], bool]:
    """The candidate figures of ``answer`` (as :func:`figures_in`), and whether the answer held more
    than :data:`MAX_ANSWER_FIGURES` distinct ones, so that the rest of it was not read.

    Each figure is the first place its value is written (its ``at``); the answer's matches are read one
    at a time, and only a value not seen before makes a :class:`Figure`, so memory follows the distinct
    figures, not the figures written.

    Raises:
        ValueError: ``min_digits`` is not a whole number ≥ 1.
    """
    _require_min_digits(min_digits)
    written, answer = answer, answer.translate(_MINUS)  # one character for one: positions hold
    figures: dict[str, Figure] = {}
    for match in _ANSWER_FIGURE_RE.finditer(answer):
        start, end = match.span()
        bare = match["bare"]
        shape: Shape = "figure" if bare is None else "number"
        number = bare or match["figure"] or match["scaled"]
        unit = "" if bare is not None else match["unit"] or match["scale"]
        value = _plain_value(number)
        if value in figures:
            continue
        if bare is not None and (_digit_count(bare) < min_digits or _is_calendar_year(answer, start, end)):
            continue
        if len(figures) == MAX_ANSWER_FIGURES:
            return tuple(figures.values()), True
        figures[value] = Figure(written[start:end], value, shape, unit.lower(), start)
    return tuple(figures.values()), False


def _digit_count(number: str) -> int:
    """Digits of a number as written (``-1,234.5`` has 5): the rest are signs, separators and a point."""
    return len(number) - number.count(",") - number.count(".") - number.count("-") - number.count("+")


_YEAR_RE: Final = re.compile(r"(?:19|20)[0-9]{2}")
_MONTH = (
    r"jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_DATED_BEFORE_RE: Final = re.compile(
    # a month (with its day: March 15, 2024), a period (Q3 2024, FY 2024, fiscal 2024, the year 2024)
    rf"\b(?:(?:{_MONTH})\.?(?:\s+[0-9]{{1,2}}(?:st|nd|rd|th)?)?,?|q[1-4]|h[12]|fy|cy|fiscal(?:\s+year)?"
    r"|(?:calendar|financial|fiscal|the)\s+year|year)\s*$",
    re.IGNORECASE,
)
_WHEN_BEFORE_RE: Final = re.compile(
    r"\b(?:in|since|until|till|by|during|from|through|thru|before|after|between|as\s+of|circa|early|late"
    r"|mid|starting|ending)\s+$",
    re.IGNORECASE,
)
_JOIN = r"and|to|through|thru|or|vs\.?|versus|&|–|—"
"""What joins two years of one range or list (``2022 to 2024``, ``2022 and 2023``)."""
_JOINED_BEFORE_RE: Final = re.compile(rf"(?<![0-9.,])((?:19|20)[0-9]{{2}})\s*(?:{_JOIN})\s*$", re.IGNORECASE)
_ENDS_A_CLAUSE_RE: Final = re.compile(rf"\s*(?:$|[,.;:!?)\]]|'s\b|(?:{_JOIN})\s)", re.IGNORECASE)
_LOOK_BACK: Final = 40
"""Characters before a year-like number read for what dates it (``Wednesday, September 25,``)."""


def _is_calendar_year(text: str, start: int, end: int) -> bool:
    """Whether the bare number at ``text[start:end]`` is a year of the calendar, which dates something
    rather than states a quantity: four digits from 1900 to 2099 after a month (``March 15, 2024``) or a
    period (``Q3 2024``, ``FY 2024``, ``fiscal 2024``), or after a word that places it in time (``in``,
    ``since``, ``as of``) where a clause or a range goes on (``In 2024, ...``, ``from 2022 to``), or
    joined to such a year (``2022 and 2023``, ``from 2022 to 2024``). ``in 2048 blocks``, ``2024
    units`` and ``the 2024 budget`` stay figures: nothing says they are dates."""
    if not _YEAR_RE.fullmatch(text, start, end):
        return False
    before = text[max(0, start - _LOOK_BACK) : start]
    if _DATED_BEFORE_RE.search(before):
        return True
    joined = _JOINED_BEFORE_RE.search(before)
    if joined is not None:
        first = max(0, start - _LOOK_BACK) + joined.start(1)
        return _is_calendar_year(text, first, first + 4)
    return _WHEN_BEFORE_RE.search(before) is not None and _ENDS_A_CLAUSE_RE.match(text, end) is not None


def normalize_token(token: str) -> str:
    """A token as the basis compares it: lowercased, wrapping punctuation and thousands separators gone.

    This is the reference's ``normalizeToken`` without its last step (re-printing plain numbers through
    a float), so ``61.0`` stays ``61.0`` and keeps its written precision.
    """
    text = token.translate(_MINUS).lower().strip().lstrip(_LEADING_STRIP).rstrip(_TRAILING_STRIP)
    if "," in text and _THOUSANDS_RE.fullmatch(text):
        text = text.replace(",", "")
    return text


def _plain_value(number: str) -> str:
    """A number as a value: no separators, no ``+``, no leading zeros (``01,000`` → ``1000``), so that
    every way of writing one value at one precision is one figure, read once."""
    plain = number.replace(",", "").lstrip("+")
    sign = "-" if plain.startswith("-") else ""
    digits = plain[len(sign) :].lstrip("0")
    return sign + (digits if digits[:1].isdigit() else "0" + digits)


def _require_min_digits(min_digits: int) -> None:
    if isinstance(min_digits, bool) or not isinstance(min_digits, int) or min_digits < 1:
        raise ValueError(
            f"min_digits={min_digits!r} is not a valid value: min_digits must be a whole number ≥ 1"
        )


def written_decimals(value: str) -> int | None:
    """The digits after the point of a plain number as written (``61.0`` → 1); ``None`` for other text."""
    match = _PLAIN_NUMBER_RE.fullmatch(value)
    if match is None:
        return None
    return len(match.group(2) or "")


def is_number_text(text: str) -> bool:
    """Whether ``text`` is one number, with or without a unit (``53.2%``, ``6.3 TB``, ``12,500``).

    A flagged identifier (``CLUSTER-A01``) is not: the conclusion line names numbers only.
    """
    return _NUMBER_TEXT_RE.fullmatch(text.strip()) is not None


_LONE_NUMBER_RE: Final = re.compile(r"[\s$€£¥(+\-]*[0-9][0-9,]*(?:\.[0-9]+)?[\s)%]*")


def is_lone_number(text: str) -> bool:
    """Whether ``text`` is one number with only currency, sign, parenthesis or ``%`` around it
    (``$ 1,997.8``, ``(9,275)``, ``12.5%``): a table cell of its own."""
    return _LONE_NUMBER_RE.fullmatch(text) is not None


def may_state_a_number(text: str) -> bool:
    """Whether some token of ``text`` can start a number: a cheap superset test that skips identifiers."""
    return _NUMBER_TOKEN_START_RE.search(text) is not None


def plain_number(token: str) -> float | None:
    """The finite value of a normalised token that is a plain number (``-12.5``), else ``None``."""
    if not _PLAIN_NUMBER_RE.fullmatch(token):
        return None
    number = float(token)
    return number if math.isfinite(number) else None


def numbers_in_text(text: str) -> Iterator[float]:
    """The numbers a text states: its numeric tokens, and the number of each figure token (``24.8TB``).

    Tokens are runs of ``[A-Za-z0-9:_-/.,%+@#$]``, cut at commas that are not between digits. Only
    tokens that can start a number are visited, so a long text costs one regex scan, not a Python loop
    over every word.
    """
    text = text.translate(_MINUS)
    for start in _NUMBER_TOKEN_START_RE.finditer(text):
        position = start.start()
        if (
            position >= 2
            and text[position - 1] == ","
            and _is_digit(text[position - 2])
            and _is_digit(text[position])
        ):
            continue  # inside a number such as 1,234
        normalized = normalize_token(text[position : _token_end(text, position)])
        number = plain_number(normalized)
        if number is None:
            figure = _FIGURE_TOKEN_RE.fullmatch(normalized)
            number = plain_number(_plain_value(figure.group("number"))) if figure else None
        if number is not None:
            yield number


def _token_end(text: str, start: int) -> int:
    """Where the token starting at ``start`` ends, read :data:`_TOKEN_PIECES` pieces at a time."""
    end = start
    while True:
        token = _TOKEN_RE.match(text, end)
        if token is None:
            return end
        end = token.end()
        if text[end - 1] != "," and not text.startswith(",", end):  # at a character no token holds
            return end


def _is_digit(char: str) -> bool:
    return "0" <= char <= "9"
