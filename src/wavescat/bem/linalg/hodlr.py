"""HODLR matrices: an n x n operator known only by its products, approximated as dense
diagonal leaves plus one low-rank block between each pair of sibling clusters of a binary
cluster tree (hierarchically off-diagonal low rank), and inverted by the recursive
Sherman-Morrison-Woodbury formula. Memory O(n r L) and set-up O(n r^2 L^2) for ranks r over
L levels, where a dense LU takes n^2 and n^3: the Müller preconditioner's diagonal blocks of
a gas body (bem/formulations/muller_preconditioner.py) beyond the size of dense factors.

Built by randomised peeling (Lin, Lu & Ying 2011, "Fast construction of hierarchical matrix
representation from matrix-vector multiplication"), level by level from the root: random
columns supported on the second child of every pair give, on the first children's rows,
the sibling block times them plus the blocks of coarser levels (known by then: subtracted);
their range Q, then B^T conj(Q) from products with the transpose, give B ~ Q (Q^H B),
truncated by its singular values at `tol` times the operator's norm; the sample count
doubles until a block's rank falls short of it. The leaves come last, from products with
unit columns of every leaf at once less the low-rank levels. Every product is one of the
whole operator with a block of columns, so any operator serves (an H-matrix, a dense array,
an interface's own block of a region operator, a rank's share of one). Operators whose blocks
are at hand (H-matrices) are sampled level by level from those blocks alone: hodlr_parts.py.

Inverse, for a cluster c with children c1, c2 and sibling blocks U1 V2^T, U2 V1^T:
A_c = diag(A_c1, A_c2) + W Z^T, W = diag(U1, U2), Z^T = [[0, V2^T], [V1^T, 0]], so
A_c^{-1} = (I - What S^{-1} Z^T) diag(A_c1, A_c2)^{-1} with What = diag(A_c1^{-1} U1,
A_c2^{-1} U2) and S = I + Z^T What, 2r x 2r. Factorised from the finest level up (What of
a level needs the inverses below it), applied leaves first, then level by level up. Each
level is a stack of equal-shape padded blocks (clusters of a level differ in size by at
most one row), so every step is a batched product on the backend `xp` (NumPy or CuPy).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend import to_host

OVERSAMPLING = 16  # samples beyond the rank found: a block whose rank reaches p - this resamples
# the root's first sample count, per sqrt(n): its blocks' ranks measured 3.5 sqrt(n) on a
# gas sphere at 1e-2 (bench/bench_gas_preconditioner.py), so that it seldom samples twice
FIRST_SAMPLES_PER_ROOT = 4.0
# columns per call of the operators' products: their own work arrays stay this narrow
CHUNK = 128


@dataclass
class _Level:
    """The clusters of one tree level as a padded stack (gather index `idx`, `mask` of real
    rows), the sibling of each (-1 where it has none), and the sibling pairs."""
    idx: object
    mask: object
    sibling: np.ndarray
    pairs: np.ndarray  # (pairs, 2) cluster indices (first child, second child)
    starts: np.ndarray
    sizes: np.ndarray
    on: tuple = ()  # (paired clusters, their siblings, first children, second children) on xp

    def stack(self, xp, x):
        """Rows of x (n, p) as (clusters, rows, p), zero in the padding."""
        return xp.where(self.mask[:, :, None], x[self.idx], 0)

    def unstack(self, xp, stacked, n):
        out = xp.zeros((n,) + stacked.shape[2:], stacked.dtype)
        out[self.idx[self.mask]] = stacked[self.mask]
        return out


def _levels(tree, xp) -> list:
    out = []
    for lev in range(tree.depth):
        starts, sizes = tree.starts[lev], tree.sizes[lev]
        ar = np.arange(sizes.max())
        idx = starts[:, None] + np.minimum(ar, sizes[:, None] - 1)
        sibling = np.full(len(starts), -1)
        pairs = np.zeros((0, 2), np.int64)
        if lev:
            first, count = tree.first_child[lev - 1], tree.n_children[lev - 1]
            pairs = np.stack([first[count == 2], first[count == 2] + 1], axis=1)
            sibling[pairs[:, 0]], sibling[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
        paired = np.flatnonzero(sibling >= 0)
        on = tuple(xp.asarray(a) for a in (paired, sibling[paired], pairs[:, 0], pairs[:, 1]))
        out.append(_Level(xp.asarray(idx), xp.asarray(ar < sizes[:, None]), sibling, pairs,
                          starts, sizes, on))
    return out


class Hodlr:
    """A HODLR matrix in the tree's permuted numbering: `leaves` (clusters, b, b) dense,
    `factors[l]` = (U, V) stacks of level l (None: no pairs), rank padded with zeros.
    `factorise()` turns it into its inverse in place; `solve(x)` then applies it (x in
    the tree's numbering)."""

    def __init__(self, levels, xp, dtype, n):
        self.levels, self.xp, self.dtype, self.n = levels, xp, np.dtype(dtype), n
        self.factors = [None] * len(levels)
        self.leaves = None
        self.inverse = None  # per level: (What, S^{-1} per pair); leaves: inverted

    @property
    def ranks(self) -> list:
        return [0 if f is None else f[1].shape[2] for f in self.factors[1:]]

    @property
    def nbytes(self) -> int:
        arrays = [self.leaves] + [a for f in self.factors if f is not None for a in f]
        if self.inverse is not None:
            arrays += [a for f in self.inverse if f is not None for a in f]
        return int(sum(a.nbytes for a in arrays if a is not None))

    def product(self, x, upto=None, transpose=False):
        """The low-rank levels 1..upto-1 (all: None) times x (n, p); of the transpose
        with `transpose`. Block (c, sibling) is U_c V_sib^T."""
        xp = self.xp
        y = xp.zeros(x.shape, np.result_type(x.dtype, self.dtype))
        for level, f in zip(self.levels[:upto], self.factors[:upto]):
            if f is None:
                continue
            u, v = f[::-1] if transpose else f
            paired, sibling = level.on[:2]
            t = xp.matmul(xp.swapaxes(v, 1, 2), level.stack(xp, x).astype(v.dtype))
            out = xp.zeros(level.idx.shape + x.shape[1:], y.dtype)
            out[paired] = xp.matmul(u[paired], t[sibling])
            y += level.unstack(xp, out, self.n)
        return y

    def set_leaves(self, y):
        """The dense leaves from y (n, largest leaf): a product with leaf_columns of the
        diagonal blocks; columns past a leaf's size (other leaves' columns) become zero,
        with ones on the diagonal."""
        xp, leaf = self.xp, self.levels[-1]
        real = leaf.mask[:, :, None] & leaf.mask[:, None, :]
        padding = xp.eye(y.shape[1], dtype=self.dtype)[None] * ~leaf.mask[:, :, None]
        self.leaves = xp.where(real, leaf.stack(xp, y), padding).astype(self.dtype)

    def factorise(self):
        """Invert the leaves, then from the finest level up: What = (inverse below) U and
        the inverse of S per pair. The U factors become What (no copy kept)."""
        xp = self.xp
        self.leaves = xp.linalg.inv(self.leaves)
        self.inverse = [None] * len(self.levels)
        for lev in range(len(self.levels) - 1, 0, -1):
            if self.factors[lev] is None:
                continue
            level, (u, v) = self.levels[lev], self.factors[lev]
            what = level.stack(xp, self._solve(level.unstack(xp, u, self.n), below=lev))
            del u
            c1, c2 = level.on[2:]
            r = v.shape[2]
            vt = xp.swapaxes(v, 1, 2)
            s = xp.zeros((len(c1), 2 * r, 2 * r), self.dtype)
            s[:, :r, :r] = s[:, r:, r:] = xp.eye(r, dtype=self.dtype)
            s[:, :r, r:] = xp.matmul(vt[c2], what[c2])
            s[:, r:, :r] = xp.matmul(vt[c1], what[c1])
            self.factors[lev] = (None, v)
            self.inverse[lev] = (what.astype(self.dtype, copy=False), xp.linalg.inv(s))

    def _solve(self, x, below=0, transpose=False):
        """The inverse of the diagonal blocks of the clusters of level `below` (0: of the
        whole matrix) times x (n, p): the leaves, then the corrections C_l = I - What_l
        S_l^{-1} Z_l^T of the levels finer than `below`, finest first; with `transpose` the
        transposed product C_1^T ... C_L^T leaves^T (`below` 0 only)."""
        xp = self.xp
        leaf = self.levels[-1]
        order = range(len(self.levels) - 1, below, -1)
        if transpose:
            y, order = x.astype(self.dtype), reversed(order)
        else:
            y = leaf.unstack(xp, xp.matmul(self.leaves, leaf.stack(xp, x).astype(self.dtype)),
                             self.n)
        for lev in order:
            if self.inverse[lev] is not None:
                y = self._correct(lev, y, transpose)
        if transpose:
            y = leaf.unstack(xp, xp.matmul(xp.swapaxes(self.leaves, 1, 2), leaf.stack(xp, y)),
                             self.n)
        return y

    def _correct(self, lev, y, transpose):
        """C_l y, or C_l^T y = y - Z S^{-T} What^T y, per sibling pair (c1, c2):
        Z^T y = [V2^T y2; V1^T y1] and What s = [What1 s_a; What2 s_b]."""
        xp = self.xp
        level, (what, s_inv) = self.levels[lev], self.inverse[lev]
        v = self.factors[lev][1]
        left, right = (what, v) if transpose else (v, what)
        c1, c2 = level.on[2:]
        r = v.shape[2]
        t = xp.matmul(xp.swapaxes(left, 1, 2), level.stack(xp, y))
        if transpose:  # What^T y = [t1; t2]; Z s = [V1 s_b; V2 s_a]
            s = xp.matmul(xp.swapaxes(s_inv, 1, 2), xp.concatenate([t[c1], t[c2]], axis=1))
            first, second = s[:, r:], s[:, :r]
        else:  # Z^T y = [t2; t1]; What s = [What1 s_a; What2 s_b]
            s = xp.matmul(s_inv, xp.concatenate([t[c2], t[c1]], axis=1))
            first, second = s[:, :r], s[:, r:]
        out = xp.zeros(level.idx.shape + y.shape[1:], y.dtype)
        out[c1] = xp.matmul(right[c1], first)
        out[c2] = xp.matmul(right[c2], second)
        return y - level.unstack(xp, out, self.n)

    def solve(self, x, transpose=False):
        """A^{-1} x (A^{-T} x with `transpose`) for x (n,) or (n, p) in the tree's
        numbering (after `factorise`)."""
        vector = x.ndim == 1
        y = self._solve(x[:, None] if vector else x, transpose=transpose)
        return y[:, 0] if vector else y


class Permuted:
    """A Hodlr (factorised) in the original numbering: `solve(x, transpose)` for x (n, p)."""

    def __init__(self, hodlr, perm):
        self.hodlr, self.perm = hodlr, hodlr.xp.asarray(perm)

    def solve(self, x, transpose=False):
        y = self.hodlr.solve(x[self.perm], transpose)
        out = self.hodlr.xp.empty_like(y)
        out[self.perm] = y
        return out


def hodlr_inverses(apply, apply_t, count, tree, xp, dtype, tol, first_samples=None, seed=0):
    """Factorised HODLR approximations of `count` n x n operators A_m, known by
    `apply(X)` = [A_m X] and `apply_t([X_m])` = [A_m^T X_m] (backend arrays, original
    numbering; one call serves all, e.g. A_m sums of the same few operators), on a binary
    cluster tree of the dofs (a hmatrix.cluster_tree.ClusterTree: its last level's clusters
    are the dense leaves): blocks truncated at `tol` times each operator's 2-norm, stored in
    `dtype`. Returns ([Permuted], stats): the ranks per level, the samples taken, the bytes
    held. The root's blocks are sampled with `first_samples` columns first (default
    FIRST_SAMPLES_PER_ROOT sqrt(n)), each finer level with its parent level's rank."""
    n = tree.n
    perm, iperm = xp.asarray(tree.perm), xp.asarray(tree.iperm)
    rng = np.random.default_rng(seed)

    def op(x):  # every A_m on x in the tree's numbering, CHUNK columns at a time
        out = [xp.empty(x.shape, complex) for _ in range(count)]
        for c in range(0, x.shape[1], CHUNK):
            for o, y in zip(out, apply(x[iperm, c:c + CHUNK])):
                o[:, c:c + CHUNK] = y[perm]
        return out

    def op_t(xs):
        out = [xp.empty(x.shape, complex) for x in xs]
        for c in range(0, xs[0].shape[1], CHUNK):
            for o, y in zip(out, apply_t([x[iperm, c:c + CHUNK] for x in xs])):
                o[:, c:c + CHUNK] = y[perm]
        return out

    levels = _levels(tree, xp)
    mats = [Hodlr(levels, xp, dtype, n) for _ in range(count)]
    norms = _norms(op, op_t, count, n, xp, rng)

    def sample(lev, p):  # both sides of every pair, peeled
        blocks = [_peel(mats, op, op_t, lev, side, p, norms, tol, rng) for side in (0, 1)]
        rank = max(u.shape[1] for side in blocks for per in side for u, _ in per)
        return [_stacked(levels[lev], [blocks[0][m], blocks[1][m]], xp, dtype)
                for m in range(count)], rank, 4 * p

    samples = sampled_levels(mats, n, sample, first_samples)
    unit = leaf_columns(levels[-1], n, xp, dtype)
    samples += unit.shape[1]
    for mat, y in zip(mats, op(unit)):
        mat.set_leaves(y - mat.product(unit))
    return finished(mats, tree, samples)


def sampled_levels(mats, n, sample, first_samples=None) -> int:
    """Set the low-rank levels of `mats` from the root down: `sample(lev, p)` gives ([(U, V)
    stacks or None] per matrix, the largest rank, columns multiplied) of level lev from p
    random columns; p doubles until the rank falls OVERSAMPLING short of it (or p reaches
    the level's smallest cluster), and the next level starts from the rank found. The root
    starts from `first_samples` (default FIRST_SAMPLES_PER_ROOT sqrt(n)). Returns the
    columns multiplied in all."""
    levels = mats[0].levels
    samples = 0
    p = first_samples or int(FIRST_SAMPLES_PER_ROOT * np.sqrt(n)) + OVERSAMPLING
    for lev in range(1, len(levels)):
        level = levels[lev]
        if not len(level.pairs):
            continue
        smallest = int(level.sizes[level.pairs].min())
        while True:
            p = min(p, smallest)
            factors, rank, used = sample(lev, p)
            samples += used
            if rank <= p - OVERSAMPLING or p == smallest:
                break
            p *= 2
        for mat, f in zip(mats, factors):
            mat.factors[lev] = f
        p = max(rank + OVERSAMPLING, 32)
    return samples


def leaf_columns(leaf, n, xp, dtype):
    """(n, largest leaf) unit columns, column j the j-th dof of every leaf at once: a
    product with them holds each leaf's diagonal block on the leaf's rows."""
    unit = xp.zeros((n, int(leaf.sizes.max())), np.result_type(dtype, np.complex64))
    rows = np.concatenate([s + np.arange(z) for s, z in zip(leaf.starts, leaf.sizes)])
    cols = np.concatenate([np.arange(z) for z in leaf.sizes])
    unit[xp.asarray(rows), xp.asarray(cols)] = 1
    return unit


def finished(mats, tree, samples):
    """([Permuted] of the factorised `mats`, stats) as hodlr_inverses returns them."""
    for mat in mats:
        mat.factorise()
    stats = {"n": tree.n, "levels": tree.depth - 1, "samples": samples,
             "ranks": [mat.ranks for mat in mats], "bytes": sum(m.nbytes for m in mats)}
    return [Permuted(mat, tree.perm) for mat in mats], stats


def _random(rng, xp, n, p, rows):
    x = np.zeros((n, p), complex)
    x[rows] = rng.standard_normal((len(rows), p)) + 1j * rng.standard_normal((len(rows), p))
    return xp.asarray(x)


def _norms(op, op_t, count, n, xp, rng, steps=6):
    """Each A_m's 2-norm, by power iteration on A^H A (column m of one block for A_m)."""
    x = _random(rng, xp, n, count, np.arange(n))
    x /= xp.linalg.norm(x, axis=0)
    for _ in range(steps):
        ys = [y[:, m:m + 1] for m, y in enumerate(op(x))]
        z = xp.concatenate([xp.conj(z) for z in op_t([xp.conj(y) for y in ys])], axis=1)
        norms = xp.linalg.norm(z, axis=0)
        x = z / norms
    return [float(v) ** 0.5 for v in to_host(norms)]


def _rows(level, clusters):
    return np.concatenate([level.starts[c] + np.arange(level.sizes[c]) for c in clusters])


def _peel(mats, op, op_t, lev, side, p, norms, tol, rng):
    """The sibling blocks (rows: child `side` of every pair) of level `lev` of each matrix:
    per matrix, per pair, (U, V) with the block ~ U V^T."""
    xp = mats[0].xp
    level = mats[0].levels[lev]
    rows_c, cols_c = level.pairs[:, side], level.pairs[:, 1 - side]
    x = _random(rng, xp, mats[0].n, p, _rows(level, cols_c))
    ys = op(x)
    for y, mat in zip(ys, mats):
        y -= mat.product(x, upto=lev)
    del x
    for y in ys:  # in place: conj(Q) of each block on its rows, zero elsewhere
        keep = xp.zeros(len(y), bool)
        for c in rows_c:
            s, z = level.starts[c], level.sizes[c]
            q = xp.linalg.qr(y[s:s + z])[0]
            y[s:s + z] = 0
            y[s:s + z, :q.shape[1]] = xp.conj(q)
            keep[s:s + z] = True
        y[~keep] = 0
    zs = op_t(ys)
    for z, mat, y in zip(zs, mats, ys):
        z -= mat.product(y, upto=lev, transpose=True)
    out = []
    for y, z, norm in zip(ys, zs, norms):
        per = []
        for r_c, c in zip(rows_c, cols_c):
            rs, rz = level.starts[r_c], level.sizes[r_c]
            s, size = level.starts[c], level.sizes[c]
            width = min(p, rz)
            ub, sv, vh = xp.linalg.svd(z[s:s + size, :width].T, full_matrices=False)
            r = int((sv > tol * norm).sum())
            per.append((xp.conj(y[rs:rs + rz, :width]) @ (ub[:, :r] * sv[:r]), vh[:r].T))
        out.append(per)
    return out


def _stacked(level, sides, xp, dtype):
    """(U, V) stacks of a level from the blocks of both sides, rank padded to the largest;
    None where every block has rank 0."""
    r = max(u.shape[1] for side in sides for u, _ in side)
    if r == 0:
        return None
    shape = level.idx.shape + (r,)
    u, v = xp.zeros(shape, dtype), xp.zeros(shape, dtype)
    for side, blocks in enumerate(sides):
        for (ub, vb), c, sib in zip(blocks, level.pairs[:, side], level.pairs[:, 1 - side]):
            u[c, :len(ub), :ub.shape[1]] = ub
            v[sib, :len(vb), :vb.shape[1]] = vb
    return u, v
