"""The directional block tree: which cluster pairs interact through interpolated, plane-wave
modulated expansions (and in which direction), which are low-rank ACA blocks, which are
dense, and the (cluster, direction) expansions each level needs.

Walking down from the root, a pair (t, s) of one level (D = max(diam t, diam s)) is
  - an ACA block where the H-matrix would take it: min(diam) <= eta_aca dist and
    k D <= kd_max (bounded size, so bounded rank);
  - else directional where the modulated kernel G(x - y) exp(-ik c.(x - y)) is smooth on
    t x s:  D <= eta dist,  k D^2 <= eta2 dist  (parabolic), and the level's direction grid
    resolves the pair (k D <= cells_per_kd q), with c the grid's direction nearest to
    centre_t - centre_s;
  - else dense (two leaves), else split.
Directional blocks grow with their distance instead of being capped at kd_max, and each
cluster meets O((k D)^2) of them per level on a surface, as many as the level has clusters
of its size within k D^2: O(N) blocks a level, O(N log N) in all, where the capped ACA
blocks alone number O(N^2) at high frequency.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ....errors import InputError
from ..hmatrix.block_tree import box_distance
from . import chebyshev, directions


@dataclass(frozen=True)
class DirectionalSettings:
    """order: Chebyshev points per axis; eta, eta2: the admissibility above; low: k diam up
    to which a level needs no directions; cells_per_kd: k diam per cell of the direction
    grid (the directions' angular step is about 1 / (k diam) times this)."""

    order: int = 5
    eta: float = 1.0
    eta2: float = 1.0
    low: float = 2.0
    cells_per_kd: float = 2.0
    # the diameter of a level that its direction grid is made for: this quantile of its
    # clusters' (a few bisection slivers are much longer; their pairs split instead)
    quantile: float = 0.9
    # where the expansions start from the points: the cluster tree's leaves (few points and
    # few directions each, moved up level by level by the transfers), or else the deepest
    # level with directional blocks (large clusters, each with many directions)
    tree_leaves: bool = True

    def __post_init__(self):
        if not (isinstance(self.order, (int, np.integer)) and 2 <= self.order <= 12):
            raise InputError(f"directional order = {self.order!r}: must be an integer in [2, 12]")
        for key in ("eta", "eta2", "low", "cells_per_kd"):
            value = getattr(self, key)
            if not (isinstance(value, (int, float)) and np.isfinite(value) and value > 0):
                raise InputError(f"directional {key} = {value!r}: must be a positive number")


@dataclass(frozen=True, eq=False)
class Level:
    """One level of the tree: its direction grid, the boxes of its clusters, the far blocks
    met here (target t, source s, direction), and the active expansions of targets and
    sources as sorted keys cluster * ndirs + direction."""

    q: int
    dirs: np.ndarray  # (ndirs, 3)
    centre: np.ndarray  # (n_clusters, 3)
    half: np.ndarray  # (n_clusters, 3)
    t: np.ndarray
    s: np.ndarray
    d: np.ndarray
    targets: np.ndarray
    sources: np.ndarray

    @property
    def ndirs(self) -> int:
        return len(self.dirs)

    def split(self, keys):
        return keys // self.ndirs, keys % self.ndirs


@dataclass(frozen=True, eq=False)
class DirectionalPlan:
    tree: object  # ClusterTree (rows and columns: one space)
    settings: DirectionalSettings
    k: float
    levels: list  # from the root down to the deepest level with directional blocks
    near: dict  # dense leaves (block_tree's format)
    aca: dict  # low-rank leaves (block_tree's format)

    @property
    def far_blocks(self) -> int:
        return int(sum(len(lv.t) for lv in self.levels))


def children(tree, level, clusters):
    """(parent position, child) for every child of `clusters` at `level` (a cluster that is
    not split is its own one child)."""
    first, count = tree.first_child[level][clusters], tree.n_children[level][clusters]
    owner = np.repeat(np.arange(len(clusters)), count)
    child = np.repeat(first, count) + (np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count))
    return owner, child


def _leaves(tree, lv, tt, ss, diam):
    return {"r0": tree.starts[lv][tt], "m": tree.sizes[lv][tt], "c0": tree.starts[lv][ss],
            "n": tree.sizes[lv][ss], "level": np.full(len(tt), lv),
            "diam": np.maximum(diam[tt], diam[ss])}


def _joined(parts):
    keys = ("r0", "m", "c0", "n", "level", "diam")
    if not parts:
        return {key: np.zeros(0, float if key == "diam" else np.int64) for key in keys}
    return {key: np.concatenate([b[key] for b in parts]) for key in keys}


def build_plan(tree, k: float, settings: DirectionalSettings, eta_aca: float = 1.0,
               kd_max: float | None = None) -> DirectionalPlan:
    """The directional block tree of one space's cluster tree at wavenumber k (real part:
    the oscillation's); eta_aca, kd_max: the ACA blocks' admissibility (block_tree.py; kd_max
    None: no ACA blocks)."""
    depth = tree.depth
    k = abs(float(np.real(k)))
    kd = np.array([k * np.quantile(tree.diameters(lv), settings.quantile) for lv in range(depth)])
    grids = directions.level_grids(kd, settings.low, settings.cells_per_kd)
    near, aca, far = [], [], []
    t = s = np.array([0])
    for lv in range(depth):
        q = int(grids[lv])
        diam = tree.diameters(lv)
        lo, hi = tree.lo[lv], tree.hi[lv]
        big = np.maximum(diam[t], diam[s])
        dist = box_distance(lo[t], hi[t], lo[s], hi[s])
        apart = dist > 0
        low_rank = np.zeros(len(t), bool) if kd_max is None else \
            apart & (np.minimum(diam[t], diam[s]) <= eta_aca * dist) & (k * big <= kd_max)
        adm = ~low_rank & apart & (big <= settings.eta * dist)
        adm &= (k * big**2 <= settings.eta2 * dist) & (k * big <= settings.cells_per_kd * q) \
            if q else (k * big <= settings.low)
        leaf = (lv == depth - 1) | tree.is_leaf(lv)
        dense = ~adm & ~low_rank & leaf[t] & leaf[s]
        centre = 0.5 * (lo + hi)
        far.append((t[adm], s[adm], directions.nearest(centre[t[adm]] - centre[s[adm]], q)))
        for mask, out in ((dense, near), (low_rank, aca)):
            if mask.any():
                out.append(_leaves(tree, lv, t[mask], s[mask], diam))
        split = ~adm & ~dense & ~low_rank
        t, s = t[split], s[split]
        if lv == depth - 1 or not len(t):
            far += [(np.zeros(0, np.int64),) * 3] * (depth - 1 - lv)
            break
        ot, ct = children(tree, lv, t)
        # all (child of t) x (child of s) products
        os_, cs = children(tree, lv, s)
        nt = np.bincount(ot, minlength=len(t))
        ns = np.bincount(os_, minlength=len(s))
        st_, ss_ = np.cumsum(nt) - nt, np.cumsum(ns) - ns
        owner = np.repeat(np.arange(len(t)), nt * ns)
        pos = np.arange(len(owner)) - np.repeat(np.cumsum(nt * ns) - nt * ns, nt * ns)
        t = ct[st_[owner] + pos // ns[owner]]
        s = cs[ss_[owner] + pos % ns[owner]]
    if not settings.tree_leaves or not any(len(f[0]) for f in far):
        while far and not len(far[-1][0]):  # expansions only down to the last directional level
            far.pop()
    levels = _active_levels(tree, grids, far)
    return DirectionalPlan(tree, settings, k, levels, _joined(near), _joined(aca))


def _active_levels(tree, grids, far) -> list:
    """Levels with the expansions each needs, root first: a level's far blocks' own, and
    the children of the level above's (each transfers to and from its children)."""
    levels = []
    targets = sources = np.zeros(0, np.int64)
    for lv, (t, s, d) in enumerate(far):
        q = int(grids[lv])
        nd = directions.count(q)
        if lv:
            up = levels[-1]

            def down(keys):
                cl, dr = up.split(keys)
                owner, child = children(tree, lv - 1, cl)
                return child * nd + directions.coarser(dr[owner], up.q, q)

            targets, sources = down(targets), down(sources)
        targets = np.unique(np.concatenate([targets, t * nd + d]))
        sources = np.unique(np.concatenate([sources, s * nd + d]))
        centre, half = chebyshev.boxes(tree.lo[lv], tree.hi[lv])
        levels.append(Level(q, directions.vectors(q), centre, half, t, s, d, targets, sources))
    return levels
