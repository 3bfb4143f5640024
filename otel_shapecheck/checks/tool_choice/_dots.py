"""Dot products of a context with tool vectors whose rounding depends on the two vectors alone.

A BLAS matrix-vector product blocks its rows (four at a time, the rest one by one, split across threads
for big matrices), so a tool's dot product differed in its last bits with its position on the menu, the
menu's size or the subset rescored. ``np.vecdot`` over C-contiguous float64 rows takes one BLAS dot per
row (the same sum as ``row @ query``), and numpy's ``einsum``, used where numpy predates ``vecdot``, sums
each row with one loop whatever the matrix's shape: either way a tool scores the same number on any
menu, in any batch, in every process.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

_vecdot: Callable[..., Any] | None = getattr(np, "vecdot", None)  # numpy 2.0 and later


def row_dots(matrix: npt.ArrayLike, query: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``matrix @ query`` row by row, each row's sum independent of the other rows and of its position."""
    rows = np.ascontiguousarray(matrix, dtype=np.float64)
    vector = np.ascontiguousarray(query, dtype=np.float64)
    if _vecdot is not None:
        return np.asarray(_vecdot(rows, vector), dtype=np.float64)
    return np.asarray(np.einsum("ij,j->i", rows, vector), dtype=np.float64)
