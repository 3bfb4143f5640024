"""The tool-catalog lint: pairs of tools a model is likely to confuse, and descriptions that cannot help it.

Ported from agentfootprint's tool-lint. Similarity is the cosine of the tools' :func:`confusability_text`
vectors (the text tool-choice margins rank at run time), found through the :class:`ToolIndex` by
nearest-neighbour search, so thousands of tools lint in seconds. A pair at or above the threshold
(default 0.85) is ``confusable``; one within the watch band (0.05) below it is ``watch`` (advisory).
Absolute cosines are per-embedder: the char-count mock squeezes unrelated prose into 0.85–0.97, so it
gets its own calibration (0.94 / 0.02) and only its relative order means anything. Four structural
rules flag descriptions that are missing or short, say what but not when, list enum values in prose,
or leave an optional parameter's omission unexplained. The report's ``ok`` is the CI gate.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Final

from otel_shapecheck.catalog._rules import DEFAULT_RULES, CatalogTool, Rule, Severity, StructuralFinding
from otel_shapecheck.embedding._cache import EmbeddingCache, cached
from otel_shapecheck.embedding._embedders import Embedder
from otel_shapecheck.embedding._tool_index import ToolIndex, confusability_text, tokenised_name

logger = logging.getLogger(__name__)

DEFAULT_CONFUSABILITY_THRESHOLD: Final = 0.85
"""A starting point for real sentence embedders (unrelated tool descriptions land around 0.3–0.7)."""
DEFAULT_WATCH_BAND: Final = 0.05
MOCK_CONFUSABILITY_THRESHOLD: Final = 0.94
"""Calibration for the reference's char-count mock (ids ``char-count-*``), which compresses unrelated prose
into 0.85–0.97."""
MOCK_WATCH_BAND: Final = 0.02
_MOCK_ID_PREFIX: Final = "char-count-"
_HINT_STOPWORDS: Final = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "by",
        "for",
        "from",
        "get",
        "in",
        "into",
        "is",
        "its",
        "of",
        "on",
        "or",
        "the",
        "to",
        "which",
        "with",
    ]
)


@dataclass(frozen=True)
class SimilarPair:
    """Two tools and the cosine of their texts, with a hint on how to tell them apart."""

    a: str
    b: str
    similarity: float
    hint: str


@dataclass(frozen=True)
class CatalogLintReport:
    """What the lint found; ``ok`` is the gate (no gated confusable pair, no structural failure)."""

    ok: bool
    tool_count: int
    analyzed: bool
    """Whether similarity ran (it needs an embedder and at least two distinctly named tools)."""
    embedder: str | None
    threshold: float
    watch_band: float
    similarity_gated: bool
    """Whether confusable pairs fail the gate (otherwise similarity is report-only)."""
    confusable: tuple[SimilarPair, ...]
    watch: tuple[SimilarPair, ...]
    ranked: tuple[SimilarPair, ...]
    """The most similar pairs, highest first (ties in catalog order)."""
    structural: tuple[StructuralFinding, ...]
    errors: int
    warnings: int

    def to_dict(self) -> dict[str, object]:
        """The report as JSON-ready data."""
        return asdict(self)


def _name_tokens(name: str) -> list[str]:
    return tokenised_name(name).lower().split()


def _description_tokens(tool: CatalogTool) -> list[str]:
    words = re.split(r"[^a-z0-9_]+", (tool.description or "").lower())
    return list(dict.fromkeys(w for w in words if len(w) >= 3 and w not in _HINT_STOPWORDS))


def differentiation_hint(a: CatalogTool, b: CatalogTool) -> str:
    """How to tell a similar pair apart: the qualifier of near-twin names, else their distinct terms."""
    a_tokens, b_tokens = _name_tokens(a.name), _name_tokens(b.name)
    a_only = [t for t in a_tokens if t not in b_tokens]
    b_only = [t for t in b_tokens if t not in a_tokens]
    shared = [t for t in a_tokens if t in b_tokens]
    if len(shared) >= 2 and len(a_only) + len(b_only) <= 2:
        diff = " vs ".join(f"'{t}'" for t in a_only + b_only) or "nothing (the names match)"
        return (
            f"names differ only by {diff}: make the descriptions say WHEN to choose each (different "
            f'backend or data source? live vs historical? freshness?), e.g. "Use for ...; prefer '
            f'{b.name} when ..."'
        )
    a_desc, b_desc = _description_tokens(a), _description_tokens(b)
    a_distinct = [t for t in a_desc if t not in b_desc][:3]
    b_distinct = [t for t in b_desc if t not in a_desc][:3]
    if not a_distinct and not b_distinct:
        return (
            f"the descriptions are near-duplicates: rewrite one to state when it, and not {b.name}, "
            "is the right call"
        )
    return (
        f"descriptions overlap heavily; the distinct terms are {a.name}: [{', '.join(a_distinct)}] vs "
        f'{b.name}: [{", ".join(b_distinct)}]: lead with an explicit choice condition ("use when ...") '
        "built on those"
    )


def coerce_catalog(document: object) -> list[CatalogTool]:
    """Tools from any of the four catalog shapes: plain, MCP ``{"tools": [...]}``, OpenAI, Anthropic.

    Raises:
        ValueError: naming what is wrong when ``document`` is none of them.
    """
    if isinstance(document, list):
        entries: list[object] = document
    elif isinstance(document, Mapping) and isinstance(document.get("tools"), list):
        entries = document["tools"]
    else:
        raise ValueError('expected a JSON array of tools or {"tools": [...]}')
    tools: list[CatalogTool] = []
    for position, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise ValueError(f"tools[{position}] is not an object")
        nested = entry.get("function")
        fields: Mapping[str, object] = (
            nested if entry.get("type") == "function" and isinstance(nested, Mapping) else entry
        )
        name = fields.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{position}] has no string 'name'")
        description = fields.get("description")
        schema = next(
            (
                fields[key]
                for key in ("inputSchema", "input_schema", "parameters")
                if fields.get(key) is not None
            ),
            None,
        )
        tools.append(
            CatalogTool(
                name=name,
                description=description if isinstance(description, str) else None,
                input_schema=schema if isinstance(schema, Mapping) else None,
            )
        )
    return tools


def _calibration(embedder: Embedder | None) -> tuple[float, float]:
    inner = embedder.inner if isinstance(embedder, EmbeddingCache) else embedder
    if inner is not None and inner.id.startswith(_MOCK_ID_PREFIX):
        return MOCK_CONFUSABILITY_THRESHOLD, MOCK_WATCH_BAND
    return DEFAULT_CONFUSABILITY_THRESHOLD, DEFAULT_WATCH_BAND


def _similar_pairs(
    unique: Sequence[CatalogTool], index: ToolIndex, min_similarity: float, top_pairs: int
) -> list[tuple[float, int, int]]:
    """``(similarity, i, j)`` for every pair at or above ``min_similarity`` and the closest ``top_pairs``."""
    texts = [confusability_text(tool.name, tool.description) for tool in unique]
    groups: dict[str, list[int]] = {}
    for position, text in enumerate(texts):
        groups.setdefault(text, []).append(position)
    distinct = list(groups)
    found: list[tuple[float, int, int]] = []
    for members in groups.values():
        found.extend((1.0, i, j) for n, i in enumerate(members) for j in members[n + 1 :])
    if len(distinct) >= 2:
        near = index.neighbours(distinct, min_similarity=min_similarity, min_k=top_pairs)
        for (x, y), similarity in near.items():
            for i in groups[distinct[x]]:
                for j in groups[distinct[y]]:
                    found.append((min(similarity, 1.0), min(i, j), max(i, j)))
    found.sort(key=lambda pair: (-pair[0], pair[1], pair[2]))
    return found


def lint_catalog(
    tools: Sequence[CatalogTool],
    *,
    embedder: Embedder | None = None,
    index: ToolIndex | None = None,
    threshold: float | None = None,
    watch_band: float | None = None,
    fail_on: Severity = "error",
    gate_on_similarity: bool = True,
    top_pairs: int = 10,
    rules: Sequence[Rule] = DEFAULT_RULES,
) -> CatalogLintReport:
    """Lint ``tools``: structural rules always, similarity when an embedder (or an index) is given.

    Args:
        tools: the catalog; a repeated name is a ``duplicate-name`` error and its first tool is kept.
        embedder: embeds the tool texts (wrapped in an :class:`EmbeddingCache` unless it is one).
        index: a :class:`ToolIndex` to reuse (e.g. ``ToolChoiceCheck().tool_index``); wins over ``embedder``.
        threshold: confusable at or above this cosine (default 0.85; 0.94 for the char-count mock).
        watch_band: ``watch`` below the threshold by at most this (default 0.05; 0.02 for the mock).
        fail_on: ``"error"``, or ``"warn"`` (strict) to let structural warnings fail the gate too.
        gate_on_similarity: whether confusable pairs fail the gate (``False``: report-only).
        top_pairs: how many of the closest pairs to rank in the report.
        rules: the structural rules (default :data:`DEFAULT_RULES`).

    Raises:
        ValueError: on a non-finite threshold or band, a negative band, an unknown ``fail_on`` or a
            negative ``top_pairs``.
    """
    if index is None and embedder is not None:
        index = ToolIndex(cached(embedder))
    default_threshold, default_band = _calibration(index.embedder if index is not None else None)
    threshold = default_threshold if threshold is None else threshold
    watch_band = default_band if watch_band is None else watch_band
    _validate(threshold, watch_band, fail_on, top_pairs)

    structural: list[StructuralFinding] = []
    unique: dict[str, CatalogTool] = {}
    for tool in tools:
        if tool.name in unique:
            message = "two tools share this name: the model cannot address them distinctly"
            structural.append(StructuralFinding("duplicate-name", tool.name, "error", message))
        else:
            unique[tool.name] = tool
    catalog = list(unique.values())
    for tool in catalog:
        for rule in rules:
            structural.extend(rule(tool))

    analyzed = index is not None and len(catalog) >= 2
    confusable: list[SimilarPair] = []
    watch: list[SimilarPair] = []
    ranked: list[SimilarPair] = []
    if index is not None and analyzed:
        for similarity, i, j in _similar_pairs(catalog, index, threshold - watch_band, top_pairs):
            a, b = catalog[i], catalog[j]
            if similarity < threshold - watch_band and len(ranked) >= top_pairs:
                continue
            pair = SimilarPair(a.name, b.name, similarity, differentiation_hint(a, b))
            if len(ranked) < top_pairs:
                ranked.append(pair)
            if similarity >= threshold:
                confusable.append(pair)
            elif similarity >= threshold - watch_band:
                watch.append(pair)

    errors = sum(1 for finding in structural if finding.severity == "error")
    gate_failures = len(structural) if fail_on == "warn" else errors
    return CatalogLintReport(
        ok=gate_failures == 0 and not (gate_on_similarity and confusable),
        tool_count=len(tools),
        analyzed=analyzed,
        embedder=index.embedder.id if index is not None else None,
        threshold=threshold,
        watch_band=watch_band,
        similarity_gated=gate_on_similarity,
        confusable=tuple(confusable),
        watch=tuple(watch),
        ranked=tuple(ranked),
        structural=tuple(structural),
        errors=errors,
        warnings=len(structural) - errors,
    )


def _validate(threshold: float, watch_band: float, fail_on: str, top_pairs: int) -> None:
    if not -1.0 <= threshold <= 1.0 or threshold != threshold:
        raise ValueError(
            f"threshold={threshold!r} is not a valid value: threshold must be a cosine in [-1, 1]"
        )
    if not 0.0 <= watch_band <= 2.0:
        raise ValueError(f"watch_band={watch_band!r} is not a valid value: watch_band must be in [0, 2]")
    if fail_on not in ("error", "warn"):
        raise ValueError(f"fail_on={fail_on!r} is not a valid value: fail_on must be 'error' or 'warn'")
    if isinstance(top_pairs, bool) or not isinstance(top_pairs, int) or top_pairs < 0:
        raise ValueError(
            f"top_pairs={top_pairs!r} is not a valid value: top_pairs must be a whole number ≥ 0"
        )
