"""One H-matrix over several processes (MPI ranks, solve/parallel.py): each rank assembles
and keeps a share of the blocks, and a product is the sum of the ranks' partial products.

Every rank builds the same cluster and block trees (host arrays, cheap beside the blocks)
and cuts the same partition from them, with no communication:
- the dense (near-field) blocks in units of a block and its mirror (the block at the
  transposed place: for one space both come from the same kernel values, elementwise.py),
  costed by their entries;
- in the order of their places (row, then column, in the trees' numbering), cut into `size`
  runs of equal cost, run p to rank p: a rank's dense blocks then cover few element pairs
  that another's cover too (each such pair's corrections are computed by both);
- the admissible blocks that ACA compresses (those above the diagonal of V and W, whose
  mirrors are their transposes) dealt round in the order of their levels and places,
  block i to rank i mod size: their ranks, and so their cost, are known only after ACA, and
  runs cut by an estimate of them (min(m, n, 10 + k diam)) left the 2 kHz submarine's
  ranks up to 7 s apart per operator, every rank waiting for the slowest (issue 28).
A rank then computes the singular and near-pair corrections only of the element pairs with
an entry in its dense blocks (`PairFilter`), and assembles its blocks alone
(assembly.assemble_from_clouds with `share`): no rank holds the whole operator.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numba as nb
import numpy as np
import scipy.sparse.linalg as spla

from .elementwise import mirror_blocks
from .galerkin import assemble_hmatrix

@dataclass(frozen=True, eq=False)
class BlockShare:
    """The blocks one rank assembles: indices into a BlockPlan's near blocks and into its
    compressed admissible blocks (increasing)."""

    near: np.ndarray
    far: np.ndarray


def cut(cost: np.ndarray, size: int) -> np.ndarray:
    """The part (0..size-1) of each item, in order: runs of about equal total cost (each
    item to the run its cost midpoint falls in)."""
    cost = np.asarray(cost, float)
    total = cost.sum()
    if total <= 0:
        return (np.arange(len(cost)) * size) // max(len(cost), 1)
    middle = np.cumsum(cost) - 0.5 * cost
    return np.minimum((middle * size / total).astype(np.int64), size - 1)


def _in_order(blocks: dict, ids: np.ndarray) -> np.ndarray:
    """ids sorted by their blocks' places (row start, then column start)."""
    return ids[np.lexsort((blocks["c0"][ids], blocks["r0"][ids]))]


def near_units(near: dict) -> np.ndarray:
    """The unit of each dense block: the smaller index of it and its mirror (itself on the
    diagonal, or where the partition is not symmetric)."""
    idx = np.arange(len(near["r0"]))
    if not len(idx):
        return idx
    mirror = mirror_blocks(near, partial=True)
    return np.where(mirror >= 0, np.minimum(idx, mirror), idx)


def share_of(plan, rank: int, size: int) -> BlockShare:
    """Rank `rank`'s share of the blocks of `plan` (assembly.BlockPlan)."""
    near, far = plan.blocks.near, plan.blocks.far
    unit = near_units(near)
    heads = _in_order(near, np.unique(unit))
    weight = np.bincount(unit, weights=near["m"] * near["n"], minlength=len(unit))
    owner = np.zeros(len(unit), np.int64)
    owner[heads] = cut(weight[heads], size)
    mine_near = np.flatnonzero(owner[unit] == rank)

    ids = np.asarray(plan.compressed, np.int64)
    ids = ids[np.lexsort((far["c0"][ids], far["r0"][ids], far["level"][ids]))]
    mine_far = np.sort(ids[rank::size])
    return BlockShare(mine_near, mine_far)


class PairFilter:
    """keep(pa, pb): the element pairs (test element pa, trial element pb) with at least one
    entry in a dense block of `share` (the corrections this rank needs). Dense blocks pair
    leaf clusters (batched_aca.near_block_of), so an entry's block is the pair of its row's
    and its column's leaves: each dof's leaf is found once, and a pair's 3 x 3 leaf pairs are
    looked up among this rank's in a compiled loop. `elements`: the test elements with a dof
    in a row of the rank's dense blocks, the only ones whose pairs need the test (pairs.py
    searches only theirs: a rank's runs of dense blocks cover about 1/size of the mesh)."""

    def __init__(self, plan, share: BlockShare, test, trial):
        near = plan.blocks.near
        rstarts, cstarts = np.unique(near["r0"]), np.unique(near["c0"])
        row_leaf = np.searchsorted(rstarts, plan.rows.iperm, side="right") - 1
        col_leaf = np.searchsorted(cstarts, plan.cols.iperm, side="right") - 1
        self.rows = np.ascontiguousarray(row_leaf[test.element_dofs])
        self.cols = np.ascontiguousarray(col_leaf[trial.element_dofs])
        self.n_cols = len(cstarts)
        my_rows = np.searchsorted(rstarts, near["r0"][share.near])
        self.mine = np.sort(my_rows * len(cstarts)
                            + np.searchsorted(cstarts, near["c0"][share.near])).astype(np.int64)
        self.elements = np.flatnonzero(np.isin(self.rows, my_rows).any(axis=1)).astype(np.int64)
        self._seen = []  # (pa, pb, mask): the mesh's pair lists are asked again by every operator

    def __call__(self, pa, pb):
        for a, b, mask in self._seen:
            if a is pa and b is pb:
                return mask
        mask = _pairs_in_blocks(np.asarray(pa, np.int64), np.asarray(pb, np.int64), self.rows,
                                self.cols, self.n_cols, self.mine)
        self._seen.append((pa, pb, mask))
        return mask


@nb.njit(parallel=True, cache=True)
def _pairs_in_blocks(pa, pb, rows, cols, n_cols, mine):
    """Whether any (rows[pa[i], a], cols[pb[i], b]) leaf pair is one of `mine` (sorted keys
    row leaf * n_cols + column leaf)."""
    out = np.zeros(len(pa), np.bool_)
    if len(mine) == 0:
        return out
    for i in nb.prange(len(pa)):
        for a in range(rows.shape[1]):
            for b in range(cols.shape[1]):
                key = rows[pa[i], a] * n_cols + cols[pb[i], b]
                at = np.searchsorted(mine, key)
                if at < len(mine) and mine[at] == key:
                    out[i] = True
    return out


# per block tree (shared by the operators of one space and wavenumber, galerkin._plan): the
# pair filter of each (rank, size), whose near-field share depends on the tree alone
_FILTERS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def distribution(ranks):
    """The `distribution` hook of galerkin.assemble_hmatrix for this rank of `ranks`."""
    def share(plan, test, trial):
        mine = share_of(plan, ranks.rank, ranks.size)
        filters = _FILTERS.setdefault(plan.blocks, {})
        key = (ranks.rank, ranks.size, test.kind, trial.kind)
        if key not in filters:
            filters[key] = PairFilter(plan, mine, test, trial)
        return mine, filters[key]

    return share


class DistributedHMatrix:
    """H = the sum over the ranks of their H-matrices of disjoint blocks: `local` is this
    rank's (an HMatrix), `ranks` sums (solve/parallel.Ranks). Every rank must call `@`,
    `to_dense` and `T` together, with the same x."""

    def __init__(self, local, ranks, report=None):
        self.local, self.ranks = local, ranks
        self.report = report if report is not None else combined_report(local.report, ranks)

    @property
    def shape(self) -> tuple[int, int]:
        return self.local.shape

    @property
    def dtype(self):
        return self.local.dtype

    @property
    def block_tree(self):
        return self.local.block_tree

    def matvec(self, x):
        return self.ranks.sum(self.local.matvec(x))

    __matmul__ = matvec

    @property
    def T(self) -> "DistributedHMatrix":
        """The transpose (K' = K^T): each rank's blocks transposed, shared not copied."""
        return DistributedHMatrix(self.local.T, self.ranks, self.report)

    def to_dense(self) -> np.ndarray:
        return self.ranks.sum(self.local.to_dense())

    def aslinearoperator(self):
        return spla.LinearOperator(self.shape, matvec=self.matvec, dtype=self.dtype)


PER_RANK = ("stored_entries", "storage_bytes", "device_bytes", "host_bytes")


def combined_report(local: dict, ranks) -> dict:
    """This rank's assembly report with the totals over the ranks (entries, bytes,
    compression) and each rank's own figures under `per_rank` (collective)."""
    mine = {key: local[key] for key in PER_RANK}
    mine["time_s"] = local["time_s"]["total"]
    per_rank = ranks.allgather(mine)
    out = dict(local)
    for key in ("stored_entries", "storage_bytes"):
        out[key] = sum(r[key] for r in per_rank)
    m, n = local["shape"]
    out["compression_ratio"] = out["stored_entries"] / (m * n)
    out["per_rank"] = per_rank
    return out


def assemble_distributed(name, space, k, ranks, **options) -> DistributedHMatrix:
    """This rank's share of the H-matrix of operator `name` on `space` (trial = test);
    `options` those of galerkin.assemble_hmatrix."""
    share = distribution(ranks)
    local = assemble_hmatrix(name, space, space, k, distribution=share, **{**options, "devices": 1})
    return DistributedHMatrix(local, ranks)
