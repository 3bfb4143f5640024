"""A lexical score for tool choice: BM25 of the choice context against one menu's candidate texts.

Sentence embeddings blur exact words: ``get_current_weather`` and ``get_forecast`` sit close together,
while the user's "current" names one of them. BM25 rewards the words the context shares with a tool's
text, weighted by how rare each word is *on this menu* (the idf is computed over the menu's own
candidate texts, so a word every tool carries counts for almost nothing). The scores are divided by the
menu's best, so they lie in [0, 1] and fuse with cosines at a fixed weight. The cost is a pass over the
menu's words; the lexicons of recent menus and the terms of recent texts are memoised, each within a
bound on their estimated bytes.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck._bounded_lru import BoundedLRU
from otel_shapecheck.embedding._tool_index import tokenised_name
from otel_shapecheck.readers._parse_cache import ParseCache

K1: Final = 1.2
"""BM25 term-frequency saturation (the usual value)."""
B: Final = 0.75
"""BM25 length normalisation (the usual value)."""

MAX_LEXICONS: Final = 256
MAX_LEXICON_BYTES: Final = 32 * 1024 * 1024
"""Estimated bytes of the recent menus' lexicons kept at most."""
MAX_CACHED_TERMS: Final = 8192
MAX_CACHED_TERM_BYTES: Final = 16 * 1024 * 1024
_TERM_BYTES: Final = 800
_POSTING_BYTES: Final = 85

_WORD = re.compile(r"\w+")
_SLOT_LABEL = re.compile(r"(?:\A|\n\n)(?:user|assistant): ")
"""The labels :func:`choice_context` puts before its slots: they are in every context, so not evidence."""
_NOT_PLURAL = ("ss", "us", "is")
_STOPWORD_TEXT = (
    "a an and any are as at be by can do for from get has have how i if in into is it its me my "
    "of on or our please set that the their them then there these this to use used using want was "
    "we what when where which will with would you your"
)
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def lexical_terms(text: str) -> tuple[str, ...]:
    """The words BM25 compares: camelCase and ``_``/``-`` split, lower case, no stopwords, crude plurals.

    Words of one character and common English function words carry no choice between tools and are
    dropped; a trailing ``s`` is removed from words longer than three letters (``orders`` → ``order``),
    unless the word ends in ``ss``, ``us`` or ``is`` (``address``, ``status``, ``analysis``).
    """
    return _cached_terms(text)


def _terms(text: str) -> tuple[str, ...]:
    words = _WORD.findall(tokenised_name(text).lower())
    return tuple(_stem(word) for word in words if len(word) > 1 and word not in _STOPWORDS)


_cached_terms = ParseCache(_terms, max_entries=MAX_CACHED_TERMS, max_bytes=MAX_CACHED_TERM_BYTES)
"""Terms of recent texts (candidate texts recur whenever a menu's lexicon is built again), bounded by
the estimated bytes of the texts and their terms: a 4 096-character text has about 600 terms."""


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith(_NOT_PLURAL) else word


class MenuLexicon:
    """One menu's BM25 index: each term's postings with its per-document BM25 weight, computed once.

    A term's BM25 contribution to a document depends on the document and the menu only (tf, length,
    idf over the menu), not on the query, so a query's scores are a sum of precomputed posting weights:
    numpy over the postings of the query's terms, nothing per tool.
    """

    def __init__(self, candidates: Sequence[str]) -> None:
        documents = [Counter(lexical_terms(text)) for text in candidates]
        self.size = len(documents)
        lengths = np.asarray([sum(document.values()) for document in documents], dtype=np.float64)
        average = float(lengths.mean()) if self.size and lengths.sum() else 1.0
        holders: dict[str, tuple[list[int], list[int]]] = {}
        for position, document in enumerate(documents):
            for term, tf in document.items():
                postings = holders.setdefault(term, ([], []))
                postings[0].append(position)
                postings[1].append(tf)
        self._postings: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        for term, (positions, tfs) in holders.items():
            where = np.asarray(positions, dtype=np.intp)
            counts = np.asarray(tfs, dtype=np.float64)
            idf = math.log(1.0 + (self.size - len(positions) + 0.5) / (len(positions) + 0.5))
            norm = K1 * (1.0 - B + B * lengths[where] / average)
            self._postings[term] = (where, idf * counts * (K1 + 1.0) / (counts + norm))
        self._posting_lists = {
            term: (where.tolist(), weights.tolist()) for term, (where, weights) in self._postings.items()
        }
        posting_count = sum(len(where) for where, _ in self._postings.values())
        self.nbytes = _TERM_BYTES * len(self._postings) + _POSTING_BYTES * posting_count + 8 * self.size
        """Estimated bytes the lexicon holds: per term its arrays, lists and entries, per posting its
        numbers in both forms."""

    def raw(self, context: str) -> npt.NDArray[np.float64]:
        """BM25 of ``context`` against every candidate (each distinct context word counts once)."""
        raw = np.zeros(self.size, dtype=np.float64)
        for term in _query_terms(context):
            postings = self._postings.get(term)
            if postings is not None:
                raw[postings[0]] += postings[1]
        return raw

    def scores(self, context: str) -> npt.NDArray[np.float64]:
        """:meth:`raw` divided by the best, so in [0, 1] (all 0 when no candidate shares a word)."""
        raw = self.raw(context)
        best = float(raw.max()) if self.size else 0.0
        return raw / best if best > 0 else raw

    def score_list(self, context: str) -> list[float]:
        """:meth:`scores` as Python floats, summed in plain Python (cheaper than numpy on a few tools).

        The same terms are added in the same order, so the numbers equal :meth:`scores`'.
        """
        raw = [0.0] * self.size
        for term in _query_terms(context):
            postings = self._posting_lists.get(term)
            if postings is not None:
                for position, weight in zip(*postings, strict=True):
                    raw[position] += weight
        best = max(raw) if self.size else 0.0
        return [score / best for score in raw] if best > 0 else raw


def _query_terms(context: str) -> dict[str, None]:
    """The context's distinct terms in the order they first occur.

    Floats are summed in this order: a set's order follows the per-process hash seed, and a sum in it
    would differ in its last bits from one process to the next.
    """
    return dict.fromkeys(lexical_terms(_SLOT_LABEL.sub(" ", context)))


class _Lexicons:
    """Recent menus' lexicons, bounded by count and by their estimated bytes (a 300-tool menu's is
    about half a megabyte, so a count alone let 256 of them hold over 100 MB)."""

    def __init__(self, max_entries: int = MAX_LEXICONS, max_bytes: int = MAX_LEXICON_BYTES) -> None:
        self._kept: BoundedLRU[tuple[str, ...], MenuLexicon] = BoundedLRU(max_entries, max_bytes)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def max_bytes(self) -> int:
        """The bound on :attr:`nbytes`."""
        return self._kept.max_bytes

    @property
    def nbytes(self) -> int:
        """Estimated bytes of the kept lexicons (at most ``max_bytes``)."""
        return self._kept.nbytes

    def get(self, candidates: tuple[str, ...]) -> MenuLexicon:
        """The lexicon of ``candidates``, built on first sight (a too-big one is built and not kept)."""
        lexicon = self._kept.get(candidates)
        if lexicon is None:
            lexicon = MenuLexicon(candidates)
            self._kept.put(candidates, lexicon, lexicon.nbytes)
        return lexicon

    def clear(self) -> None:
        """Forget every lexicon."""
        self._kept.clear()


lexicons = _Lexicons()
"""The process's lexicons of recent menus (a menu recurs on every call of an agent)."""


def menu_lexicon(candidates: tuple[str, ...]) -> MenuLexicon:
    """The :class:`MenuLexicon` of ``candidates``, built once per distinct menu while it is recent."""
    return lexicons.get(candidates)


def lexical_scores(context: str, candidates: Sequence[str]) -> list[float]:
    """BM25 of ``context`` against each candidate text, idf over the candidates, divided by the best.

    Each distinct context word counts once. Returns one score per candidate in [0, 1]: 1 for the best
    lexical match, 0 for candidates sharing no word with the context (all 0 when none shares one).
    """
    return [float(score) for score in menu_lexicon(tuple(candidates)).scores(context)]
