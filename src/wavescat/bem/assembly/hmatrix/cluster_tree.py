"""Cluster tree over dofs by bounding-box bisection.

Every cluster is split at the median of its dofs along the longest side of its bounding
box, so the two halves differ by at most one dof and all clusters of a level have
(almost) the same size: blocks of one level then batch into equal-shape arrays on the
GPU. Dofs are renumbered so that each cluster is a contiguous range [start, start+size)
of the permuted order; the tree is built level by level with array operations only.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numba as nb
import numpy as np

from ....defaults import HMATRIX
from ....errors import InputError, WavescatError


@dataclass(frozen=True, eq=False)
class ClusterTree:
    perm: np.ndarray  # tree position -> original dof
    leaf_size: int
    # per level l: start (n_l,), size (n_l,), box lo/hi (n_l, 3)
    starts: list
    sizes: list
    lo: list
    hi: list
    first_child: list  # per level but the last: index of the first child at level + 1
    n_children: list  # 2 when split, 1 when a leaf carried to the next level

    n = property(lambda self: len(self.perm), doc="number of dofs")
    depth = property(lambda self: len(self.starts), doc="number of levels")

    @cached_property
    def iperm(self) -> np.ndarray:
        """Original dof -> tree position."""
        inv = np.empty_like(self.perm)
        inv[self.perm] = np.arange(len(self.perm))
        return inv

    def diameters(self, level: int) -> np.ndarray:
        return np.linalg.norm(self.hi[level] - self.lo[level], axis=1)

    def is_leaf(self, level: int) -> np.ndarray:
        return self.sizes[level] <= self.leaf_size

    def truncated(self, leaf_size: int) -> "ClusterTree":
        """This tree down to its first level of clusters of at most `leaf_size` dofs, its
        leaves: the same numbering and clusters, coarser leaves (a HODLR tree whose blocks
        hold whole blocks of an H-matrix on this tree, hmatrix/tree_parts.py)."""
        last = next((lev for lev in range(self.depth) if self.sizes[lev].max() <= leaf_size),
                    self.depth - 1)
        return ClusterTree(self.perm, int(leaf_size), self.starts[:last + 1],
                           self.sizes[:last + 1], self.lo[:last + 1], self.hi[:last + 1],
                           self.first_child[:last], self.n_children[:last])


def _boxes(lo, hi, seg_starts, seg_sizes):
    """Bounding boxes of contiguous segments of the (permuted) per-dof boxes."""
    return (np.minimum.reduceat(lo, seg_starts, axis=0),
            np.maximum.reduceat(hi, seg_starts, axis=0))


@nb.njit(parallel=True, cache=True)
def _sort_segments(perm, key, starts, sizes):
    """perm with each segment [start, start + size) stably sorted by key."""
    out = np.empty_like(perm)
    for c in nb.prange(len(starts)):
        a, b = starts[c], starts[c] + sizes[c]
        order = np.argsort(key[a:b], kind="mergesort")
        for i in range(b - a):
            out[a + i] = perm[a + order[i]]
    return out


def build_cluster_tree(lo: np.ndarray, hi: np.ndarray, leaf_size: int = HMATRIX["leaf_size"]) -> ClusterTree:
    """Tree over dofs whose supports have bounding boxes [lo, hi] (each (n, 3))."""
    if not isinstance(leaf_size, (int, np.integer)) or leaf_size < 2:
        raise InputError(f"H-matrix leaf_size = {leaf_size!r}: must be an integer >= 2")
    lo = np.asarray(lo, float)
    hi = np.asarray(hi, float)
    n = len(lo)
    if n == 0:
        raise WavescatError("cannot build a cluster tree over 0 dofs")
    centre = 0.5 * (lo + hi)
    perm = np.arange(n)
    starts = [np.array([0])]
    sizes = [np.array([n])]
    blo, bhi = _boxes(lo, hi, starts[0], sizes[0])
    los, his = [blo], [bhi]
    first, count = [], []
    while sizes[-1].max() > leaf_size:
        st, sz = starts[-1], sizes[-1]
        axis = np.argmax(his[-1] - los[-1], axis=1)  # longest side per cluster
        owner = np.repeat(np.arange(len(st)), sz)
        key = centre[perm, axis[owner]]
        # Sort within each cluster by the split coordinate (clusters stay contiguous).
        perm = _sort_segments(perm, key, st, sz)
        split = sz > leaf_size
        half = sz // 2
        new_st = np.where(split[:, None], np.stack([st, st + half], 1),
                          np.stack([st, st + sz], 1))
        new_sz = np.where(split[:, None], np.stack([half, sz - half], 1),
                          np.stack([sz, np.zeros_like(sz)], 1))
        keep = new_sz.ravel() > 0
        nchild = np.where(split, 2, 1)
        count.append(nchild)
        first.append(np.cumsum(nchild) - nchild)
        nst, nsz = new_st.ravel()[keep], new_sz.ravel()[keep]
        starts.append(nst)
        sizes.append(nsz)
        blo, bhi = _boxes(lo[perm], hi[perm], nst, nsz)
        los.append(blo)
        his.append(bhi)
    return ClusterTree(perm, int(leaf_size), starts, sizes, los, his, first, count)
