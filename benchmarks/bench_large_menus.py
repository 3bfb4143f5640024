"""Large menus and large catalogs: indexes where they earn their place, measured against numpy brute force.

- **Per-call scoring** on menus of 1 000, 10 000 and 100 000 tools (hashing embedder, calibrated, tools
  already embedded; the largest size once more with dense 384-dimension vectors, the shape of
  MiniLM's): ``ToolChoiceCheck.evaluate`` per call through the menu's index (one bounded scan per tool
  matrix, then exact re-scoring of the few close tools), against the same check ranking the whole menu
  in numpy (the path menus of up to 2 048 tools take).
- **Lint crossover**: neighbour search over a catalog's vectors, exact blocked numpy against the FAISS
  inverted-file index, at 2 000–40 000 tools, with the index's recall of the exact pairs.
- **Lint of a 100 000-tool catalog** with the hashing embedder, end to end (wall time).

By default the sizes stop at 10 000 tools per menu, 20 000 for the crossover and 20 000 for the lint, so
``make bench`` stays short; ``SHAPECHECK_BENCH_FULL=1`` runs the issue's sizes (100 000-tool menus, a
crossover up to 40 000 and the 100 000-tool lint: several minutes and a few GB of memory).

The catalogs are synthetic but not all near-twins: tool texts are random phrases over a 3 000-word
vocabulary, and one tool in ten is a one-word variant of another (the pairs a lint must find). Run alone
with ``python -m benchmarks large_menus``.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks._rows import row
from otel_shapecheck import HashingEmbedder, Subject, ToolChoiceCheck, lint_catalog
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolParameter
from otel_shapecheck.catalog._rules import CatalogTool
from otel_shapecheck.checks.tool_choice import _batch_scorer
from otel_shapecheck.embedding._neighbours import approximate_pairs, exact_pairs
from otel_shapecheck.embedding._tool_index import ToolIndex, confusability_text
from otel_shapecheck.embedding._vectors import Embedder, l2_normalised

FULL_ENV = "SHAPECHECK_BENCH_FULL"
_TRACE = "3" * 32
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "pa", "do", "gu", "fe", "hi", "jo")


def vocabulary(size: int = 3000, seed: int = 3) -> list[str]:
    """Pseudo-words of two to four syllables."""
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def catalog(size: int, seed: int = 1) -> list[tuple[str, str]]:
    """``(name, description)`` pairs; one in ten is a one-word variant of an earlier tool."""
    rng = random.Random(seed)
    words = vocabulary()
    tools: list[tuple[str, str]] = []
    for i in range(size):
        if i >= 10 and i % 10 == 0:
            _, description = tools[rng.randrange(i)]
            parts = description.split()
            parts[rng.randrange(len(parts))] = rng.choice(words)
            description = " ".join(parts)
        else:
            description = " ".join(rng.choice(words) for _ in range(rng.randint(8, 14)))
        tools.append((f"{rng.choice(words)}_{rng.choice(words)}_{i}", description))
    return tools


def menu(size: int) -> tuple[OfferedTool, ...]:
    """A menu of ``size`` tools, each with one parameter."""
    words = vocabulary()
    return tuple(
        OfferedTool(name, description, (ToolParameter(words[i % len(words)], "what it acts on"),))
        for i, (name, description) in enumerate(catalog(size))
    )


def _subjects(tools: tuple[OfferedTool, ...], count: int, seed: int = 2) -> list[Subject]:
    rng = random.Random(seed)
    subjects = []
    for number in range(count):
        tool = tools[rng.randrange(len(tools))]
        span = f"{number:016x}"
        call = LLMCall(
            span_id=span,
            trace_id=_TRACE,
            offered_tools=tools,
            tool_calls=(ToolCall(tool.name, "c0"),),
            user_text=f"please {tool.description}",
        )
        subjects.append(Subject(span_id=span, trace_id=_TRACE, llm_call=call))
    return subjects


class DenseHashingEmbedder:
    """Hashing features turned by a fixed random rotation into dense 384-dimension unit vectors: the
    shape of MiniLM's vectors (every dimension non-zero), at the hashing embedder's speed, so a
    100 000-tool menu builds in seconds and the dense scan path is what is timed."""

    def __init__(self, dims: int = 384, seed: int = 5) -> None:
        self._hashing = HashingEmbedder(dims)
        rotation, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((dims, dims)))
        self._rotation = rotation.astype(np.float32)

    @property
    def id(self) -> str:
        return f"dense-{self._hashing.id}"

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return l2_normalised(self._hashing.embed(texts) @ self._rotation)


def _per_call_ms(check: ToolChoiceCheck, subjects: Sequence[Subject]) -> float:
    check.evaluate(subjects[:1])  # builds the index / fills the tool index
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for subject in subjects:
            check.evaluate([subject])
        best = min(best, time.process_time() - start)
    return best / len(subjects) * 1e3


def scoring_rows(
    sizes: Sequence[int] = (1000, 10_000, 100_000), embedder: Embedder | None = None
) -> list[dict[str, Any]]:
    """Per-call ms through the menu index against ranking the whole menu, same check otherwise."""
    rows = []
    embedder = embedder if embedder is not None else HashingEmbedder()
    for size in sizes:
        tools = menu(size)
        subjects = _subjects(tools, 20)
        indexed = ToolChoiceCheck(embedder, keep_calls=False)
        indexed_ms = _per_call_ms(indexed, subjects)
        saved = _batch_scorer.INDEX_MENU_TOOLS
        _batch_scorer.INDEX_MENU_TOOLS = 10**9
        try:
            whole = ToolChoiceCheck(
                embedder, keep_calls=False, tool_index=ToolIndex(embedder, max_tools=2 * size + 10)
            )
            whole_ms = _per_call_ms(whole, subjects)
        finally:
            _batch_scorer.INDEX_MENU_TOOLS = saved
        path = "index" if size > saved else "numpy (below the index threshold)"
        rows.append(
            row(
                f"large_menus.scoring.{size}_tools[{embedder.id}]",
                indexed_ms,
                "ms/call",
                whole_ms,
                "<= 50 ms per call (baseline: ranking the whole menu in numpy)",
                path=path,
            )
        )
        del indexed, whole
    return rows


def _seconds(action: Callable[[], object]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def crossover_rows(sizes: Sequence[int] = (2000, 5000, 10_000, 20_000, 40_000)) -> list[dict[str, Any]]:
    """Neighbour search, exact numpy vs FAISS IVF, and the index's recall of the exact pairs."""
    rows = []
    embedder = HashingEmbedder()
    tools = catalog(max(sizes))
    vectors_all = embedder.embed([confusability_text(name, description) for name, description in tools])
    for size in sizes:
        vectors = vectors_all[:size]
        exact_s, exact = _seconds(lambda v=vectors: exact_pairs(v, min_similarity=0.80, min_k=10))
        index_s, found = _seconds(lambda v=vectors: approximate_pairs(v, min_similarity=0.80, min_k=10))
        above = {pair for pair, sim in exact.items() if sim >= 0.80}
        recall = len(above & set(found)) / len(above) if above else 1.0
        rows.append(
            row(
                f"large_menus.lint_neighbours.{size}_tools[hashing-512]",
                index_s,
                "s",
                exact_s,
                "report: the crossover is where the ratio falls below 1",
                recall=round(recall, 4),
                pairs=len(above),
            )
        )
    return rows


def lint_rows(size: int = 100_000) -> list[dict[str, Any]]:
    """Lint a ``size``-tool catalog with the hashing embedder, wall time end to end."""
    tools = [
        CatalogTool(name, f"{description}. Use when the record is known.")
        for name, description in catalog(size)
    ]
    seconds, report = _seconds(lambda: lint_catalog(tools, embedder=HashingEmbedder()))
    return [
        row(
            f"large_menus.lint.{size}_tools[hashing-512]",
            seconds,
            "s",
            None,
            "minutes, not hours",
            confusable=len(report.confusable),
            watch=len(report.watch),
        )
    ]


def full() -> bool:
    """Whether ``$SHAPECHECK_BENCH_FULL`` asks for the issue's sizes."""
    return os.environ.get(FULL_ENV, "").strip().lower() in {"1", "true", "yes"}


def run() -> list[dict[str, Any]]:
    """Every row of this benchmark, at the default or (``$SHAPECHECK_BENCH_FULL``) the full sizes."""
    dense = DenseHashingEmbedder()
    if full():
        return scoring_rows() + scoring_rows((100_000,), dense) + crossover_rows() + lint_rows()
    return (
        scoring_rows((1000, 10_000))
        + scoring_rows((10_000,), dense)
        + crossover_rows((2000, 5000, 10_000, 20_000))
        + lint_rows(20_000)
    )


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row, ensure_ascii=False))
