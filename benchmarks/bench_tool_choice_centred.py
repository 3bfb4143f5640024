"""Tool choice with menu-centred vectors or a heavier lexical weight: chosen on five corpora, kept or not
on a fourth nobody tuned on.

The rule is written in ``docs/tool-choice.md`` ("Menu-centred vectors and the lexical weight"), before
any number on the fourth corpus was computed. Seen corpora, pooled: BFCL, BFCL live, ToolAlpaca, BFCL
multi-turn and Seal-Tools; the fourth: StableToolBench (:mod:`benchmarks._stabletoolbench`). Wrong
choices are planted as in :mod:`benchmarks._tool_choice_rule`.

Rows: the seed rule and each candidate at its ``t*`` on the seen corpora pooled (and each); then, on the
fourth corpus, the seed rule, the shipped default and every candidate at its ``t*`` (the pick marked,
with whether it is kept). ``--seen-only`` stops before the fourth corpus. ``$SHAPECHECK_BENCH_VECTOR_CACHE``
keeps MiniLM's vectors between runs.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks import _bfcl, _seal_tools, _stabletoolbench
from benchmarks._tool_choice_rule import (
    SEED_THRESHOLD,
    Pick,
    Rates,
    Scored,
    cache_path,
    filled,
    fmt,
    helps,
    plant,
    pooled,
    rate_row,
    rate_table,
    rates,
    scored,
    seed_outcome,
    t_star,
)
from benchmarks.bench_tool_choice_detection import Outcome, Vectors
from benchmarks.bench_tool_choice_fresh import corpora
from otel_shapecheck import MiniLMEmbedder
from otel_shapecheck.checks.tool_choice._lexical import menu_lexicon
from otel_shapecheck.checks.tool_choice._margin import choice_context, cosine_scores, margin_of_scores
from otel_shapecheck.checks.tool_choice._scoring import (
    CALIBRATED_LEXICAL_WEIGHT,
    CALIBRATED_MARGIN_THRESHOLD,
    calibrated_margin,
    relative,
)
from otel_shapecheck.embedding._tool_index import tool_texts

SEEN = ("bfcl", "bfcl_live", "toolalpaca", "bfcl_multi_turn", "seal_tools")
FOURTH = "stabletoolbench"


@dataclass(frozen=True)
class Candidate:
    """One scoring to choose among: how much of the menu's mean vector goes, and the lexical weight."""

    name: str
    centring: float = 0.0
    lexical_weight: float = CALIBRATED_LEXICAL_WEIGHT


CANDIDATES = (
    Candidate("unchanged"),
    Candidate("centred@0.5", centring=0.5),
    Candidate("centred@1", centring=1.0),
    Candidate("lexical@0.2", lexical_weight=0.2),
    Candidate("lexical@0.3", lexical_weight=0.3),
)
"""The rule's candidates, in its order (the shipped scoring first)."""


def texts_of(case: _bfcl.Case) -> tuple[list[str], list[str]]:
    """Seed and parameter texts of the case's menu, as the check builds them."""
    built = [tool_texts(t.name, t.description, t.parameters) for t in case.tools]
    return [b[0] for b in built], [b[1] for b in built]


def centred_cosines(
    context: npt.NDArray[np.float64], tools: npt.NDArray[np.float64], centring: float
) -> npt.NDArray[np.float64]:
    """Cosines of ``context`` against ``tools`` after ``centring`` × the menu's mean tool vector is taken
    from both."""
    tools = np.asarray(tools, dtype=np.float64)
    shift = centring * tools.mean(axis=0)
    return cosine_scores(np.asarray(context, dtype=np.float64) - shift, tools - shift)


def outcome(pick: Pick, vectors: Vectors, candidate: Candidate) -> Outcome:
    """The relative margin and disagreement of one single choice under ``candidate``."""
    seed_texts, texts = texts_of(pick.case)
    context_text = choice_context(pick.case.query)
    context = vectors.of([context_text])[0]
    names = [t.name for t in pick.case.tools]
    seed, parameters = vectors.of(seed_texts), vectors.of(texts)
    if not candidate.centring:
        result = calibrated_margin(
            context_text,
            context,
            names,
            seed,
            parameters,
            texts,
            (pick.chosen,),
            threshold=0.0,
            lexical_weight=candidate.lexical_weight,
        )
        return result.relative_margin, result.proxy_disagreement
    cosines = (
        centred_cosines(context, seed, candidate.centring)
        + centred_cosines(context, parameters, candidate.centring)
    ) / 2.0
    weight = candidate.lexical_weight
    scores = (1.0 - weight) * cosines + weight * menu_lexicon(tuple(texts)).scores(context_text)
    result = relative(margin_of_scores(names, scores, (pick.chosen,), threshold=0.0), 0.0)
    return result.relative_margin, result.proxy_disagreement


def _every_text(cases: Sequence[_bfcl.Case]) -> list[str]:
    texts: dict[str, None] = {}
    for case in cases:
        texts[choice_context(case.query)] = None
        seed_texts, params = texts_of(case)
        texts.update(dict.fromkeys(seed_texts + params))
    return list(texts)


def run(
    data: str | Path | None = None, source: str | Path | None = None, fourth: bool = True
) -> list[dict[str, Any]]:
    """The candidates on the seen corpora, then (with ``fourth``) every one on the fourth corpus, once."""
    found = corpora(data, source)
    if found is None:
        print("bench_tool_choice_centred: BFCL files or bfcl-eval data not found; no rows", file=sys.stderr)
        return []
    found["seal_tools"] = _seal_tools.load()
    names = SEEN + ((FOURTH,) if fourth else ())
    if fourth:
        found[FOURTH] = _stabletoolbench.load()
    vectors = filled(MiniLMEmbedder(), _every_text([c for n in names for c in found[n]]), cache_path(""))
    planted = {name: plant(found[name], vectors) for name in names}
    seed = {name: scored(planted[name], lambda p: seed_outcome(p, vectors)) for name in names}
    seed_seen = rates(pooled(*(seed[n] for n in SEEN)), SEED_THRESHOLD)
    rows = [
        rate_row("tool_choice.centred.seen.seed@0.05", seed_seen, "the seed rule, five seen corpora pooled")
    ]
    outcomes: dict[str, dict[str, Scored]] = {}
    operating: dict[str, float] = {}
    best: tuple[float, int, str] | None = None
    for position, candidate in enumerate(CANDIDATES):
        score = partial(outcome, vectors=vectors, candidate=candidate)
        outcomes[candidate.name] = {n: scored(planted[n], score) for n in names}
        sample = pooled(*(outcomes[candidate.name][n] for n in SEEN))
        threshold = operating[candidate.name] = t_star(sample, seed_seen[2])
        measured = rates(sample, threshold)
        each = "; ".join(f"{n}: {fmt(rates(outcomes[candidate.name][n], threshold))}" for n in SEEN)
        rows.append(
            rate_row(
                f"tool_choice.centred.seen.{candidate.name}@{threshold:g}", measured, f"seen pooled; {each}"
            )
        )
        if best is None or (measured[0], position) < best[:2]:
            best = (measured[0], position, candidate.name)
    assert best is not None
    pick = best[2]
    rows.append(
        rate_row(
            f"tool_choice.centred.seen.pick.{pick}@{operating[pick]:g}",
            rates(pooled(*(outcomes[pick][n] for n in SEEN)), operating[pick]),
            "the pick",
        )
    )
    if not fourth:
        return rows
    shipped = rates(outcomes["unchanged"][FOURTH], CALIBRATED_MARGIN_THRESHOLD)
    picked = rates(outcomes[pick][FOURTH], operating[pick])
    kept = pick != "unchanged" and helps(picked, shipped)
    rows += [
        rate_row(f"tool_choice.centred.{FOURTH}.sizes", planted[FOURTH].sizes(), "counts", unit="count"),
        rate_row(
            f"tool_choice.centred.{FOURTH}.seed@0.05", rates(seed[FOURTH], SEED_THRESHOLD), "the seed rule"
        ),
        rate_row(
            f"tool_choice.centred.{FOURTH}.default@{CALIBRATED_MARGIN_THRESHOLD:g}",
            shipped,
            "the shipped default",
        ),
    ]
    for candidate in CANDIDATES:
        threshold = operating[candidate.name]
        is_pick = candidate.name == pick
        note = (
            ("the pick; " + ("kept" if kept else "not kept")) if is_pick else "at its t* on the seen corpora"
        )
        rows.append(
            rate_row(
                f"tool_choice.centred.{FOURTH}.{candidate.name}@{threshold:g}",
                rates(outcomes[candidate.name][FOURTH], threshold),
                note,
                pick=is_pick,
                kept=kept if is_pick else None,
            )
        )
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The seen and fourth-corpus rows as two Markdown tables."""
    tables = []
    for part, title in (("seen", "rule (seen corpora pooled)"), (FOURTH, f"rule ({FOURTH})")):
        prefix = f"tool_choice.centred.{part}."
        labelled: list[tuple[str, Rates]] = [
            (
                row["name"].removeprefix(prefix) + (" (the pick)" if row.get("pick") else ""),
                (row["value"], row["detection_random"], row["detection_nearest"]),
            )
            for row in rows
            if row["name"].startswith(prefix) and row.get("unit") != "count"
        ]
        if labelled:
            tables.append(rate_table(title, labelled))
    return "\n\n".join(tables)


if __name__ == "__main__":
    all_rows = run(fourth="--seen-only" not in sys.argv)
    for one in all_rows:
        print(json.dumps(one, ensure_ascii=False))
    print(markdown(all_rows))
