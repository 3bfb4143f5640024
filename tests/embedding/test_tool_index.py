"""The FAISS tool index: each tool text embedded once, exact menu vectors, complete k-NN pairs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_shapecheck import HashingEmbedder
from otel_shapecheck.embedding._embedders import l2_normalised
from otel_shapecheck.embedding._tool_index import ToolIndex

from .embedders import CharCountEmbedder, CountingEmbedder


class TestMenuVectors:
    def test_each_distinct_text_is_embedded_once(self) -> None:
        """Asking again for known texts, in any order or mix, embeds only the new ones."""
        counting = CountingEmbedder(HashingEmbedder())
        index = ToolIndex(counting)
        index.vectors(["a: one", "b: two"])
        index.vectors(["b: two", "c: three", "a: one"])
        assert counting.texts == ["a: one", "b: two", "c: three"]
        assert len(index) == 3

    def test_menu_vectors_are_exact(self) -> None:
        """Vectors read back for a menu equal the embedder's, in menu order."""
        embedder = HashingEmbedder()
        index = ToolIndex(embedder)
        index.vectors(["x tool", "y tool", "z tool"])
        np.testing.assert_array_equal(
            index.vectors(["z tool", "x tool"]), embedder.embed(["z tool", "x tool"])
        )

    def test_fresh_vectors_are_used_without_embedding(self) -> None:
        """Vectors handed in as ``fresh`` fill the index without another embed call."""
        counting = CountingEmbedder(HashingEmbedder())
        index = ToolIndex(counting)
        fresh = dict(zip(["p", "q"], HashingEmbedder().embed(["p", "q"]), strict=True))
        assert index.missing(["p", "q", "p"]) == ["p", "q"]
        index.vectors(["p", "q"], fresh)
        assert counting.calls == 0 and index.missing(["p", "q"]) == []

    def test_bounded_index_starts_over(self) -> None:
        """Past ``max_tools`` the index resets and keeps serving the current request."""
        index = ToolIndex(HashingEmbedder(), max_tools=3)
        index.vectors(["a", "b", "c"])
        vectors = index.vectors(["d", "a"])
        assert index.resets == 1 and len(index) == 2
        np.testing.assert_array_equal(vectors, HashingEmbedder().embed(["d", "a"]))


def _brute_force_pairs(vectors: np.ndarray, min_similarity: float) -> dict[tuple[int, int], float]:
    sims = vectors @ vectors.T
    n = len(vectors)
    return {
        (i, j): float(sims[i, j]) for i in range(n) for j in range(i + 1, n) if sims[i, j] >= min_similarity
    }


class TestNeighbours:
    @settings(max_examples=25, deadline=None)
    @given(
        st.integers(min_value=2, max_value=120),
        st.floats(min_value=0.0, max_value=0.95),
        st.integers(min_value=0, max_value=2**31),
    )
    def test_finds_every_pair_above_the_bound(self, n: int, bound: float, seed: int) -> None:
        """k-NN with growing k returns exactly the pairs brute force finds at or above the bound."""
        rng = np.random.default_rng(seed)
        centres = rng.normal(size=(3, 8))
        raw = centres[rng.integers(0, 3, size=n)] + rng.normal(scale=0.3, size=(n, 8))
        vectors = l2_normalised(raw)
        texts = [f"tool {i}" for i in range(n)]
        planted = dict(zip(texts, vectors, strict=True))
        index = ToolIndex(HashingEmbedder())
        index.vectors(texts, planted)
        found = index.neighbours(texts, min_similarity=bound, min_k=0)
        expected = _brute_force_pairs(vectors, bound)
        above = {pair: sim for pair, sim in found.items() if sim >= bound}
        assert set(above) == set(expected)
        for pair, sim in expected.items():
            assert above[pair] == pytest.approx(sim, abs=1e-5)

    def test_searches_only_the_given_texts(self) -> None:
        """When the index holds other tools, pairs involve only the asked-for texts."""
        index = ToolIndex(CharCountEmbedder())
        index.vectors([f"other tool number {i}" for i in range(50)])
        texts = ["weather in paris", "weather in rome", "send an email"]
        found = index.neighbours(texts, min_similarity=-1.0, min_k=5)
        assert set(found) == {(0, 1), (0, 2), (1, 2)}
