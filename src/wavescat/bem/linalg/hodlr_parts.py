"""HODLR inverses (hodlr.py) built from the operators' own blocks: each operator P_j is known
by its parts per tree level (bem/assembly/hmatrix/tree_parts.py: the stored H-matrix blocks,
or sparse entries, that lie in the level's sibling blocks, and those of the leaves' diagonal
blocks), and the matrices are fixed combinations A_m = sum_j w_mj P_j (the Müller system's
diagonal blocks: M + a (K1 - g K0) and M + a (K0 - g K1)).

Why not peeling (hodlr.hodlr_inverses): every level's sample there is a product of the whole
operator, less the coarser levels already built (whose truncation error the finer levels
inherit); here a level's sample is a product of that level's part alone, whose cost is the
stored entries of the level's blocks, and the parts of all levels together cost one
whole-operator product per sample column. One random block X (n, p) samples the sibling
blocks of every pair, both ways, at once: part_l(A) X holds A[c, s] X[s] on the rows of
each cluster c with sibling s. Per cluster the range Q_c of that sample, then part_l(A)^T
conj(Q) holds A[c, s]^T conj(Q_c) on the rows of s, so A[c, s] ~ Q_c (Q_c^H A[c, s]),
truncated by its singular values at `tol` times the operator's norm (batched QR and SVD
over the level's padded stack). The sample count doubles until every block's rank falls
short of it, as in the peeling. The leaves are the leaf-diagonal part times unit columns.
"""
from __future__ import annotations

import numpy as np

from ...backend import to_host
from .hodlr import Hodlr, _levels, _norms, finished, leaf_columns, sampled_levels


def hodlr_from_parts(parts, weights, tree, xp, dtype, tol, first_samples=None, seed=0):
    """Factorised HODLR approximations of A_m = sum_j weights[m][j] parts[j] on `tree` (the
    parts' positions are the tree's), blocks truncated at `tol` times each A_m's 2-norm,
    stored and sampled in `dtype`. Returns ([Permuted], stats) as hodlr_inverses does; the
    stats' `samples` count the columns each part multiplied."""
    n, count = tree.n, len(weights)
    levels = _levels(tree, xp)
    mats = [Hodlr(levels, xp, dtype, n) for _ in range(count)]
    random = xp.random.RandomState(seed)

    def combined(lev, x, transpose=False):
        """[A_m's part at lev (transposed) times x]: x (n, p) shared, or (transposed) x_m
        stacked side by side (n, count p), one product per part for all A_m."""
        ys = [part.product(lev, x.astype(dtype, copy=False), transpose) for part in parts]
        p = x.shape[1] // count if transpose else x.shape[1]
        at = (lambda y, m: y[:, m * p:(m + 1) * p]) if transpose else (lambda y, m: y)
        return [sum(w * at(y, m) for w, y in zip(row, ys) if w) for m, row in enumerate(weights)]

    def whole(x, transpose=False):  # every part of every level
        return [sum(ys) for ys in zip(*(combined(lev, x, transpose)
                                        for lev in [None, *range(1, len(levels))]))]

    norms = _norms(whole, lambda xs: whole(xp.concatenate(xs, axis=1), True), count, n, xp,
                   np.random.default_rng(seed))

    def sample(lev, p):  # both sides of every pair from one random block
        x = xp.asarray(random.standard_normal((n, p))).astype(dtype)
        factors, rank = _sibling_blocks(levels[lev], combined(lev, x), lambda zs: combined(
            lev, xp.concatenate(zs, axis=1), True), norms, tol, xp, dtype)
        return factors, rank, (1 + count) * p

    samples = sampled_levels(mats, n, sample, first_samples)
    unit = leaf_columns(levels[-1], n, xp, dtype)
    samples += unit.shape[1]
    for mat, y in zip(mats, combined(None, unit)):
        mat.set_leaves(y)
    return finished(mats, tree, samples)


def _sibling_blocks(level, ys, transposed, norms, tol, xp, dtype):
    """([(U, V) stacks of the level, or None] per matrix, the largest rank) from the
    samples ys[m] = part(A_m) X: Q per paired cluster, then `transposed`([conj(Q_m)])."""
    paired, sibling = level.on[:2]
    n = len(ys[0])
    mask = level.mask[paired][:, :, None]
    qs = [xp.linalg.qr(level.stack(xp, y)[paired])[0] * mask for y in ys]
    del ys
    full = xp.zeros(level.idx.shape + qs[0].shape[2:], dtype)
    conj = []
    for q in qs:
        full[paired] = xp.conj(q)
        conj.append(level.unstack(xp, full, n))
    zs = transposed(conj)
    del conj, full
    out, largest = [], 0
    for q, z, norm in zip(qs, zs, norms):
        # A[c, s] ~ Q_c B, B = Q_c^H A[c, s] = Z_s^T with Z_s = A[c, s]^T conj(Q_c) the rows
        # of s in z; Z_s = Q' R = Q' W S Y (QR, then the SVD of the small R: an SVD of Z_s
        # itself bidiagonalises all its rows) gives B = Y^T S (Q' W)^T
        qz, r = xp.linalg.qr(level.stack(xp, z)[sibling])
        w, sv, y = xp.linalg.svd(r)
        keep = sv > tol * norm
        rank = int(to_host(keep.sum(axis=1)).max())
        largest = max(largest, rank)
        if rank == 0:
            out.append(None)
            continue
        keep = keep[:, :rank]
        shape = level.idx.shape + (rank,)
        u, v = xp.zeros(shape, dtype), xp.zeros(shape, dtype)
        scaled = xp.swapaxes(y[:, :rank], 1, 2) * xp.where(keep, sv[:, :rank], 0)[:, None, :]
        u[paired] = xp.matmul(q, scaled)
        v[sibling] = xp.matmul(qz, w[:, :, :rank]) * keep[:, None, :]
        out.append((u, v))
    return out, largest
