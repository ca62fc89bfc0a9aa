"""An H-matrix's blocks (or a sparse matrix's entries) split along the levels of a HODLR
cluster tree (bem/linalg/hodlr.py), so that the HODLR blocks are built from the products of
the stored blocks inside them, not from whole-operator products.

Entry (i, j) belongs to the level l at which the tree's clusters of i and j first differ (they
are then siblings: a HODLR off-diagonal block of level l), or to the leaves' diagonal blocks
where both lie in one leaf cluster. `part(l)` (`None`: the leaves' diagonal) is the operator
with only those entries: its product with a block of vectors costs the stored entries of that
part, and the parts of all levels sum to the operator.

The H-matrix's own cluster tree, truncated at the HODLR leaf size, gives blocks that lie
inside one part each (`HMatrix.block_tree.rows.truncated`); any other tree of the same dofs
(a region's operator restricted to one interface, whose tree spans the region's other
surfaces too) splits a block into pieces, each a (block, row cluster, column cluster) at
that level: the block's product with the columns of one cluster, kept on the rows of the
other (masks on the block's rows and columns, no copy of its entries).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ....backend import scatter_add, sparse_module, to_host
from .hmatrix import _factors, scatter_matrix, stack_product

_CHUNK_BYTES = 256 << 20  # gathered vectors and factors per batched product of pieces


def tree_clusters(tree) -> np.ndarray:
    """(depth, n + 1) the cluster of each tree position at each level; column n (the sink of
    padding and of dofs outside the tree) -1."""
    out = np.full((tree.depth, tree.n + 1), -1, np.int64)
    for lev in range(tree.depth):
        out[lev, :-1] = np.repeat(np.arange(len(tree.sizes[lev])), tree.sizes[lev])
    return out


def split_levels(ancestors, leaf_i, leaf_j) -> np.ndarray:
    """The level at which leaf clusters leaf_i and leaf_j (pairs) first differ, from their
    `ancestors` (depth, leaves) at every level; depth where they are one leaf (the leaves'
    diagonal)."""
    differ = ancestors[:, leaf_i] != ancestors[:, leaf_j]
    return np.where(differ.any(axis=0), differ.argmax(axis=0), len(ancestors))


class _Parts:
    """What the H-matrix and the sparse parts share: the tree's clusters per level (on the
    backend) and the level names (1..depth-1, None for the leaves' diagonal)."""

    def __init__(self, tree, xp):
        self.xp = xp
        self.clusters = tree_clusters(tree)
        self.ancestors = self.clusters[:, tree.starts[-1]]  # (depth, leaves)
        self.depth = tree.depth
        self._on = {}

    def _level_index(self, lev):
        return self.depth if lev is None else lev

    def clusters_on(self, lev):
        """The clusters at HODLR level `lev` (None: the leaves) of each position, on xp."""
        row = self.depth - 1 if lev is None else lev
        if row not in self._on:
            self._on[row] = self.xp.asarray(self.clusters[row])
        return self._on[row]


class HMatrixParts(_Parts):
    """The parts of an H-matrix `op` (its blocks on one device) on the dofs at `positions`
    of its own (None: all, in its numbering), whose tree positions `tree` gives (tree.perm:
    position -> index into `positions`)."""

    def __init__(self, op, tree, xp, positions=None):
        super().__init__(tree, xp)
        where = np.full(op.shape[0], tree.n, np.int64)  # operator dof -> tree position
        index = np.arange(tree.n) if positions is None else np.asarray(positions)
        where[index] = tree.iperm
        rows, cols = where[np.asarray(op.row_perm)], where[np.asarray(op.col_perm)]
        self.groups = [_Group(g, rows, cols, self.clusters, self.ancestors, xp)
                       for g in op.groups()]

    def product(self, lev, x, transpose=False):
        """part(lev) @ x (part(lev)^T @ x with `transpose`), x (n, p) in tree positions."""
        xp = self.xp
        xe = xp.concatenate([x, xp.zeros((1, x.shape[1]), x.dtype)])
        y = xp.zeros_like(xe)
        clusters = self.clusters_on(lev)
        for g in self.groups:
            g.product(self._level_index(lev), clusters, xe, y, transpose)
        return y[:-1]


class _Group:
    """One block group of an H-matrix with its rows' and columns' tree positions (sink n
    for padding and dofs outside the tree), and its pieces per level."""

    def __init__(self, g, rows, cols, clusters, ancestors, xp):
        self.g, self.xp = g, xp
        r0, c0, m, n = (to_host(a) for a in (g.r0, g.c0, g.m, g.n))
        low = g.D is None
        lr, lc = (g.U.shape[1], g.V.shape[1]) if low else g.D.shape[1:]
        sink = clusters.shape[1] - 1
        ar, ac = np.arange(lr)[None, :], np.arange(lc)[None, :]
        hr = np.where(ar < m[:, None], rows[np.minimum(r0[:, None] + ar, len(rows) - 1)], sink)
        hc = np.where(ac < n[:, None], cols[np.minimum(c0[:, None] + ac, len(cols) - 1)], sink)
        self.pieces = _pieces(hr, hc, clusters[-1], ancestors, xp)
        self.hr, self.hc = xp.asarray(hr.astype(np.int32)), xp.asarray(hc.astype(np.int32))

    def product(self, lev, clusters, xe, y, transpose):
        """y += (this group's part at level index lev) @ xe (its transpose): the blocks
        wholly in the part first, then the pieces of the others (masked)."""
        if lev not in self.pieces:
            return
        blk, ci, cj, whole = self.pieces[lev]
        # output rows and their clusters, input columns and theirs
        out, into = (self.hc, cj) if transpose else (self.hr, ci)
        inp, onto = (self.hr, ci) if transpose else (self.hc, cj)
        low = self.g.D is None
        width = out.shape[1] + inp.shape[1]
        per = width * (xe.itemsize * xe.shape[1] + (16 * self.g.U.shape[2] if low else 0))
        step = max(1, _CHUNK_BYTES // per)
        for first, last, masked in ((0, whole, False), (whole, len(blk), True)):
            for start in range(first, last, step):
                sel = slice(start, min(start + step, last))
                rows, cols = out[blk[sel]], inp[blk[sel]]
                xs = xe[cols]
                if masked:  # the piece's columns only, its rows only
                    xs = self.xp.where((clusters[cols] == onto[sel, None])[:, :, None], xs, 0)
                    rows = self.xp.where(clusters[rows] == into[sel, None], rows, len(xe) - 1)
                ys = self._times(blk[sel], xs, transpose)
                _add_rows(self.xp, y, rows, ys.astype(y.dtype, copy=False))

    def _times(self, b, xs, transpose):
        """Blocks b (or their transposes) times xs (b, L, p), in xs's precision."""
        xp, g = self.xp, self.g
        if g.D is None:
            u, v = _factors(xp, g, to_host(b) if g.on_host else b)
            u, v = (v, u) if transpose else (u, v)
            return stack_product(xp, u, stack_product(xp, xp.swapaxes(v, 1, 2), xs))
        d = g.D[b]
        return stack_product(xp, xp.swapaxes(d, 1, 2) if transpose else d, xs)


def _add_rows(xp, y, rows, ys):
    """y[rows] += ys, repeated rows summed: on the host one sparse product (np.add.at is
    slower), on the GPU atomics (hmatrix.py does the same); row len(y) - 1 is the sink."""
    flat = ys.reshape(-1, ys.shape[-1])
    if xp is np:
        y += scatter_matrix(np, rows, np.ones(rows.shape, bool), len(y), y.dtype) @ flat
    else:
        scatter_add(y, rows.ravel(), flat)


def _pieces(hr, hc, leaf, ancestors, xp) -> dict:
    """{level index: (blocks, row clusters, column clusters on xp, how many of them are
    whole)} of a group whose blocks' rows and columns have tree positions hr (B, Lr), hc
    (B, Lc) (`leaf`: the leaf cluster of each position): every pair of a leaf cluster that a
    block's rows touch and one its columns touch, at the level where the two first differ
    (depth: the same leaf), once per block and pair of that level's clusters; a block with
    one piece in all is whole (no masks), and comes first."""
    rb, ra = _touched(hr, leaf)
    cb, cc = _touched(hc, leaf)
    # all (row cluster, column cluster) pairs of each block: both lists are sorted by block
    first = np.searchsorted(cb, rb)
    count = np.searchsorted(cb, rb, side="right") - first
    owner = np.repeat(np.arange(len(rb)), count)
    col = first[owner] + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    blocks, li, lj = rb[owner], ra[owner], cc[col]
    lev = split_levels(ancestors, li, lj)
    depth = len(ancestors)
    keys = {}
    for level in np.unique(lev):
        sel = lev == level
        row = min(int(level), depth - 1)  # the leaves' diagonal: clusters of the last level
        keys[int(level)] = np.unique(np.stack([blocks[sel], ancestors[row, li[sel]],
                                               ancestors[row, lj[sel]]], axis=1), axis=0)
    count = np.bincount(np.concatenate([k[:, 0] for k in keys.values()]), minlength=len(hr))
    out = {}
    for level, key in keys.items():
        key = key[np.argsort(count[key[:, 0]] > 1, kind="stable")]
        out[level] = tuple(xp.asarray(a) for a in key.T) + (int(np.sum(count[key[:, 0]] == 1)),)
    return out


def _touched(h, leaf):
    """(block, leaf cluster) pairs, sorted by block, of the positions h (B, L) outside the
    sink."""
    c = leaf[h]
    base = int(leaf.max()) + 1
    key = np.unique((np.arange(len(h))[:, None] * base + c)[c >= 0])
    return key // base, key % base


class SparseParts(_Parts):
    """The parts of a sparse matrix (SciPy, in the numbering that tree.perm maps to), in
    `dtype` on xp (cuSPARSE on the GPU)."""

    def __init__(self, matrix, tree, xp, dtype):
        super().__init__(tree, xp)
        coo = sp.coo_matrix(matrix)
        i, j = tree.iperm[coo.row], tree.iperm[coo.col]
        leaf = self.clusters[-1]
        lev = split_levels(self.ancestors, leaf[i], leaf[j])
        module = sparse_module(xp.zeros(0))
        self.parts = {}
        for level in np.unique(lev):
            sel = lev == level
            host = sp.csr_matrix((coo.data[sel].astype(dtype), (i[sel], j[sel])),
                                 shape=(tree.n, tree.n))
            self.parts[int(level)] = (module.csr_matrix(host), module.csr_matrix(host.T.tocsr()))

    def product(self, lev, x, transpose=False):
        part = self.parts.get(self._level_index(lev))
        if part is None:
            return self.xp.zeros_like(x)
        return part[transpose] @ x
