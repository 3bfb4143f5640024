"""Embedders for the tests: planted vectors (the reference's parity cases) and a call counter."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np

from otel_shapecheck import Embedder
from otel_shapecheck.checks.tool_choice._embedders import FloatMatrix, l2_normalised


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
