"""Embedding around failing texts: only the texts an embedder refuses are left out, in few calls."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from otel_shapecheck import HashingEmbedder
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._isolate import embed_around_failures


class RefusingEmbedder(HashingEmbedder):
    """The hashing embedder, raising on any call that includes one of the ``refused`` texts."""

    def __init__(self, refused: Sequence[str] = (), *, down: bool = False) -> None:
        super().__init__()
        self.refused = frozenset(refused)
        self.down = down
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.down or self.refused.intersection(texts):
            raise RuntimeError("refused")
        return super().embed(texts)


TEXTS = [f"text number {i}" for i in range(64)]


def test_a_batch_that_embeds_costs_one_call() -> None:
    embedder = RefusingEmbedder()
    embedded = embed_around_failures(embedder, TEXTS)
    assert embedder.calls == 1
    assert embedded.failed == frozenset()
    assert list(embedded.vectors) == TEXTS
    np.testing.assert_array_equal(np.stack(list(embedded.vectors.values())), HashingEmbedder().embed(TEXTS))


@pytest.mark.parametrize("size", [2, 3, 30, 64, 1000])
def test_one_refused_text_is_isolated_by_bisection(size: int) -> None:
    texts = [f"text number {i}" for i in range(size)]
    embedder = RefusingEmbedder([texts[size // 3]])
    embedded = embed_around_failures(embedder, texts)
    assert embedded.failed == {texts[size // 3]}
    assert set(embedded.vectors) == set(texts) - {texts[size // 3]}
    assert embedder.calls == embedded.calls <= 1 + 2 * math.ceil(math.log2(size))


def test_many_refused_texts_cost_at_most_two_calls_per_text() -> None:
    refused = [*TEXTS[:16:2], TEXTS[40]]
    embedder = RefusingEmbedder(refused)
    embedded = embed_around_failures(embedder, TEXTS)
    assert embedded.failed == frozenset(refused)
    assert set(embedded.vectors) == set(TEXTS) - set(refused)
    assert embedder.calls <= 2 * len(TEXTS) - 1


@pytest.mark.parametrize(("size", "most_calls"), [(1, 1), (2, 3), (3, 5), (64, 7)])
def test_an_embedder_that_embeds_nothing_is_down_and_its_error_raised(size: int, most_calls: int) -> None:
    embedder = RefusingEmbedder(down=True)
    with pytest.raises(RuntimeError, match="refused"):
        embed_around_failures(embedder, TEXTS[:size])
    assert embedder.calls <= most_calls


def test_behind_the_cache_the_texts_that_embedded_are_cached_and_the_refused_one_is_not() -> None:
    inner = RefusingEmbedder([TEXTS[5]])
    cache = EmbeddingCache(inner)
    embed_around_failures(cache, TEXTS)
    calls = inner.calls
    again = embed_around_failures(cache, [text for text in TEXTS if text != TEXTS[5]])
    assert inner.calls == calls  # all cached: no inner call
    assert again.failed == frozenset()
    with pytest.raises(RuntimeError):
        cache.embed([TEXTS[5]])
