"""What the tool-choice corpus benchmarks share: planting wrong choices, their rates and the choosing rule.

Every such benchmark (``bench_tool_choice_fresh``, ``_shared``, ``_centred``) scores a corpus's correct
single choices beside planted wrong ones: every other offered tool (*random*) and the offered tool whose
seed text is nearest the right one's under MiniLM (*nearest rival*), the same planted set for every
scoring. A flag is a disagreement or a margin under the threshold; its rates are false alarms (flags on
correct choices) and the two detections. The rule of ``docs/tool-choice.md`` picks a candidate by
``t*`` (:func:`t_star`: the smallest threshold detecting nearest rivals within half a point of the seed
rule) and keeps it by :func:`helps`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _bfcl
from benchmarks.bench_tool_choice_detection import VECTOR_CACHE_ENV, Outcome, Vectors, flag_rate
from otel_shapecheck import Embedder
from otel_shapecheck.checks.tool_choice._margin import choice_context, score_margin
from otel_shapecheck.embedding._tool_index import confusability_text

SEED_THRESHOLD = 0.05
NEAREST_SLACK = 0.005
T_GRID = tuple(round(0.00625 * i, 6) for i in range(41))
"""``relative`` thresholds a candidate's ``t*`` is picked from (0 … 0.25)."""


@dataclass(frozen=True)
class Pick:
    """One choice to score: a case and the tool taken as chosen (right or planted)."""

    case: _bfcl.Case
    chosen: str


@dataclass
class Planted:
    """A corpus's correct single choices and the planted wrong ones."""

    correct: list[Pick]
    random: list[Pick]
    nearest: list[Pick]

    def groups(self) -> tuple[list[Pick], list[Pick], list[Pick]]:
        """Correct, random wrong and nearest rival, in that order."""
        return self.correct, self.random, self.nearest

    def sizes(self) -> tuple[float, float, float]:
        """How many choices each group holds."""
        return float(len(self.correct)), float(len(self.random)), float(len(self.nearest))


def seed_texts(case: _bfcl.Case) -> list[str]:
    """The seed texts of a case's menu, in menu order."""
    return [confusability_text(t.name, t.description) for t in case.tools]


def plant(cases: Sequence[_bfcl.Case], seed_vectors: Vectors) -> Planted:
    """Correct single choices with a distractor, every other offered tool, and the nearest rival."""
    planted = Planted([], [], [])
    for case in cases:
        if len(case.chosen) != 1 or not case.has_distractor:
            continue
        right = case.chosen[0]
        planted.correct.append(Pick(case, right))
        names = [tool.name for tool in case.tools]
        seed = seed_vectors.of(seed_texts(case))
        unchosen = [i for i, name in enumerate(names) if name != right]
        nearest = unchosen[int(np.argmax(seed[unchosen] @ seed[names.index(right)]))]
        for i in unchosen:
            planted.random.append(Pick(case, names[i]))
            if i == nearest:
                planted.nearest.append(Pick(case, names[i]))
    return planted


def seed_outcome(pick: Pick, vectors: Vectors) -> Outcome:
    """The seed rule's margin and disagreement (seed text, plain cosine) of one single choice."""
    context = vectors.of([choice_context(pick.case.query)])[0]
    names = [t.name for t in pick.case.tools]
    result = score_margin(
        context, names, vectors.of(seed_texts(pick.case)), (pick.chosen,), threshold=SEED_THRESHOLD
    )
    return result.margin, result.proxy_disagreement


Scored = tuple[list[Outcome], list[Outcome], list[Outcome]]
"""Outcomes of the correct choices, the random wrong ones and the nearest rivals."""
Rates = tuple[float, float, float]


def scored(planted: Planted, score: Callable[[Pick], Outcome]) -> Scored:
    """Every group of ``planted`` scored."""
    correct, random, nearest = ([score(pick) for pick in group] for group in planted.groups())
    return correct, random, nearest


def pooled(*samples: Scored) -> Scored:
    """Several corpora's outcomes as one sample."""
    return (
        [o for s in samples for o in s[0]],
        [o for s in samples for o in s[1]],
        [o for s in samples for o in s[2]],
    )


def rates(sample: Scored, threshold: float | None) -> Rates:
    """False alarms, random wrong tools detected, nearest rivals detected at ``threshold``."""
    return flag_rate(sample[0], threshold), flag_rate(sample[1], threshold), flag_rate(sample[2], threshold)


def t_star(sample: Scored, seed_nearest: float) -> float:
    """The smallest grid threshold detecting nearest rivals within half a point of the seed, else the last."""
    for threshold in T_GRID:
        if rates(sample, threshold)[2] >= seed_nearest - NEAREST_SLACK - 1e-12:
            return threshold
    return T_GRID[-1]


def helps(candidate: Rates, shipped: Rates) -> bool:
    """The keeping rule: no more false alarms, no less nearest-rival detection, one strictly better."""
    no_worse = candidate[0] <= shipped[0] and candidate[2] >= shipped[2]
    return no_worse and (candidate[0] < shipped[0] or candidate[2] > shipped[2])


def cache_path(suffix: str = "") -> Path | None:
    """The vector cache file named by ``$SHAPECHECK_BENCH_VECTOR_CACHE`` (``<name>.<suffix>.npz`` beside
    it for another embedder), or ``None``."""
    raw = os.environ.get(VECTOR_CACHE_ENV)
    if not raw:
        return None
    path = Path(raw)
    return path if not suffix else path.with_name(f"{path.stem}.{suffix}.npz")


def filled(embedder: Embedder, texts: Sequence[str], cache: Path | None, chunk: int = 1000) -> Vectors:
    """Vectors of ``texts``; with a cache file, embedded a chunk at a time so a long run keeps its work."""
    if cache is None:
        return Vectors(embedder, texts)
    vectors = Vectors(embedder, [], cache)
    for start in range(0, len(texts), chunk):
        vectors = Vectors(embedder, texts[start : start + chunk], cache)
    return vectors


def rate_row(name: str, measured: Rates, target: str, **extra: Any) -> dict[str, Any]:
    """A benchmark row of one rule's rates: false alarms as the value, both detections beside it."""
    false_alarms, random, nearest = measured
    return {
        "name": name,
        "value": round(false_alarms, 4),
        "unit": "false-alarm share",
        "baseline": None,
        "ratio": None,
        "target": target,
        "detection_random": round(random, 4),
        "detection_nearest": round(nearest, 4),
        **extra,
    }


def fmt(measured: Rates) -> str:
    """Rates as ``0.123 / 0.987 / 0.965`` (false alarms / random / nearest)."""
    return "{:.3f} / {:.3f} / {:.3f}".format(*measured)


def rate_table(title: str, labelled: Sequence[tuple[str, Rates]]) -> str:
    """One Markdown table of rules and their rates, as the docs print them."""
    out = [f"| {title} | false alarms | random wrong tool | nearest rival |", "|---|---|---|---|"]
    for label, measured in labelled:
        out.append(f"| {label} | " + " | ".join(f"{rate:.1%}" for rate in measured) + " |")
    return "\n".join(out)
