"""What every embedder shares: the protocol, the vector type, L2 normalisation and the text cap.

Kept apart from the embedders themselves so that the MiniLM module and the numpy-only ones depend on it
without depending on each other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

FloatMatrix = npt.NDArray[np.float32]
"""A ``(n, dims)`` float32 matrix, one row per text."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose inner products are cosine similarities.

    ``embed`` returns a ``(len(texts), dims)`` float32 array with L2-normalised rows (an all-zero row is
    allowed for text with no features; it scores 0 against everything). ``id`` names the model: two
    embedders with the same id must produce the same vectors, since caches and indexes key on it.
    """

    @property
    def id(self) -> str:
        """Which model produced the vectors (written to ``shapecheck.tool_choice.embedder``)."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts`` in order."""
        ...


def l2_normalised(matrix: npt.ArrayLike) -> FloatMatrix:
    """Rows scaled to unit length; all-zero rows stay zero (so their cosines are 0, never NaN)."""
    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    np.maximum(norms, np.finfo(np.float32).tiny, out=norms)
    return np.ascontiguousarray(rows / norms, dtype=np.float32)


def capped(text: str, max_chars: int) -> str:
    """``text`` cut to its first ``max_chars`` characters (the whole text when it is shorter)."""
    return text if len(text) <= max_chars else text[:max_chars]
