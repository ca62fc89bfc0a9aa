"""Block cluster tree: the partition of the matrix into admissible (low-rank) and dense
blocks.

A pair of clusters (t, s) is admissible when min(diam t, diam s) <= eta dist(t, s) with
distances between the bounding boxes of the supports (touching supports are never
admissible). For the oscillatory Helmholtz kernel the rank of an eta-admissible block
grows with k diam (up to (k diam)^2), so at high frequency a few huge blocks of high rank
dominate the ACA's time and working memory and cannot be batched. With `kd_max` a pair is
admissible only when also k max(diam t, diam s) <= kd_max (unless neither cluster can be
split): each such block becomes many smaller ones of bounded size and rank, whose ACA work,
O(r^2 (m + n)) per block, falls with r, and which batch. Pairs are processed one level at
a time with array operations: admissible pairs become low-rank leaves, inadmissible pairs
of two leaf clusters become dense leaves, the rest are split into the products of their
children. Blocks are ranges of the
permuted dof orders of the row (test) and column (trial) trees.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....defaults import HMATRIX
from ....errors import InputError
from .cluster_tree import ClusterTree


@dataclass(frozen=True, eq=False)
class BlockTree:
    rows: ClusterTree
    cols: ClusterTree
    eta: float
    # admissible leaves: row start, rows, col start, cols, level
    far: dict
    # dense leaves
    near: dict

    @property
    def shape(self) -> tuple[int, int]:
        return self.rows.n, self.cols.n

    def coverage(self) -> np.ndarray:
        """How many blocks cover each entry (an (m, n) int array; for tests on small sizes)."""
        c = np.zeros(self.shape, dtype=np.int64)
        for b in (self.far, self.near):
            for r0, m, c0, n in zip(b["r0"], b["m"], b["c0"], b["n"]):
                c[r0:r0 + m, c0:c0 + n] += 1
        return c


def box_distance(lo1, hi1, lo2, hi2) -> np.ndarray:
    gap = np.maximum(0.0, np.maximum(lo1 - hi2, lo2 - hi1))
    return np.linalg.norm(gap, axis=-1)


def admissible(rows: ClusterTree, cols: ClusterTree, level_r, t, level_c, s, eta,
               k=0.0, kd_max=None, leaves=None) -> np.ndarray:
    """eta-admissibility; with kd_max also k max(diam) <= kd_max, except where `leaves`
    (no cluster of the pair can be split further)."""
    dt = np.linalg.norm(rows.hi[level_r][t] - rows.lo[level_r][t], axis=1)
    ds = np.linalg.norm(cols.hi[level_c][s] - cols.lo[level_c][s], axis=1)
    dist = box_distance(rows.lo[level_r][t], rows.hi[level_r][t],
                        cols.lo[level_c][s], cols.hi[level_c][s])
    adm = (dist > 0) & (np.minimum(dt, ds) <= eta * dist)
    if kd_max is not None and k:
        small = abs(k) * np.maximum(dt, ds) <= kd_max
        adm &= small if leaves is None else (small | leaves)
    return adm


def _empty():
    out = {k: np.zeros(0, np.int64) for k in ("r0", "m", "c0", "n", "level")}
    out["diam"] = np.zeros(0)
    return out


def build_block_tree(rows: ClusterTree, cols: ClusterTree, eta: float = HMATRIX["eta"],
                     k: float = 0.0, kd_max: float | None = HMATRIX["kd_max"]) -> BlockTree:
    """Block tree for wavenumber `k` (0: no frequency condition); kd_max None: none."""
    if not (np.isfinite(eta) and eta > 0):
        raise InputError(f"H-matrix eta = {eta!r}: must be a positive number")
    if kd_max is not None and not (np.isfinite(kd_max) and kd_max > 0):
        raise InputError(f"H-matrix kd_max = {kd_max!r}: must be a positive number or null")
    far, near = [], []
    t = np.array([0])
    s = np.array([0])
    level = 0
    while len(t):
        lr, lc = min(level, rows.depth - 1), min(level, cols.depth - 1)
        rleaf = (lr == rows.depth - 1) | rows.is_leaf(lr)[t]
        cleaf = (lc == cols.depth - 1) | cols.is_leaf(lc)[s]
        adm = admissible(rows, cols, lr, t, lc, s, eta, k, kd_max, rleaf & cleaf)
        dense = ~adm & rleaf & cleaf
        split = ~adm & ~dense

        def record(mask, out):
            tt, ss = t[mask], s[mask]
            out.append({"r0": rows.starts[lr][tt], "m": rows.sizes[lr][tt],
                        "c0": cols.starts[lc][ss], "n": cols.sizes[lc][ss],
                        "level": np.full(len(tt), level),
                        "diam": np.maximum(rows.diameters(lr)[tt], cols.diameters(lc)[ss])})

        record(adm, far)
        record(dense, near)
        t, s = t[split], s[split]
        if not len(t):
            break
        # children: a cluster that is a leaf (or at the last level) is its own only child
        if lr < rows.depth - 1:
            tf, tn = rows.first_child[lr][t], rows.n_children[lr][t]
        else:
            tf, tn = t, np.ones_like(t)
        if lc < cols.depth - 1:
            sf, sn = cols.first_child[lc][s], cols.n_children[lc][s]
        else:
            sf, sn = s, np.ones_like(s)
        # all (child of t) x (child of s) products
        nprod = tn * sn
        owner = np.repeat(np.arange(len(t)), nprod)
        pos = np.arange(nprod.sum()) - np.repeat(np.cumsum(nprod) - nprod, nprod)
        t = tf[owner] + pos // sn[owner]
        s = sf[owner] + pos % sn[owner]
        level += 1

    def cat(parts):
        if not parts:
            return _empty()
        return {key: np.concatenate([p[key] for p in parts]).astype(
            np.float64 if key == "diam" else np.int64) for key in parts[0]}

    return BlockTree(rows, cols, float(eta), cat(far), cat(near))
