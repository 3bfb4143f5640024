"""Embedding a batch around the texts an embedder fails on, so one bad text costs only what needs it.

When the embed call of a batch raises, the batch is split in halves, breadth first, and each part is
embedded again until every failing text stands alone; the parts that embed are kept (and, behind an
:class:`~otel_shapecheck.embedding._cache.EmbeddingCache`, cached). One failing text among ``n`` costs
about ``2 log2 n`` more calls, and ``2n - 1`` is the most any batch costs, never ``n²``. An embedder
that fails on every part down to the batch's quarters (or on every single text of a smaller batch),
having embedded nothing, is down rather than refusing a text: the first error is raised, as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck.embedding._vectors import Embedder

logger = logging.getLogger(__name__)

DOWN_PARTS: Final = 4
"""Parts of a failed batch that must all fail, with nothing embedded, for the embedder to count as down."""

_logged_lock = threading.Lock()
_logged: set[str] = set()


@dataclass(frozen=True)
class Embedded:
    """The vectors of a batch's texts that embedded, the texts that did not, and the calls it took."""

    vectors: dict[str, npt.NDArray[np.float32]]
    failed: frozenset[str]
    calls: int


def embed_around_failures(embedder: Embedder, texts: Sequence[str]) -> Embedded:
    """Vectors of the distinct ``texts``; the ones the embedder raises on are isolated and left out.

    Raises the embedder's first error when it embeds nothing (it is down, not refusing one text).
    """
    batch = list(dict.fromkeys(texts))
    try:
        return Embedded(_embedded(embedder, batch), frozenset(), 1)
    except Exception as error:  # the embedder is a plug-in: any failure may be one text's
        first = error
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    failed: list[str] = []
    calls = 1
    level = _halves(batch) if len(batch) > 1 else []
    while level:
        failing = []
        for part in level:
            calls += 1
            try:
                vectors.update(_embedded(embedder, part))
            except Exception:
                failing.append(part)
        next_level = [half for part in failing if len(part) > 1 for half in _halves(part)]
        failed.extend(part[0] for part in failing if len(part) == 1)
        if not vectors and (len(level) >= DOWN_PARTS or not next_level):
            raise first
        level = next_level
    if not vectors:
        raise first
    _log_once(embedder, len(failed), len(batch), first)
    return Embedded(vectors, frozenset(failed), calls)


def _embedded(embedder: Embedder, texts: list[str]) -> dict[str, npt.NDArray[np.float32]]:
    """One embed call; a wrong number of vectors is a failure of that call."""
    matrix = np.asarray(embedder.embed(texts), dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != len(texts):
        raise ValueError(f"embedder {embedder.id!r} returned {matrix.shape[:1]} vectors for {len(texts)}")
    return dict(zip(texts, matrix, strict=True))


def _halves(texts: list[str]) -> list[list[str]]:
    middle = len(texts) // 2
    return [texts[:middle], texts[middle:]]


def _log_once(embedder: Embedder, failed: int, total: int, error: Exception) -> None:
    """The first batch of each embedder id that left texts out is logged (the error's type, never its
    message, which may quote the text); later ones only skip their calls."""
    with _logged_lock:
        first = embedder.id not in _logged
        _logged.add(embedder.id)
    if first:
        logger.warning(
            "embedder %r raised %s on %d of %d texts; the calls that need them are skipped as "
            "embedding-failed (logged once)",
            embedder.id,
            type(error).__name__,
            failed,
            total,
        )
