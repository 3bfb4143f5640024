"""The embedding cache: LRU bound, single flight, failures not cached, counters."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from otel_shapecheck import Embedder, HashingEmbedder
from otel_shapecheck.embedding._cache import CacheStats, EmbeddingCache
from otel_shapecheck.embedding._embedders import FloatMatrix

from .embedders import CharCountEmbedder, CountingEmbedder


class GatedEmbedder:
    """Blocks inside ``embed`` until released, so concurrent requests overlap for certain."""

    id = "gated"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.calls = 0
        self.fail = False

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls += 1
        self.entered.set()
        assert self.release.wait(10)
        if self.fail:
            raise RuntimeError("embedding service down")
        return CharCountEmbedder().embed(texts)


class FlakyEmbedder:
    """Fails on its first call, then works."""

    id = "flaky"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("transient")
        return CharCountEmbedder().embed(texts)


class TestEmbeddingCache:
    def test_is_an_embedder_with_the_inner_id_and_vectors(self) -> None:
        """The cache satisfies the Embedder protocol and changes no vector."""
        inner = HashingEmbedder()
        cache = EmbeddingCache(inner)
        assert isinstance(cache, Embedder)
        assert cache.id == inner.id
        np.testing.assert_array_equal(cache.embed(["a b", "c"]), inner.embed(["a b", "c"]))

    def test_repeats_are_hits_and_only_misses_reach_the_inner_embedder(self) -> None:
        """Within a batch and across batches, a text is fetched once; repeats count as hits."""
        counting = CountingEmbedder(CharCountEmbedder())
        cache = EmbeddingCache(counting)
        cache.embed(["x", "y", "x"])
        cache.embed(["y", "z"])
        assert counting.texts == ["x", "y", "z"]
        assert cache.stats() == CacheStats(size=3, max_entries=1024, hits=2, misses=3, evictions=0)

    def test_lru_bound_evicts_the_least_recently_used(self) -> None:
        """A hit refreshes an entry, so the oldest untouched one is evicted first."""
        counting = CountingEmbedder(CharCountEmbedder())
        cache = EmbeddingCache(counting, max_entries=2)
        cache.embed(["a", "b"])
        cache.embed(["a"])
        cache.embed(["c"])
        assert cache.stats().evictions == 1
        cache.embed(["a"])
        cache.embed(["b"])
        assert counting.texts == ["a", "b", "c", "b"]
        assert cache.stats().size == 2

    def test_returned_vectors_are_copies(self) -> None:
        """Writing to a returned array does not change the cached vector."""
        cache = EmbeddingCache(CharCountEmbedder())
        first = cache.embed(["abc"])
        first[:] = 0
        assert np.linalg.norm(cache.embed(["abc"])) == pytest.approx(1.0)

    def test_clear_drops_vectors_but_keeps_counters(self) -> None:
        """``clear()`` empties the cache; hits and misses keep counting."""
        cache = EmbeddingCache(CharCountEmbedder())
        cache.embed(["a", "a"])
        cache.clear()
        assert cache.stats() == CacheStats(size=0, max_entries=1024, hits=1, misses=1, evictions=0)
        cache.embed(["a"])
        assert cache.stats().misses == 2

    def test_failures_are_not_cached(self) -> None:
        """A failed inner call raises, leaves nothing behind, and the next request tries again."""
        flaky = FlakyEmbedder()
        cache = EmbeddingCache(flaky)
        with pytest.raises(RuntimeError, match="transient"):
            cache.embed(["a"])
        assert cache.stats().size == 0
        assert cache.embed(["a"]).shape == (1, 32)
        assert flaky.calls == 2

    def test_concurrent_requests_share_one_inner_call(self) -> None:
        """Threads asking for the same text while it is in flight join that call and count as hits."""
        gated = GatedEmbedder()
        cache = EmbeddingCache(gated)
        with ThreadPoolExecutor(max_workers=4) as pool:
            first = pool.submit(cache.embed, ["same text"])
            assert gated.entered.wait(10)
            joiners = [pool.submit(cache.embed, ["same text"]) for _ in range(3)]
            while cache.stats().hits < 3:
                threading.Event().wait(0.001)
            gated.release.set()
            vectors = [first.result(10)] + [joiner.result(10) for joiner in joiners]
        assert gated.calls == 1
        for vector in vectors[1:]:
            np.testing.assert_array_equal(vector, vectors[0])
        assert cache.stats().hits == 3 and cache.stats().misses == 1

    def test_joiners_share_a_failure_and_it_is_not_cached(self) -> None:
        """When the shared call fails, every waiter sees the error and nothing is cached."""
        gated = GatedEmbedder()
        gated.fail = True
        cache = EmbeddingCache(gated)
        with ThreadPoolExecutor(max_workers=2) as pool:
            first = pool.submit(cache.embed, ["t"])
            assert gated.entered.wait(10)
            joiner = pool.submit(cache.embed, ["t"])
            while cache.stats().hits < 1:
                threading.Event().wait(0.001)
            gated.release.set()
            for future in (first, joiner):
                with pytest.raises(RuntimeError, match="service down"):
                    future.result(10)
        assert cache.stats().size == 0

    @pytest.mark.parametrize("bad", [0, -1, True, 2.5])
    def test_max_entries_must_be_a_positive_int(self, bad: object) -> None:
        """A bad bound fails at construction, naming the setting."""
        with pytest.raises(ValueError, match="max_entries"):
            EmbeddingCache(CharCountEmbedder(), max_entries=bad)  # type: ignore[arg-type]

    def test_bound_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES sets the default bound."""
        monkeypatch.setenv("OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES", "7")
        assert EmbeddingCache(CharCountEmbedder()).stats().max_entries == 7


class TestNumpyEmbedders:
    def test_char_count_counts_code_units_modulo_dims(self) -> None:
        """Coordinate i of the mock counts characters whose code % dims == i (before normalisation)."""
        vector = CharCountEmbedder(dims=4).embed(["aab"])[0]  # 'a' = 97 → 1, 'b' = 98 → 2
        np.testing.assert_allclose(vector, np.array([0, 2, 1, 0]) / np.sqrt(5), rtol=1e-6)

    def test_empty_text_is_a_zero_vector(self) -> None:
        """Text with no features embeds to zeros, never NaN."""
        for embedder in (CharCountEmbedder(), HashingEmbedder()):
            vector = embedder.embed([""])
            assert not np.isnan(vector).any() and not vector.any()

    def test_hashing_is_deterministic_and_lexical(self) -> None:
        """Same text, same vector; shared words score higher than unrelated ones."""
        embedder = HashingEmbedder()
        a, b, c = embedder.embed(["get the weather forecast", "weather forecast for Paris", "send an email"])
        np.testing.assert_array_equal(a, HashingEmbedder().embed(["get the weather forecast"])[0])
        assert float(a @ b) > float(a @ c)
        assert embedder.id == "hashing-512"
