"""Embedders for the tests: the reference's char-count mock, planted vectors, call counters (one of them
keepable in the embedding cache file)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from otel_shapecheck import Embedder
from otel_shapecheck.embedding._embedders import FloatMatrix, l2_normalised


class CharCountEmbedder:
    """The reference's mock: coordinate ``i`` counts the UTF-16 code units ``c`` with ``c % dims == i``.

    It compresses unrelated prose into cosines of about 0.85–0.97, so only relative order means anything;
    it exists so the parity vectors of the ported rules can be checked exactly.
    """

    def __init__(self, dims: int = 32) -> None:
        self._dims = dims

    @property
    def id(self) -> str:
        """``char-count-<dims>``."""
        return f"char-count-{self._dims}"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Character-code histograms, L2-normalised."""
        counts = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            units = np.frombuffer(text.encode("utf-16-le", "surrogatepass"), dtype="<u2")
            counts[row] = np.bincount(units % self._dims, minlength=self._dims)
        return l2_normalised(counts)


class PlantedEmbedder:
    """Maps a text to the vector of the first key it contains (keys in order), else ``fallback``."""

    def __init__(self, planted: Sequence[tuple[str, Sequence[float]]], fallback: Sequence[float]) -> None:
        self._planted = [(key, np.asarray(vector, dtype=np.float32)) for key, vector in planted]
        self._fallback = np.asarray(fallback, dtype=np.float32)
        self.id = "planted"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        rows = [next((v for key, v in self._planted if key in text), self._fallback) for text in texts]
        return l2_normalised(np.stack(rows)) if rows else np.zeros((0, len(self._fallback)), np.float32)


class CountingEmbedder:
    """Wraps an embedder and counts its calls and the texts it was asked for."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self.calls = 0
        self.texts: list[str] = []

    @property
    def id(self) -> str:
        return self._inner.id

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        with self._lock:
            self.calls += 1
            self.texts.extend(texts)
        return self._inner.embed(texts)


class KeptCountingEmbedder(CountingEmbedder):
    """A :class:`CountingEmbedder` that names an identity, so the embedding cache keeps its vectors on disk.

    Its identity is the inner embedder's own (``cache_identity`` when it has one, else ``id``) plus
    ``version``, so two of them with different versions share nothing.
    """

    def __init__(self, inner: Embedder, dims: int, version: str = "1") -> None:
        super().__init__(inner)
        self._dims = dims
        self._version = version

    @property
    def cache_identity(self) -> str:
        inner = getattr(self._inner, "cache_identity", self._inner.id)
        return f"{inner}|test-version={self._version}"

    @property
    def dims(self) -> int:
        return self._dims
