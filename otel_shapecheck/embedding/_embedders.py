"""Embedders: text to L2-normalised float32 vectors, for tool-choice margins and the catalog lint.

The default is all-MiniLM-L6-v2 as an int8 ONNX model run with onnxruntime and tokenizers, fully
offline (:class:`MiniLMEmbedder`, in :mod:`~otel_shapecheck.embedding._minilm`). A numpy-only
embedder serves dependency-light installs (:class:`HashingEmbedder`). Every embedder cuts a text to a
bounded length before it tokenises or hashes it, so one hostile text costs bounded time.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Final

import numpy as np

from otel_shapecheck import _settings
from otel_shapecheck.embedding._minilm import MiniLMEmbedder
from otel_shapecheck.embedding._vectors import Embedder, FloatMatrix, capped, l2_normalised

__all__ = [
    "Embedder",
    "FloatMatrix",
    "HashingEmbedder",
    "MAX_HASHED_CHARS",
    "MiniLMEmbedder",
    "l2_normalised",
]

MAX_HASHED_CHARS: Final = 16_384
"""Characters of a text the hashing embedder reads; the rest is not hashed."""
_MAX_CACHED_WORDS = 200_000
_MAX_CACHED_WORD_CHARS = 32  # bounds the word cache to about 200 000 × 34 slots

_WORD = re.compile(r"[0-9a-z]+")


class HashingEmbedder:
    """A deterministic bag-of-features embedder that needs nothing but numpy.

    Features are lowercase words and character trigrams inside ``#word#`` boundaries, hashed with
    BLAKE2b into ``dims`` signed buckets (stable across processes, unlike ``hash()``). It captures lexical
    overlap only, which is enough for tests and for installs that cannot run the ONNX model. A text is
    read up to :data:`MAX_HASHED_CHARS` characters.
    """

    def __init__(self, dims: int = 512) -> None:
        self._dims = _settings.positive_int("dims", dims, None, 512)
        self._word_cache: dict[str, list[int]] = {}

    @property
    def id(self) -> str:
        """``hashing-<dims>``."""
        return f"hashing-{self._dims}"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Signed feature-hashing counts, L2-normalised."""
        dims = self._dims
        matrix = np.zeros((len(texts), dims), dtype=np.float32)
        for row, text in enumerate(texts):
            slots: list[int] = []
            for word in _WORD.findall(capped(text, MAX_HASHED_CHARS).lower()):
                cached = self._word_cache.get(word)
                if cached is None:
                    cached = self._word_slots(word)
                slots.extend(cached)
            if slots:
                counts = np.bincount(slots, minlength=2 * dims)
                matrix[row] = counts[:dims] - counts[dims:]
        return l2_normalised(matrix)

    def _word_slots(self, word: str) -> list[int]:
        """The word's features as slots: ``bucket`` for a +1, ``dims + bucket`` for a −1."""
        padded = f"#{word}#"
        features = ["w:" + word, *("c:" + padded[i : i + 3] for i in range(len(padded) - 2))]
        slots = []
        for feature in features:
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            bucket = digest % self._dims
            slots.append(bucket if (digest >> 63) & 1 else self._dims + bucket)
        if len(word) <= _MAX_CACHED_WORD_CHARS and len(self._word_cache) < _MAX_CACHED_WORDS:
            self._word_cache[word] = slots
        return slots
