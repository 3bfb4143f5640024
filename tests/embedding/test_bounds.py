"""Bounds of the embedding layer: length buckets within their budgets, neighbour search close to exact."""

from __future__ import annotations

import random

import numpy as np
import pytest

from otel_shapecheck.embedding._buckets import length_buckets, padded_tokens
from otel_shapecheck.embedding._neighbours import approximate_pairs, exact_pairs
from otel_shapecheck.embedding._vectors import l2_normalised


class TestBuckets:
    @pytest.mark.parametrize("seed", range(5))
    def test_buckets_cover_every_text_within_the_bounds(self, seed: int) -> None:
        """Each text runs once; every run is within the token and size bounds; padding stays small."""
        rng = random.Random(seed)
        lengths = [rng.choice([rng.randint(3, 30), rng.randint(30, 256)]) for _ in range(300)]
        groups = length_buckets(lengths, max_batch_tokens=512, max_batch_size=64)
        assert sorted(i for group in groups for i in group) == list(range(len(lengths)))
        for group in groups:
            assert len(group) <= 64 and len(group) * max(lengths[i] for i in group) <= 512
        assert padded_tokens(lengths, groups) <= 1.3 * sum(lengths)

    def test_a_text_longer_than_the_budget_runs_alone(self) -> None:
        """A 256-token text under a 100-token budget is its own run."""
        assert length_buckets([256, 5, 5], max_batch_tokens=100, max_batch_size=64) == [[1, 2], [0]]


class TestNeighbours:
    def test_the_index_finds_what_exact_search_finds(self) -> None:
        """On clustered vectors the FAISS index recalls at least 99 % of the exact pairs."""
        rng = np.random.default_rng(5)
        centres = rng.normal(size=(300, 64))
        vectors = l2_normalised(
            centres[rng.integers(0, 300, size=6000)] + rng.normal(scale=0.25, size=(6000, 64))
        )
        exact = exact_pairs(vectors, min_similarity=0.8, min_k=1)
        found = approximate_pairs(vectors, min_similarity=0.8, min_k=1)
        above = {pair for pair, sim in exact.items() if sim >= 0.8}
        recall = len(above & set(found)) / len(above)
        assert recall >= 0.99
