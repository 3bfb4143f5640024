"""Tool choice with the text a menu shares dropped: chosen on four corpora, kept or not on a third.

The rule is written in ``docs/tool-choice.md`` ("Text the menu shares"), before any number on the third
corpus was computed. Seen corpora, pooled: BFCL, BFCL live, ToolAlpaca and BFCL multi-turn; the third:
Seal-Tools (:mod:`benchmarks._seal_tools`). Wrong choices are planted as in
:mod:`benchmarks._tool_choice_rule` (every other offered tool, and the nearest rival by the
unchanged seed text).

Rows: per candidate its ``t*`` and rates on the seen corpora pooled (and each); then, on the third
corpus, the seed rule, the shipped default and the pick at its ``t*``, and whether it is kept.
``$SHAPECHECK_BENCH_VECTOR_CACHE`` keeps MiniLM's vectors between runs.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks import _bfcl, _seal_tools
from benchmarks._tool_choice_rule import (
    SEED_THRESHOLD,
    Pick,
    Planted,
    Scored,
    cache_path,
    filled,
    fmt,
    helps,
    plant,
    pooled,
    rate_row,
    rates,
    scored,
    seed_outcome,
    t_star,
)
from benchmarks.bench_tool_choice_detection import Outcome, Vectors
from benchmarks.bench_tool_choice_fresh import corpora
from otel_shapecheck import MiniLMEmbedder
from otel_shapecheck._model import OfferedTool, ToolParameter
from otel_shapecheck.checks.tool_choice._margin import choice_context
from otel_shapecheck.checks.tool_choice._scoring import (
    CALIBRATED_LEXICAL_WEIGHT,
    CALIBRATED_MARGIN_THRESHOLD,
    calibrated_margin,
)
from otel_shapecheck.embedding._tool_index import tokenised_name, tool_texts

SEEN = ("bfcl", "bfcl_live", "toolalpaca", "bfcl_multi_turn")
THIRD = "seal_tools"
CANDIDATES: dict[str, tuple[float, bool] | None] = {
    "unchanged": None,
    "sentences@0.25": (0.25, False),
    "sentences@0.5": (0.5, False),
    "sentences@0.75": (0.75, False),
    "sentences@1": (1.0, False),
    "sentences+parameters@0.25": (0.25, True),
    "sentences+parameters@0.5": (0.5, True),
    "sentences+parameters@0.75": (0.75, True),
    "sentences+parameters@1": (1.0, True),
}
"""The lever's candidates (share, whether shared parameter entries go too), the unchanged texts first."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def sentences(description: str | None) -> list[str]:
    """A description's sentences, trimmed, empty ones left out."""
    return [part.strip() for part in _SENTENCE_END.split(description or "") if part.strip()]


def _parameter_entry(parameter: ToolParameter) -> str:
    label = tokenised_name(parameter.name.replace(".", " "))
    described = (parameter.description or "").strip()
    return f"{label}: {described}" if described else label


def shared_dropped(tools: Sequence[OfferedTool], share: float, parameters: bool) -> tuple[OfferedTool, ...]:
    """``tools`` with the sentences (and, with ``parameters``, parameter entries) a share of them have in
    common left out; a menu without any is returned unchanged."""
    first: dict[str, OfferedTool] = {}
    for tool in tools:
        first.setdefault(tool.name, tool)
    need = max(2, math.ceil(share * len(first) - 1e-9))
    counts: dict[str, int] = {}
    entry_counts: dict[str, int] = {}
    for tool in first.values():
        for sentence in set(sentences(tool.description)):
            counts[sentence] = counts.get(sentence, 0) + 1
        if parameters:
            for entry in {_parameter_entry(p) for p in tool.parameters}:
                entry_counts[entry] = entry_counts.get(entry, 0) + 1
    common = {s for s, n in counts.items() if n >= need}
    common_entries = {e for e, n in entry_counts.items() if n >= need}
    if not common and not common_entries:
        return tuple(tools)
    out = []
    for tool in tools:
        kept = [s for s in sentences(tool.description) if s not in common]
        described = (
            tool.description if not any(s in common for s in sentences(tool.description)) else " ".join(kept)
        )
        params = tuple(p for p in tool.parameters if _parameter_entry(p) not in common_entries)
        out.append(replace(tool, description=described or None, parameters=params))
    return tuple(out)


def menu(case: _bfcl.Case, candidate: str) -> tuple[OfferedTool, ...]:
    """The case's menu as ``candidate`` embeds it."""
    setting = CANDIDATES[candidate]
    return case.tools if setting is None else shared_dropped(case.tools, *setting)


def texts_of(case: _bfcl.Case, candidate: str) -> tuple[list[str], list[str]]:
    """Seed and parameter texts of the case's menu under ``candidate``."""
    built = [tool_texts(t.name, t.description, t.parameters) for t in menu(case, candidate)]
    return [b[0] for b in built], [b[1] for b in built]


def outcome(pick: Pick, vectors: Vectors, candidate: str) -> Outcome:
    """The calibrated relative margin and disagreement of one single choice under ``candidate``."""
    seed_texts, texts = texts_of(pick.case, candidate)
    context = choice_context(pick.case.query)
    result = calibrated_margin(
        context,
        vectors.of([context])[0],
        [t.name for t in pick.case.tools],
        vectors.of(seed_texts),
        vectors.of(texts),
        texts,
        (pick.chosen,),
        threshold=0.0,
        lexical_weight=CALIBRATED_LEXICAL_WEIGHT,
    )
    return result.relative_margin, result.proxy_disagreement


def _scored(planted: Planted, vectors: Vectors, candidate: str) -> Scored:
    return scored(planted, lambda pick: outcome(pick, vectors, candidate))


def run(
    data: str | Path | None = None, source: str | Path | None = None, third: bool = True
) -> list[dict[str, Any]]:
    """The candidates on the seen corpora, then (with ``third``) the pick on the third corpus, once."""
    found = corpora(data, source)
    if found is None:
        print("bench_tool_choice_shared: BFCL files or bfcl-eval data not found; no rows", file=sys.stderr)
        return []
    found[THIRD] = _seal_tools.load()
    names = SEEN + ((THIRD,) if third else ())
    texts: dict[str, None] = {}
    for name in names:
        for case in found[name]:
            texts[choice_context(case.query)] = None
            for candidate in CANDIDATES:
                seed_texts, params = texts_of(case, candidate)
                texts.update(dict.fromkeys(seed_texts + params))
    vectors = filled(MiniLMEmbedder(), list(texts), cache_path(""))
    planted = {name: plant(found[name], vectors) for name in names}
    seed = {name: scored(planted[name], lambda p: seed_outcome(p, vectors)) for name in names}
    seed_seen = rates(pooled(*(seed[n] for n in SEEN)), SEED_THRESHOLD)
    rows = [
        rate_row("tool_choice.shared.seen.seed@0.05", seed_seen, "the seed rule, four seen corpora pooled")
    ]
    outcomes: dict[str, dict[str, Scored]] = {}
    best: tuple[float, int, str, float] | None = None
    for position, candidate in enumerate(CANDIDATES):
        outcomes[candidate] = {n: _scored(planted[n], vectors, candidate) for n in names}
        sample = pooled(*(outcomes[candidate][n] for n in SEEN))
        threshold = t_star(sample, seed_seen[2])
        measured = rates(sample, threshold)
        each = "; ".join(f"{n}: {fmt(rates(outcomes[candidate][n], threshold))}" for n in SEEN)
        changed = sum(menu(p.case, candidate) != p.case.tools for n in SEEN for p in planted[n].correct)
        rows.append(
            rate_row(
                f"tool_choice.shared.seen.{candidate}@{threshold:g}",
                measured,
                f"seen pooled; {each}; menus changed: {changed}",
            )
        )
        if best is None or (measured[0], position) < best[:2]:
            best = (measured[0], position, candidate, threshold)
    assert best is not None
    _, _, pick, threshold = best
    rows.append(
        rate_row(
            f"tool_choice.shared.seen.pick.{pick}@{threshold:g}",
            rates(pooled(*(outcomes[pick][n] for n in SEEN)), threshold),
            "the pick",
        )
    )
    if not third:
        return rows
    third_seed = rates(seed[THIRD], SEED_THRESHOLD)
    shipped = rates(outcomes["unchanged"][THIRD], CALIBRATED_MARGIN_THRESHOLD)
    picked = rates(outcomes[pick][THIRD], threshold)
    kept = helps(picked, shipped)
    changed = sum(menu(p.case, pick) != p.case.tools for p in planted[THIRD].correct)
    sizes = planted[THIRD].sizes()
    rows += [
        rate_row(
            f"tool_choice.shared.{THIRD}.sizes", sizes, "correct, random, nearest (counts)", unit="count"
        ),
        rate_row(f"tool_choice.shared.{THIRD}.seed@0.05", third_seed, "the seed rule"),
        rate_row(
            f"tool_choice.shared.{THIRD}.default@{CALIBRATED_MARGIN_THRESHOLD:g}",
            shipped,
            "the shipped default",
        ),
        rate_row(
            f"tool_choice.shared.{THIRD}.pick.{pick}@{threshold:g}",
            picked,
            f"{'kept' if kept else 'not kept'}; menus changed: {changed} of {len(planted[THIRD].correct)}",
            kept=kept,
        ),
    ]
    return rows


if __name__ == "__main__":
    for one in run(third="--seen-only" not in sys.argv):
        print(json.dumps(one, ensure_ascii=False))
