"""Plane-wave directions of the directional far field: the cube's faces cut into q x q cells.

Level l of the cluster tree uses the 6 q_l^2 unit vectors through the cells' centres (q_l = 0:
the one direction 0, no modulation, for clusters a few wavelengths across at most). q halves
at most from a level to the next one down, so every direction of a level lies in a cell of
its children's coarser grid: `coarser` maps it there (the nesting the transfers need).
"""
from __future__ import annotations

import numpy as np


def count(q: int) -> int:
    return 6 * q * q if q else 1


def vectors(q: int) -> np.ndarray:
    """The (count(q), 3) unit directions of grid q; index f q^2 + a q + b for face f (axis
    f // 2, sign + for even f) and cell (a, b) of its other two axes."""
    if q == 0:
        return np.zeros((1, 3))
    f, a, b = np.unravel_index(np.arange(6 * q * q), (6, q, q))
    axis, sign = f // 2, np.where(f % 2 == 0, 1.0, -1.0)
    v = np.empty((len(f), 3))
    rows = np.arange(len(f))
    v[rows, axis] = sign
    v[rows, (axis + 1) % 3] = -1.0 + (2 * a + 1) / q
    v[rows, (axis + 2) % 3] = -1.0 + (2 * b + 1) / q
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def nearest(d: np.ndarray, q: int) -> np.ndarray:
    """Index in grid q of the cell each direction d (n, 3; any length > 0) points through."""
    d = np.asarray(d, float).reshape(-1, 3)
    if q == 0:
        return np.zeros(len(d), np.int64)
    axis = np.argmax(np.abs(d), axis=1)
    rows = np.arange(len(d))
    big = d[rows, axis]
    f = 2 * axis + (big < 0)
    u = d[rows, (axis + 1) % 3] / np.abs(big)
    v = d[rows, (axis + 2) % 3] / np.abs(big)
    a = np.clip(np.floor((u + 1) * 0.5 * q), 0, q - 1).astype(np.int64)
    b = np.clip(np.floor((v + 1) * 0.5 * q), 0, q - 1).astype(np.int64)
    return (f * q + a) * q + b


def coarser(index: np.ndarray, q: int, q_child: int) -> np.ndarray:
    """The child grid's cell holding each direction `index` of grid q (q_child divides q)."""
    index = np.asarray(index, np.int64)
    if q_child == 0:
        return np.zeros_like(index)
    f, a, b = np.unravel_index(index, (6, q, q))
    ratio = q // q_child
    return (f * q_child + a // ratio) * q_child + b // ratio


def level_grids(kd: np.ndarray, low: float, cells_per_kd: float) -> np.ndarray:
    """q of each level from k times its clusters' largest diameter, root first: 0 where
    kd <= low, else the power of two >= kd / cells_per_kd, never more than the level above
    (powers of two: each grid refines the next one down, the nesting `coarser` needs)."""
    out = np.zeros(len(kd), np.int64)
    for level, x in enumerate(kd):
        want = 0 if x <= low else 1 << int(np.ceil(np.log2(max(x / cells_per_kd, 1.0))))
        out[level] = min(want, out[level - 1]) if level else want
    return out
