"""Dot products of a context with tool vectors whose rounding depends on the two vectors alone.

A BLAS matrix-vector product blocks its rows (four at a time, the rest one by one, split across threads
for big matrices), so a tool's dot product could differ in its last bits with its position on the menu,
the menu's size or the subset rescored. numpy's ``einsum`` over a C-contiguous float64 matrix sums each
row with the same loop whatever the matrix's shape, so a tool scores the same number on any menu, in any
batch, in every process.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def row_dots(matrix: npt.ArrayLike, query: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """``matrix @ query`` row by row, each row's sum independent of the other rows and of its position."""
    rows = np.ascontiguousarray(matrix, dtype=np.float64)
    vector = np.ascontiguousarray(query, dtype=np.float64)
    dots: npt.NDArray[np.float64] = np.einsum("ij,j->i", rows, vector)
    return dots
