"""Does a tool-choice flag mean something? False alarms on correct choices vs detection of planted wrong ones.

Every recorded choice in the BFCL files is correct, so a flag on one is a false alarm. Wrong choices are
planted on the same cases: for single-choice cases, the chosen tool is replaced by every other offered
tool in turn (*random wrong tool*, pooled over all of them) and by the offered tool whose seed text is
nearest to the right one (*nearest rival*); for multi-choice cases, one chosen tool is swapped for an
unchosen one (every pair, and the nearest rival of each chosen tool). Multi-choice cases with a
distractor are few in BFCL (22), so multi-choice calls are also *composed*: two single-choice BFCL live
cases of the same half with disjoint menus, queries joined with " Also, ", menus concatenated.

Rows are an ROC-style table: for each dataset (``bfcl``, ``bfcl_live.tune``, ``bfcl_live.report``) and
scoring, the false-alarm rate at each threshold (the row's value) with both detection rates beside it.
Scorings: ``seed`` (the seed rule at each threshold: 0.05 is the seed, 0.02 the "seed text @0.02" row),
``disagreement_only``, ``params_lexical`` (the issue's recipe: parameter-aware text alone, lexical
weight 0.1) and ``calibrated`` (the shipped default). The calibrated weight and threshold are re-derived
on the tuning half (``tune``) by the rule in ``_scoring.CALIBRATED_MARGIN_THRESHOLD``, and reported
against the shipped constants. Run alone (``python -m benchmarks.bench_tool_choice_detection``) it
also prints the tables as Markdown.

Data: see :mod:`benchmarks._bfcl` (``$SHAPECHECK_BENCH_DATA``, ``$SHAPECHECK_BENCH_BFCL_SOURCE``).
Without the data the benchmark returns no rows and says why. Each distinct text is embedded once per
run; ``$SHAPECHECK_BENCH_VECTOR_CACHE`` names an ``.npz`` file that keeps the vectors between runs.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _bfcl
from otel_shapecheck import Embedder, MiniLMEmbedder
from otel_shapecheck._model import OfferedTool
from otel_shapecheck.checks.tool_choice._margin import MarginResult, choice_context, score_margin
from otel_shapecheck.checks.tool_choice._scoring import (
    CALIBRATED_LEXICAL_WEIGHT,
    CALIBRATED_MARGIN_THRESHOLD,
    calibrated_margin,
    needs_segments,
    segment_texts,
)
from otel_shapecheck.embedding._tool_index import confusability_text, parameter_text

THRESHOLDS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05)
"""Thresholds of the ROC table (margin < threshold is narrow); ``None`` stands for disagreement only."""
TUNING_WEIGHTS = (0.05, 0.1, 0.15, 0.2, 0.3)
TUNING_THRESHOLDS = tuple(round(0.005 * i, 3) for i in range(11))
TARGET_FALSE_ALARMS = 0.12
TARGET_RANDOM = 0.97
TARGET_NEAREST = 0.96
VECTOR_CACHE_ENV = "SHAPECHECK_BENCH_VECTOR_CACHE"


@dataclass(frozen=True)
class Choice:
    """One call to score: its context, menu and the tools taken as chosen."""

    query: str
    tools: tuple[OfferedTool, ...]
    chosen: tuple[str, ...]


@dataclass(frozen=True)
class Scoring:
    """A way to score a choice: ``(choice, vectors) -> MarginResult`` at a given threshold."""

    name: str
    score: Callable[[Choice, Vectors, float], MarginResult]
    thresholds: tuple[float | None, ...] = THRESHOLDS


class Vectors:
    """Each distinct text embedded once (one embed call for all of them), optionally kept in an npz file."""

    def __init__(self, embedder: Embedder, texts: Iterable[str], cache: Path | None = None) -> None:
        self._vectors: dict[str, np.ndarray] = {}
        if cache is not None and cache.is_file():
            stored = np.load(cache, allow_pickle=True)
            if str(stored["embedder"]) == embedder.id:
                self._vectors = dict(zip(stored["texts"].tolist(), stored["vectors"], strict=True))
        missing = [text for text in dict.fromkeys(texts) if text not in self._vectors]
        if missing:
            self._vectors.update(zip(missing, embedder.embed(missing), strict=True))
            if cache is not None:
                np.savez(
                    cache,
                    embedder=np.array(embedder.id),
                    texts=np.array(list(self._vectors), dtype=object),
                    vectors=np.stack(list(self._vectors.values())),
                )
        self.embedded = len(missing)

    def of(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts`` as rows."""
        return np.stack([self._vectors[text] for text in texts])


def texts_of(choice: Choice) -> list[str]:
    """Every text any scoring embeds for ``choice``."""
    texts = [choice_context(choice.query), *segment_texts(choice.query)]
    for tool in choice.tools:
        texts.append(confusability_text(tool.name, tool.description))
        texts.append(parameter_text(tool.name, tool.description, tool.parameters))
    return texts


def _seed(choice: Choice, vectors: Vectors, threshold: float) -> MarginResult:
    seed = vectors.of([confusability_text(t.name, t.description) for t in choice.tools])
    context = vectors.of([choice_context(choice.query)])[0]
    return score_margin(context, [t.name for t in choice.tools], seed, choice.chosen, threshold=threshold)


def calibrated(weight: float, *, parameters_only: bool = False, per_tool: bool = True) -> Callable[..., Any]:
    """The calibrated scoring at lexical ``weight``; ``parameters_only`` embeds only the parameter text."""

    def score(choice: Choice, vectors: Vectors, threshold: float) -> MarginResult:
        context_text = choice_context(choice.query)
        parameter_texts = [parameter_text(t.name, t.description, t.parameters) for t in choice.tools]
        parameter_vectors = vectors.of(parameter_texts)
        seed_texts = [confusability_text(t.name, t.description) for t in choice.tools]
        seed_vectors = parameter_vectors if parameters_only else vectors.of(seed_texts)
        segments: list[tuple[str, np.ndarray]] = []
        if per_tool and needs_segments(len(choice.tools), len(choice.chosen)):
            views = segment_texts(choice.query)
            segments = list(zip(views, vectors.of(views), strict=True)) if views else []
        return calibrated_margin(
            context_text,
            vectors.of([context_text])[0],
            [t.name for t in choice.tools],
            seed_vectors,
            parameter_vectors,
            parameter_texts,
            choice.chosen,
            threshold=threshold,
            lexical_weight=weight,
            segments=segments,
            per_tool=per_tool,
        )

    return score


SCORINGS = (
    Scoring("seed", _seed),
    Scoring("disagreement_only", _seed, (None,)),
    Scoring("params_lexical", calibrated(0.1, parameters_only=True, per_tool=False)),
    Scoring("calibrated", calibrated(CALIBRATED_LEXICAL_WEIGHT)),
)


@dataclass
class Planted:
    """A dataset's correct choices and the planted wrong ones."""

    correct: list[Choice]
    random: list[Choice]
    nearest: list[Choice]


def plant(cases: Sequence[_bfcl.Case], vectors: Vectors, *, multi: bool = False) -> Planted:
    """Correct choices (a distractor, one chosen tool or several if ``multi``) and planted wrong ones."""
    planted = Planted([], [], [])
    for case in cases:
        if not case.has_distractor or (len(case.chosen) > 1) != multi:
            continue
        planted.correct.append(Choice(case.query, case.tools, case.chosen))
        names = [tool.name for tool in case.tools]
        seed = vectors.of([confusability_text(t.name, t.description) for t in case.tools])
        for right in case.chosen:
            unchosen = [i for i, name in enumerate(names) if name not in case.chosen]
            similarity = seed[unchosen] @ seed[names.index(right)]
            nearest = unchosen[int(np.argmax(similarity))]
            for i in unchosen:
                wrong = Choice(
                    case.query, case.tools, tuple(names[i] if c == right else c for c in case.chosen)
                )
                planted.random.append(wrong)
                if i == nearest:
                    planted.nearest.append(wrong)
    return planted


def composed(cases: Sequence[_bfcl.Case], seed: int = 16) -> list[_bfcl.Case]:
    """Two-tool calls built from pairs of single-choice cases with disjoint menus (see the module doc)."""
    singles = [case for case in cases if case.has_distractor and len(case.chosen) == 1]
    random.Random(seed).shuffle(singles)
    pairs = []
    for first, second in zip(singles[0::2], singles[1::2], strict=False):
        if {t.name for t in first.tools} & {t.name for t in second.tools}:
            continue
        pairs.append(
            _bfcl.Case(
                f"{first.id}+{second.id}",
                f"{first.query.rstrip()} Also, {second.query}",
                first.tools + second.tools,
                first.chosen + second.chosen,
            )
        )
    return pairs


Outcome = tuple[float | None, bool]
"""A scored choice: its margin (``None`` when every tool was chosen) and whether it is in disagreement."""


def outcomes(choices: Sequence[Choice], scoring: Scoring, vectors: Vectors) -> list[Outcome]:
    """Each choice scored once; the flag at any threshold follows from the margin."""
    results = [scoring.score(choice, vectors, 0.0) for choice in choices]
    return [(result.margin, result.proxy_disagreement) for result in results]


def flag_rate(scored: Sequence[Outcome], threshold: float | None) -> float:
    """The share flagged: disagreement, or a margin under ``threshold`` (disagreement only when ``None``)."""
    if not scored:
        return float("nan")
    flagged = sum(
        disagreement or (threshold is not None and margin is not None and margin < threshold)
        for margin, disagreement in scored
    )
    return flagged / len(scored)


def roc(
    planted: Planted, scoring: Scoring, vectors: Vectors
) -> list[tuple[float | None, float, float, float]]:
    """``(threshold, false alarms, detection random, detection nearest)`` per threshold of ``scoring``."""
    correct, wrong, nearest = (
        outcomes(choices, scoring, vectors) for choices in (planted.correct, planted.random, planted.nearest)
    )
    return [
        (threshold, flag_rate(correct, threshold), flag_rate(wrong, threshold), flag_rate(nearest, threshold))
        for threshold in scoring.thresholds
    ]


def tune(planted: Planted, vectors: Vectors) -> tuple[float, float, tuple[float, float, float]] | None:
    """The (weight, threshold) with the most headroom on all three targets at once, on ``planted``.

    Headroom is the worst of ``false alarms / 12 %``, ``missed random / 3 %`` and ``missed nearest / 4 %``
    (each target's share used up; lower is better), rounded to 0.001; ties go to fewer false alarms.
    """
    best: tuple[tuple[float, float], float, float, tuple[float, float, float]] | None = None
    for weight in TUNING_WEIGHTS:
        scoring = Scoring("tuning", calibrated(weight), TUNING_THRESHOLDS)
        for threshold, false_alarms, detected, nearest in roc(planted, scoring, vectors):
            assert threshold is not None
            used = max(
                false_alarms / TARGET_FALSE_ALARMS,
                (1 - detected) / (1 - TARGET_RANDOM),
                (1 - nearest) / (1 - TARGET_NEAREST),
            )
            key = (round(used, 3), false_alarms)
            if best is None or key < best[0]:
                best = (key, weight, threshold, (false_alarms, detected, nearest))
    return None if best is None else best[1:]


def _row(name: str, value: float, unit: str, target: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "value": round(value, 4),
        "unit": unit,
        "baseline": None,
        "ratio": None,
        "target": target,
        **{key: round(item, 4) if isinstance(item, float) else item for key, item in extra.items()},
    }


def _label(threshold: float | None) -> str:
    return "disagreement" if threshold is None else f"margin<{threshold:g}"


def run(data: str | Path | None = None, source: str | Path | None = None) -> list[dict[str, Any]]:
    """Every row of this benchmark; none (with a message) when the BFCL files are not found."""
    directory = _bfcl.data_dir(data)
    if directory is None:
        print("bench_tool_choice_detection: BFCL files not found; no rows", file=sys.stderr)
        return []
    source_path = _bfcl.source_dir(source)
    datasets = _bfcl.load(directory, source_path)
    live = datasets["bfcl_live"]
    splits: dict[str, list[_bfcl.Case]] = {
        "bfcl": datasets["bfcl"],
        "bfcl_live.tune": [c for c in live if c.half == "tune"],
        "bfcl_live.report": [c for c in live if c.half == "report"],
    }
    multi = {
        "multi.bfcl_all": [c for cases in datasets.values() for c in cases],
        "multi.composed.tune": composed(splits["bfcl_live.tune"]),
        "multi.composed.report": composed(splits["bfcl_live.report"]),
    }
    groups = {**splits, **multi}
    cache = os.environ.get(VECTOR_CACHE_ENV)
    texts = (
        text
        for cases in groups.values()
        for case in cases
        for text in texts_of(Choice(case.query, case.tools, case.chosen))
    )
    vectors = Vectors(MiniLMEmbedder(), texts, Path(cache) if cache else None)
    with_schema = sum(bool(t.parameters) for t in (t for c in live for t in c.tools))
    rows = [
        _row(
            "tool_choice.detection.bfcl_live.tools_with_parameters",
            with_schema / sum(len(c.tools) for c in live),
            "share",
            f"report (schemas from {source_path or 'nowhere: parameter-aware text = seed text'})",
        )
    ]
    planted = {name: plant(cases, vectors, multi=name in multi) for name, cases in groups.items()}
    for name, sample in planted.items():
        rows.append(
            _row(
                f"tool_choice.detection.{name}.sizes",
                len(sample.correct),
                "correct choices",
                f"report: {len(sample.random)} planted random, {len(sample.nearest)} nearest",
            )
        )
        for scoring in SCORINGS:
            for threshold, false_alarms, detected, nearest in roc(sample, scoring, vectors):
                rows.append(
                    _row(
                        f"tool_choice.detection.{name}.{scoring.name}@{_label(threshold)}",
                        false_alarms,
                        "false-alarm share",
                        f"detects random {detected:.3f}, nearest {nearest:.3f}",
                        detection_random=detected,
                        detection_nearest=nearest,
                    )
                )
    tuned = tune(planted["bfcl_live.tune"], vectors)
    if tuned is not None:
        weight, threshold, (false_alarms, detected, nearest) = tuned
        rows.append(
            _row(
                "tool_choice.detection.tuned_on.bfcl_live.tune",
                false_alarms,
                "false-alarm share",
                f"weight {weight:g}, threshold {threshold:g} (shipped: {CALIBRATED_LEXICAL_WEIGHT:g}, "
                f"{CALIBRATED_MARGIN_THRESHOLD:g}); detects random {detected:.3f}, nearest {nearest:.3f}",
                weight=weight,
                threshold=threshold,
            )
        )
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The ROC rows as one Markdown table per dataset."""
    out: list[str] = []
    current = None
    for row in rows:
        if "detection_random" not in row:
            continue
        head, threshold = row["name"].removeprefix("tool_choice.detection.").split("@")
        dataset, scoring = head.rsplit(".", 1)
        if dataset != current:
            current = dataset
            out += ["", f"**{dataset}**", "", "| rule | false alarms | random wrong tool | nearest rival |"]
            out += ["|---|---|---|---|"]
        out.append(
            f"| {scoring} {threshold} | {row['value']:.1%} | {row['detection_random']:.1%} "
            f"| {row['detection_nearest']:.1%} |"
        )
    return "\n".join(out)


if __name__ == "__main__":
    import json

    all_rows = run(*(sys.argv[1:3]))
    for one in all_rows:
        print(json.dumps(one, ensure_ascii=False))
    print(markdown(all_rows))
