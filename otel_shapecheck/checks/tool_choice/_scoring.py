"""The two scorings of a tool choice: the seed's rule, and the calibrated default.

``seed`` is agentfootprint's rule exactly: each tool's :func:`confusability_text` cosine against the
choice context, ``margin = best chosen − best other``, narrow under 0.05.

``calibrated`` keeps that frame and changes what is compared, measured on planted wrong choices
(``benchmarks/bench_tool_choice_detection.py``; ``docs/how-it-decides.md`` has the table):

- **Text.** Each tool is embedded twice, as its seed text and as :func:`parameter_text` (the seed
  text plus the schema's parameter names and descriptions); its cosine is the mean of the two. Without
  a captured schema both texts are the same, so the cosine is the seed's.
- **Lexical fusion.** ``score = (1 − w) · cosine + w · lexical`` with ``w`` =
  :data:`CALIBRATED_LEXICAL_WEIGHT` and ``lexical`` the BM25 of the context against the menu's
  parameter texts, idf over the menu, divided by the menu's best (:class:`~._lexical.MenuLexicon`).
- **Several chosen tools.** The seed measures only the *best* chosen tool, so a wrong tool chosen next to
  a right one goes unseen. When a call chose two or more tools and left some unchosen, each chosen tool
  must lead every unchosen one in the whole context or in one of its clauses (:func:`context_segments`):
  its evidence is its best lead over those views, and ``margin`` is the weakest chosen tool's evidence.
- **A relative margin.** The threshold, :data:`CALIBRATED_MARGIN_THRESHOLD`, applies to ``margin``
  divided by the top score (:func:`~._margin.relative_margin`), chosen on BFCL live and reported on
  BFCL by the rule of ``docs/tool-choice.md`` ("Choosing the default across corpora").

Both return a :class:`MarginResult` whose ``cosine_margin`` is the seed rule's margin, so the two can be
compared on every call.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon, menu_lexicon
from otel_shapecheck.checks.tool_choice._margin import (
    DEFAULT_MARGIN_THRESHOLD,
    DEFAULT_MAX_SLOT_CHARS,
    MarginResult,
    check_wiring,
    chosen_mask,
    cosine_scores,
    margin_of_scores,
    relative_margin,
)

SCORING_CALIBRATED: Final = "calibrated"
SCORING_SEED: Final = "seed"
SCORINGS: Final = (SCORING_CALIBRATED, SCORING_SEED)
"""Values of ``OTEL_SHAPECHECK_TOOL_CHOICE_SCORING`` and ``shapecheck.tool_choice.scoring``."""

SEED_MARGIN_THRESHOLD: Final = DEFAULT_MARGIN_THRESHOLD
"""The seed's threshold, 0.05."""
CALIBRATED_MARGIN_THRESHOLD: Final = 0.03125
"""The calibrated call is narrow when its **relative** margin (margin ÷ top score) is below this: a
chosen tool that leads the best other tool by less than 3.125 % of the best tool's score. Picked on BFCL
live by the rule written in ``docs/tool-choice.md`` (the smallest threshold that detects planted nearest
rivals within half a point of the seed rule, the normalisation with the fewest false alarms there) and
reported on BFCL, which it was not chosen on (``benchmarks/bench_tool_choice_transfer.py``). On two
corpora nobody tuned on (ToolAlpaca, BFCL multi-turn) it flags a quarter to a third of correct choices
and misses the goals (``benchmarks/bench_tool_choice_fresh.py``); no lever tried there beat it. On a
third, Seal-Tools, it meets them (``benchmarks/bench_tool_choice_shared.py``); on a fourth,
StableToolBench, measured last, it misses them further, and neither menu-centred vectors nor a heavier
lexical weight beat it on the five corpora before (``benchmarks/bench_tool_choice_centred.py``)."""
CALIBRATED_LEXICAL_WEIGHT: Final = 0.1
"""The weight of the lexical score in the fusion, chosen with the threshold."""

MAX_SEGMENTS: Final = 8
"""Clauses of a context scored per chosen tool, at most (each is one more embedding)."""
_CLAUSE_BREAK = re.compile(
    r"(?<=[.?!;])\s+|\n+|,?\s+(?:and also|and then|as well as|also|then|and)\s+", re.IGNORECASE
)
"""Where a context splits into clauses. Inside a run of *k* spaces the last alternative is tried at
each space and reads to the run's end, ``k²`` in all; a text with a long run is split by
:func:`_clause_breaks` instead, which finds the same breaks reading each run once."""
_LONG_SPACE_RUN: Final = 32
"""Spaces in a row past which a text is split by :func:`_clause_breaks` rather than the regex."""
_HAS_LONG_SPACE_RUN = re.compile(rf"\s{{{_LONG_SPACE_RUN + 1}}}")
_SPACE_RUN = re.compile(r"\s+")
_NEWLINE_RUN = re.compile(r"\n+")
_CONJUNCTION = re.compile(r"(?:and also|and then|as well as|also|then|and)\s+", re.IGNORECASE)
_SENTENCE_END = frozenset(".?!;")


def default_threshold(scoring: str) -> float:
    """The narrow threshold a scoring uses unless one is set."""
    return CALIBRATED_MARGIN_THRESHOLD if scoring == SCORING_CALIBRATED else SEED_MARGIN_THRESHOLD


def context_segments(text: str | None, *, limit: int = MAX_SEGMENTS) -> tuple[str, ...]:
    """The clauses of ``text`` that a chosen tool may answer: split at sentence ends and "and/also/then".

    Clauses of fewer than two words are dropped; a text that does not split gives ``()`` (the whole
    context is scored anyway). At most ``limit`` clauses, first ones first.
    """
    parts = [part.strip(" ,") for part in clause_split(text or "")]
    clauses = list(dict.fromkeys(part for part in parts if len(part.split()) >= 2))
    return tuple(clauses[:limit]) if len(clauses) > 1 else ()


def clause_split(text: str) -> list[str]:
    """``text`` split at :data:`_CLAUSE_BREAK`, as ``_CLAUSE_BREAK.split(text)``, in time linear in it."""
    if not _HAS_LONG_SPACE_RUN.search(text):
        return _CLAUSE_BREAK.split(text)
    parts = []
    end = 0
    for start, stop in _clause_breaks(text):
        parts.append(text[end:start])
        end = stop
    parts.append(text[end:])
    return parts


def _clause_breaks(text: str) -> Iterator[tuple[int, int]]:
    """The spans :data:`_CLAUSE_BREAK` matches in ``text``, left to right, each run of spaces read once.

    A break starts only at a comma before a run of spaces or inside such a run. Its last alternative
    there needs a conjunction right after the run (a conjunction starts with a letter, so the spaces
    before it are the run's end), the same wherever in the run it is tried: it is looked up once per
    run. The regex tries, at each position: a sentence end before the run's first space, newlines, then
    that conjunction; where none matches it moves on, here straight to the run's next newline.
    """
    end = 0  # where the last break ended
    for run in _SPACE_RUN.finditer(text):
        start, stop = run.span()
        if start < end:  # a run inside the last break (a conjunction's own spaces, or after it)
            continue
        conjunction = _CONJUNCTION.match(text, stop)
        follows = conjunction.end() if conjunction is not None else None
        before = text[start - 1] if start > 0 else ""
        if before == "," and follows is not None and start - 1 >= end:
            yield start - 1, follows
            end = follows
            continue
        if before in _SENTENCE_END:
            yield start, stop
            end = stop
            continue
        at = start
        while at < stop:
            newlines = _NEWLINE_RUN.match(text, at)
            if newlines is not None:
                yield at, newlines.end()
                end = at = newlines.end()
                continue
            if follows is not None:
                yield at, follows
                end = follows
                break
            at = text.find("\n", at, stop)
            if at < 0:
                break


def segment_texts(
    user_text: str, assistant_text: str | None = None, *, max_slot_chars: int = DEFAULT_MAX_SLOT_CHARS
) -> tuple[str, ...]:
    """The clause views of a choice context, each labelled like its slot (``"user: <clause>"``).

    The slots are cut as :func:`choice_context` cuts them; at most :data:`MAX_SEGMENTS` in all.
    """
    views = [f"user: {clause}" for clause in context_segments(user_text[:max_slot_chars])]
    latest = (assistant_text or "").strip()
    if latest:
        views += [f"assistant: {clause}" for clause in context_segments(latest[-max_slot_chars:])]
    return tuple(views[:MAX_SEGMENTS])


def needs_segments(offered: int, chosen: int) -> bool:
    """Whether the calibrated scoring scores each chosen tool: several chosen, at least one not."""
    return chosen >= 2 and offered > chosen


def calibrated_margin(
    context_text: str,
    context: npt.ArrayLike,
    names: Sequence[str],
    seed_vectors: npt.ArrayLike,
    parameter_vectors: npt.ArrayLike,
    parameter_texts: Sequence[str],
    chosen: Sequence[str],
    *,
    threshold: float = CALIBRATED_MARGIN_THRESHOLD,
    lexical_weight: float = CALIBRATED_LEXICAL_WEIGHT,
    segments: Sequence[tuple[str, npt.ArrayLike]] = (),
    per_tool: bool = True,
) -> MarginResult:
    """The calibrated ranking of one call (see the module docstring).

    ``segments`` are ``(text, vector)`` views of the context's clauses; they are used only when
    :func:`needs_segments`, and without them each chosen tool's evidence is its lead in the whole context.
    ``per_tool=False`` keeps the seed's best-chosen margin for calls that chose several tools.

    Raises:
        ValueError: on the wiring errors of :func:`score_margin`, or vector and text counts that differ
            from the names.
    """
    check_wiring(names, chosen)
    if len(parameter_texts) != len(names):
        raise ValueError(f"{len(names)} names but {len(parameter_texts)} parameter texts")
    lexicon = menu_lexicon(tuple(parameter_texts))
    seed = cosine_scores(context, seed_vectors)
    scores = _fused(context_text, context, seed, parameter_vectors, lexicon, lexical_weight)
    if seed.shape[0] != len(names) or scores.shape[0] != len(names):
        raise ValueError(f"{len(names)} names but {seed.shape[0]} seed and {scores.shape[0]} vectors")
    mask = chosen_mask(names, chosen)
    result = relative(
        margin_of_scores(names, scores, chosen, threshold=threshold, cosines=seed, mask=mask), threshold
    )
    if not per_tool or not needs_segments(len(names), len(set(chosen))):
        return result
    views = [scores]
    for text, vector in segments:
        seed_view = cosine_scores(vector, seed_vectors)
        views.append(_fused(text, vector, seed_view, parameter_vectors, lexicon, lexical_weight))
    weakest, margin = weakest_evidence(np.stack(views), mask)
    return relative(replace(result, margin=margin, weakest=names[weakest]), threshold)


def relative(result: MarginResult, threshold: float) -> MarginResult:
    """``result`` with its relative margin, and narrow when that is under ``threshold`` (calibrated)."""
    share = relative_margin(result.margin, result.top_score)
    return replace(result, relative_margin=share, narrow=share is not None and share < threshold)


def weakest_evidence(views: npt.NDArray[np.float64], mask: npt.NDArray[np.bool_]) -> tuple[int, float]:
    """The chosen position with the least evidence, and that evidence.

    ``views`` holds one row of scores per view (the whole context, then each clause). A chosen tool's
    evidence is its best lead, over the views, against the best unchosen tool of the same view; ties go
    to the first chosen tool on the menu.
    """
    best_unchosen = views[:, ~mask].max(axis=1, keepdims=True)
    chosen_positions = np.flatnonzero(mask)
    evidence = (views[:, chosen_positions] - best_unchosen).max(axis=0)
    weakest = int(np.argmin(evidence))
    return int(chosen_positions[weakest]), float(evidence[weakest])


def _fused(
    text: str,
    context: npt.ArrayLike,
    seed: npt.NDArray[np.float64],
    parameter_vectors: npt.ArrayLike,
    lexicon: MenuLexicon,
    lexical_weight: float,
) -> npt.NDArray[np.float64]:
    cosines = (seed + cosine_scores(context, parameter_vectors)) / 2.0
    return np.asarray(
        (1.0 - lexical_weight) * cosines + lexical_weight * lexicon.scores(text), dtype=np.float64
    )
