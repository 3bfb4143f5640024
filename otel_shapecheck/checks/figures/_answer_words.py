"""The words of the sentence around a figure: its content words, the years it names and the operations
it names, read the same way for an answer's sentence and a table's labels (:mod:`._focus` matches them).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Final

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]+")
_YEAR = re.compile(r"(?<![0-9])(?:19|20)[0-9]{2}(?![0-9])")
_PERCENT_CHANGE = re.compile(r"(?:percentage|percent|%)\s+(?:change|increase|decrease|growth)", re.I)
""""percentage change" names a change, not a quotient."""
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
_STOP: Final = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "this",
        "that",
        "these",
        "those",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "much",
        "many",
        "its",
        "it",
        "their",
        "there",
        "than",
        "then",
        "into",
        "over",
        "under",
        "between",
        "during",
        "per",
        "each",
        "all",
        "any",
        "both",
        "year",
        "years",
        "fiscal",
        "fy",
        "change",
        "changes",
        "increase",
        "increases",
        "increased",
        "decrease",
        "decreases",
        "decreased",
        "difference",
        "average",
        "mean",
        "total",
        "sum",
        "percentage",
        "percent",
        "proportion",
        "ratio",
        "share",
        "amount",
        "value",
        "values",
        "respectively",
        "did",
        "does",
        "do",
        "has",
        "have",
        "had",
        "grew",
        "grow",
        "growth",
        "rose",
        "fell",
        "declined",
        "decline",
        "compared",
        "compare",
        "net",
        "about",
        "approximately",
        "also",
        "while",
        "when",
        "where",
        "million",
        "billion",
        "thousand",
    ]
)

DIFFERENCE_WORDS: Final = frozenset(
    [
        "change",
        "changes",
        "increase",
        "increased",
        "decrease",
        "decreased",
        "difference",
        "grew",
        "grow",
        "growth",
        "rose",
        "fell",
        "declined",
        "decline",
        "higher",
        "lower",
        "more",
        "less",
    ]
)
DECREASE_WORDS: Final = frozenset(("decrease", "decreased", "decline", "declined", "fell", "lower", "less"))
"""Words naming a fall, which analysts state as a positive size ("decreased by 7.95%")."""
AVERAGE_WORDS: Final = frozenset(("average", "mean", "averaged"))
SUM_WORDS: Final = frozenset(("total", "sum", "combined", "altogether", "together", "aggregate"))
QUOTIENT_WORDS: Final = frozenset(
    [
        "proportion",
        "ratio",
        "share",
        "portion",
        "percentage",
        "percent",
        "fraction",
        "times",
        "multiple",
        "over",
        "out",
    ]
)


PRODUCT_WORDS: Final = frozenset(("times", "multiplied", "multiply", "product"))
"""Words naming a product; "times" names a quotient too ("how many times")."""


def _stem(word: str) -> str:
    word = word.lower().replace("’", "'").removesuffix("'s")
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(text: str) -> set[str]:
    """The text's words that can name a label: lower case, plural ``s`` dropped, common words left out."""
    return {_stem(word) for word in _WORD.findall(text) if word.lower() not in _STOP and len(word) > 2}


def years_in(text: str) -> set[int]:
    """The whole years 1900–2099 a text names."""
    return {int(year) for year in _YEAR.findall(text)}


@dataclass(frozen=True)
class AnswerWords:
    """What the sentence around one figure says it is: its words, years and operation words."""

    words: frozenset[str]
    years: frozenset[int]
    operations: frozenset[str]
    """``difference``, ``average``, ``sum``, ``quotient``, ``product``: the families the sentence names
    (none: all);
    ``decrease`` beside ``difference`` when it names a fall."""
    source: tuple[str, int, int] | None = field(default=None, repr=False)
    """The answer and the span of it read (for :attr:`phrase`)."""
    context: tuple[AnswerWords, ...] = ()
    """The sentence read with the one before it, then the two before it…, up to
    :data:`MAX_CONTEXT_SENTENCES`: asked in turn when the sentence alone names no cells ("and in 2012?
    so what was the difference?" names its row two sentences back). Each keeps the sentence's own
    operation words: they say what the figure is."""

    @cached_property
    def phrase(self) -> str:
        """The sentence as :func:`phrase_text` writes it, to find a row label it quotes whole; written on
        first use (most reads never quote one)."""
        if self.source is None:
            return ""
        answer, start, end = self.source
        return phrase_text(answer[start:end])


MAX_CONTEXT_SENTENCES: Final = 6
"""Sentences before the figure's own that its context reaches back to."""


class AnswerSentences:
    """One answer cut into sentences once, so that reading the sentence around each of its figures costs
    that sentence, not the whole answer (a long answer writes many figures)."""

    def __init__(self, answer: str) -> None:
        self._answer = answer
        breaks = [match.span() for match in _SENTENCE_END.finditer(answer)]
        self._break_starts = [start for start, _ in breaks]
        self._break_ends = [end for _, end in breaks]
        self._own: dict[tuple[int, int], AnswerWords] = {}
        """Each sentence read alone, by its span: both passes over the figures ask for it (at most one per
        distinct figure)."""
        self._around: tuple[tuple[int, int], AnswerWords] | None = None
        """The last sentence read with its context: figures come in order, and several share one
        sentence, which may follow a long one."""
        self._pieces: dict[int, tuple[frozenset[str], frozenset[int], bool]] = {}
        """The words, years and change words of each sentence read as context, by its number."""
        self._across: list[tuple[int, int]] | None = None
        """The spans of the answer's "percentage change"s that run across a sentence break."""

    def own(self, at: int, length: int) -> AnswerWords:
        """The words of the sentence written over ``answer[at:at + length]`` (of the whole answer if
        ``at`` is negative), without the sentences before it."""
        return self._words(*self._sentence(at, length)[:2])

    def around(self, at: int, length: int) -> AnswerWords:
        """:meth:`own`, with the sentences before it as its :attr:`~AnswerWords.context`."""
        start, end, before = self._sentence(at, length)
        own = self._words(start, end)
        if before == 0:
            return own
        if self._around is None or self._around[0] != (start, end):
            # A window's words, years and change words are those of its sentences together: they are
            # parted by spaces, which no word or year reads across, and a "percentage change" written
            # across a break is looked for apart. So each sentence is read once, not once per window it
            # falls in; a window's phrase is written only if a label is looked for in it.
            words_in, change = own.words, "difference" in own.operations
            years_in_ = frozenset(years_in(self._answer[start:end]))
            if before < len(self._break_starts) and end == self._break_starts[before]:
                self._pieces[before] = (words_in, years_in_, change)  # a later sentence's context
            context = []
            for back in range(1, min(before, MAX_CONTEXT_SENTENCES) + 1):
                sentence = before - back
                if sentence not in self._pieces:
                    piece = (self._start_of(sentence), self._break_starts[sentence])
                    self._pieces[sentence] = self._parts(*piece)
                piece_words, piece_years, piece_change = self._pieces[sentence]
                words_in, years_in_ = words_in | piece_words, years_in_ | piece_years
                window = self._start_of(sentence)
                change = change or piece_change or self._change_across(window, end)
                years = _year_range(set(years_in_), change)
                source = (self._answer, window, end)
                context.append(AnswerWords(words_in, frozenset(years), own.operations, source))
            words = AnswerWords(own.words, own.years, own.operations, own.source, tuple(context))
            self._around = ((start, end), words)
            # Only the sentences a later figure's windows can still reach are kept.
            for sentence in [key for key in self._pieces if key < before - MAX_CONTEXT_SENTENCES]:
                del self._pieces[sentence]
        return self._around[1]

    def _parts(self, start: int, end: int) -> tuple[frozenset[str], frozenset[int], bool]:
        text = self._answer[start:end]
        return frozenset(content_words(text)), frozenset(years_in(text)), _names_change(text)

    def _change_across(self, start: int, end: int) -> bool:
        """Whether a "percentage change" runs across a sentence break within ``answer[start:end]``."""
        if self._across is None:
            self._across = []
            for match in _PERCENT_CHANGE.finditer(self._answer):
                at = bisect.bisect_left(self._break_starts, match.start())
                if at < len(self._break_starts) and self._break_starts[at] < match.end():
                    self._across.append(match.span())
        at = bisect.bisect_left(self._across, (start, -1))
        return at < len(self._across) and self._across[at][1] <= end

    def _start_of(self, sentence: int) -> int:
        """Where the answer's ``sentence``-th sentence (from 0) starts."""
        return self._break_ends[sentence - 1] if sentence else 0

    def _sentence(self, at: int, length: int) -> tuple[int, int, int]:
        """Start and end of the sentence over the span, and how many sentence breaks come before it.

        A break inside the span does not end the sentence."""
        if at < 0:
            return 0, len(self._answer), 0
        before = bisect.bisect_right(self._break_ends, at)
        after = bisect.bisect_left(self._break_starts, at + length)
        start = self._start_of(before)
        end = self._break_starts[after] if after < len(self._break_starts) else len(self._answer)
        return start, end, before

    def _words(self, start: int, end: int) -> AnswerWords:
        words = self._own.get((start, end))
        if words is None:
            words = self._own[start, end] = _sentence_words(self._answer, start, end)
        return words


def answer_words(answer: str, written: str) -> AnswerWords:
    """The words of the sentence of ``answer`` in which ``written`` first appears (the whole answer if
    it does not), with the sentences before it as its :attr:`~AnswerWords.context`."""
    return AnswerSentences(answer).around(answer.find(written), len(written))


def _sentence_words(answer: str, start: int, end: int) -> AnswerWords:
    sentence = answer[start:end]
    lowered = _operation_words(sentence)
    operations = set()
    if {word.lower() for word in _WORD.findall(sentence)} & DECREASE_WORDS:
        operations.add("decrease")
    for name, family in (
        ("difference", DIFFERENCE_WORDS),
        ("average", AVERAGE_WORDS),
        ("sum", SUM_WORDS),
        ("quotient", QUOTIENT_WORDS),
        ("product", PRODUCT_WORDS),
    ):
        if lowered & family:
            operations.add(name)
    years = _year_range(years_in(sentence), "difference" in operations)
    return AnswerWords(
        frozenset(content_words(sentence)), frozenset(years), frozenset(operations), (answer, start, end)
    )


def _names_change(sentence: str) -> bool:
    """Whether :func:`_sentence_words` finds a difference word in ``sentence``."""
    return bool(_operation_words(sentence) & DIFFERENCE_WORDS)


def _operation_words(sentence: str) -> set[str]:
    """The sentence's words, lower case, read for the operations they name ("percentage change" a change)."""
    return {word.lower() for word in _WORD.findall(_PERCENT_CHANGE.sub(" change ", sentence))}


def _year_range(years: set[int], change: bool) -> set[int]:
    if len(years) > 1 and max(years) - min(years) <= 10:  # "from 2017 to 2019" covers 2018 too
        return set(range(min(years), max(years) + 1))
    if len(years) == 1 and change:
        years.add(min(years) - 1)  # "the growth in 2010" is a change from 2009
    return years


_NOT_WORD = re.compile(r"[^a-z0-9]+")
_FOOTNOTE = re.compile(r"\(\s*[0-9a-z]\s*\)$")


def phrase_text(text: str) -> str:
    """Lower case, a trailing footnote mark (``(1)``) dropped, every run of other characters one space."""
    return " " + _NOT_WORD.sub(" ", _FOOTNOTE.sub("", text.strip().lower())).strip() + " "
