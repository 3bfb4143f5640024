"""Similar pairs among many vectors, for the catalog lint: exact numpy below a crossover, FAISS above it.

Below :data:`EXACT_MAX_VECTORS` the lint compares every pair with blocked numpy matrix products (exact,
and faster than any index at that size: FAISS was 1.4–5.4× slower than a numpy product at 1 000–10 000
tools). Above it, an inverted-file FAISS index (``IndexIVFFlat``, inner product, ``4 √n`` lists
trained on a sample, :data:`IVF_NPROBE` probed) finds each vector's neighbours without comparing all
pairs; the crossover and the recall against exact search are measured by
``benchmarks/bench_large_menus.py``.

Both return the same thing: every pair at or above ``min_similarity``, plus each vector's ``min_k``
nearest others. With the index, a vector's ``k`` grows until its ``k``-th neighbour falls below the
bound, so the result is complete up to the index's recall.
"""

from __future__ import annotations

import math
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck._native import native_section
from otel_shapecheck.embedding._vectors import FloatMatrix

EXACT_MAX_VECTORS: Final = 20_000
"""At or below this many vectors the lint compares all pairs exactly (the measured crossover)."""
IVF_NPROBE: Final = 32
"""Inverted lists probed per query: the measured neighbour recall is ≥ 0.99 against exact search."""
_BLOCK_CELLS = 1 << 24  # similarities computed per numpy block (64 MiB of float32)
_TRAIN_PER_LIST = 40  # FAISS asks for 39 training points per list
_TRAIN_ITERATIONS = 10

Pairs = dict[tuple[int, int], float]


def neighbour_pairs(
    vectors: FloatMatrix, *, min_similarity: float, min_k: int = 1, exact: bool | None = None
) -> Pairs:
    """Pairs ``(i, j)``, ``i < j``, of rows of ``vectors`` (L2-normalised) and their inner product.

    ``exact`` forces one method; by default exact numpy up to :data:`EXACT_MAX_VECTORS` rows, else the
    approximate FAISS index.
    """
    count = len(vectors)
    if count < 2:
        return {}
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if exact is None:
        exact = count <= EXACT_MAX_VECTORS
    if exact:
        return exact_pairs(vectors, min_similarity=min_similarity, min_k=min_k)
    return approximate_pairs(vectors, min_similarity=min_similarity, min_k=min_k)


def exact_pairs(vectors: FloatMatrix, *, min_similarity: float, min_k: int) -> Pairs:
    """:func:`neighbour_pairs` by blocked all-pairs products (exact)."""
    count = len(vectors)
    nearest = min(min_k, count - 1)
    block = max(1, _BLOCK_CELLS // count)
    pairs: Pairs = {}
    for start in range(0, count, block):
        stop = min(count, start + block)
        sims = vectors[start:stop] @ vectors.T
        local = np.arange(stop - start)
        sims[local, local + start] = -np.inf
        rows, cols = np.nonzero(sims >= min_similarity)
        upper = cols > rows + start
        _merge(pairs, rows[upper] + start, cols[upper], sims[rows[upper], cols[upper]])
        if nearest:
            top = np.argpartition(-sims, nearest - 1, axis=1)[:, :nearest]
            near_rows = np.repeat(local, nearest)
            near_cols = top.reshape(-1)
            _merge(pairs, near_rows + start, near_cols, sims[near_rows, near_cols])
    return pairs


def approximate_pairs(vectors: FloatMatrix, *, min_similarity: float, min_k: int) -> Pairs:
    """:func:`neighbour_pairs` through a FAISS inverted-file index (approximate; recall measured)."""
    import faiss

    count, dims = vectors.shape
    lists = max(1, min(int(4 * math.sqrt(count)), count // _TRAIN_PER_LIST))
    with native_section():
        quantizer = faiss.IndexFlatIP(dims)
        index = faiss.IndexIVFFlat(quantizer, dims, lists, faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = _TRAIN_ITERATIONS
        sample = min(count, lists * _TRAIN_PER_LIST)
        chosen = np.random.default_rng(0).choice(count, size=sample, replace=False)
        index.train(vectors[np.sort(chosen)])
        index.add(vectors)
        index.nprobe = min(lists, IVF_NPROBE)
    pairs: Pairs = {}
    pending = np.arange(count)
    k = min(count, max(min_k + 1, 16))
    while pending.size:
        with native_section():
            sims, found = index.search(vectors[pending], k)
        rows = np.repeat(pending, k)
        cols = found.reshape(-1)
        values = sims.reshape(-1)
        useful = (cols >= 0) & (cols != rows)
        rank = np.tile(np.arange(k), pending.size)
        useful &= (values >= min_similarity) | (rank <= min_k)
        _merge(pairs, rows[useful], cols[useful], values[useful])
        if k >= count:
            break
        pending = pending[(found[:, -1] >= 0) & (sims[:, -1] >= min_similarity)]
        k = min(count, k * 2)
    return pairs


def _merge(
    pairs: Pairs, rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp], sims: npt.NDArray[np.float32]
) -> None:
    low = np.minimum(rows, cols).tolist()
    high = np.maximum(rows, cols).tolist()
    for i, j, sim in zip(low, high, sims.tolist(), strict=True):
        pair = (i, j)
        if sim > pairs.get(pair, -math.inf):
            pairs[pair] = sim
