"""ACA+ for many blocks at once, written once against an array module (NumPy or CuPy).

Every block b of a batch (rows r0[b]:r0[b]+m[b], cols c0[b]:c0[b]+n[b] of the permuted
matrix) advances one cross step per iteration: one entry-kernel call evaluates the first
cross vector of every active block, a second call the other one. Pivots, factors U, V
and reference vectors live in (B, L, K) / (B, L) arrays on the device; only one boolean
reduction per step (is any block still active?) comes back to the host.

ACA+ (Grasedyck; Bebendorf, Hierarchical Matrices, 2008) with a reference row and a
reference column of the residual:
  * pivot: i* = argmax |ref col|, j* = argmax |ref row| over unused indices; if the
    reference row promises more, take column j* first and its largest row, else row i*
    first and its largest column (robust against the failures of plain partial pivoting);
  * restart: a reference vector whose residual vanishes (or whose index became a pivot)
    is replaced by a fresh unused row/column, at most `max_restarts` times each;
  * zero blocks: when both reference vectors stay zero the block is done with rank 0;
  * stop: |u| |v| <= eps |S_r|_F, and both reference residuals, scaled to the block, are
    below eps |S_r|_F as well.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend import to_host


@dataclass
class ACAResult:
    U: object  # (B, L, K) backend array, columns beyond rank[b] are zero
    V: object  # (B, L, K); block b ~ U[b, :m, :r] @ V[b, :n, :r].T
    rank: object  # (B,) backend int array
    steps: int
    converged: object  # (B,) bool: stopped by the tolerance (not by exhaustion)


def _take_rows(xp, X, idx):
    """X[b, idx[b], :] for a (B, L, K) array."""
    return X[xp.arange(X.shape[0]), idx]


def aca_plus_batched(evaluate, r0, m, c0, n, eps, xp, dtype, zero_tol=0.0, k_start=16,
                     max_rank=None, max_restarts=3, length=None):
    """Low-rank factors of B blocks; `evaluate(ti, sj)` gives entries of the permuted
    matrix for backend int arrays of row and column positions. `length`: the factors'
    row count L (at least the largest block side; default exactly that)."""
    B = int(r0.shape[0])
    mh, nh = to_host(m), to_host(n)
    L = int(max(mh.max(), nh.max(), length or 0))
    kcap = L if max_rank is None else int(max_rank)
    ar = xp.arange(L)
    bidx = xp.arange(B)
    rowmask = ar[None, :] < m[:, None]
    colmask = ar[None, :] < n[:, None]
    rdt = np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64
    K = int(min(k_start, L))
    U = xp.zeros((B, L, K), dtype=dtype)
    V = xp.zeros((B, L, K), dtype=dtype)
    rank = xp.zeros(B, dtype=xp.int64)
    frob2 = xp.zeros(B, dtype=rdt)
    used_r = ~rowmask
    used_c = ~colmask
    was_ref_r = ~rowmask
    was_ref_c = ~colmask
    restarts_r = xp.zeros(B, dtype=xp.int64)
    restarts_c = xp.zeros(B, dtype=xp.int64)
    active = xp.ones(B, dtype=bool)
    converged = xp.zeros(B, dtype=bool)

    def cross(sel, fixed, along_rows):
        """Entries of the selected blocks: column `fixed` (a vector over rows) where
        along_rows, else row `fixed`; (B, L) array, zero outside the selection/block."""
        out = xp.zeros((B, L), dtype=dtype)
        ids = xp.nonzero(sel)[0]
        if ids.shape[0] == 0:
            return out
        ar_r = xp.minimum(ar[None, :], m[ids, None] - 1)
        ar_c = xp.minimum(ar[None, :], n[ids, None] - 1)
        alr = along_rows[ids, None]
        ti = r0[ids, None] + xp.where(alr, ar_r, fixed[ids, None])
        sj = c0[ids, None] + xp.where(alr, fixed[ids, None], ar_c)
        vals = evaluate(ti.ravel(), sj.ravel()).reshape(len(ids), L)
        out[ids] = xp.where(xp.where(alr, rowmask[ids], colmask[ids]), vals, 0)
        return out

    # Products with the thin (B, L, K) factors are batched GEMVs (cuBLAS strided batches
    # on the GPU), not multiply-and-sum over (B, L, K) temporaries.
    def residual_row(vec, i):
        """vec minus row i of the current approximation, for every block."""
        return vec - xp.matmul(V, _take_rows(xp, U, i)[:, :, None])[:, :, 0]

    def residual_col(vec, j):
        return vec - xp.matmul(U, _take_rows(xp, V, j)[:, :, None])[:, :, 0]

    def first_unused(used):
        free = ~used
        return xp.argmax(free, axis=1), free.any(axis=1)

    # initial references: first column, then the row where it is smallest
    jref = xp.zeros(B, dtype=xp.int64)
    was_ref_c[bidx, jref] = True
    alltrue = xp.ones(B, dtype=bool)
    refcol = cross(alltrue, jref, alltrue)
    iref = xp.argmin(xp.where(rowmask, xp.abs(refcol), xp.inf), axis=1)
    was_ref_r[bidx, iref] = True
    refrow = cross(alltrue, iref, ~alltrue)
    dead_r = xp.zeros(B, dtype=bool)
    dead_c = xp.zeros(B, dtype=bool)
    steps = 0
    while True:
        # restart exhausted references (zero on the unused indices)
        for is_col in (True, False):
            ref = refcol if is_col else refrow
            used = used_r if is_col else used_c
            was = was_ref_c if is_col else was_ref_r
            dead = dead_c if is_col else dead_r
            cnt = restarts_c if is_col else restarts_r
            small = xp.max(xp.where(used, 0, xp.abs(ref)), axis=1) <= zero_tol
            need = active & small & ~dead
            if not bool(need.any()):
                continue
            new, ok = first_unused(was | (used_c if is_col else used_r))
            can = need & ok & (cnt < max_restarts)
            dead |= need & ~can
            cnt += can
            was[bidx[can], new[can]] = True
            fresh = cross(can, new, xp.full(B, is_col))
            fresh = residual_col(fresh, new) if is_col else residual_row(fresh, new)
            if is_col:
                jref = xp.where(can, new, jref)
                refcol = xp.where(can[:, None], fresh, refcol)
            else:
                iref = xp.where(can, new, iref)
                refrow = xp.where(can[:, None], fresh, refrow)
        active &= ~(dead_r & dead_c)
        active &= (~used_r).any(axis=1) & (~used_c).any(axis=1) & (rank < kcap)
        if not bool(active.any()):
            break
        steps += 1
        ac = xp.where(used_r | dead_c[:, None], -1.0, xp.abs(refcol))
        istar = xp.argmax(ac, axis=1)
        aro = xp.where(used_c | dead_r[:, None], -1.0, xp.abs(refrow))
        jstar = xp.argmax(aro, axis=1)
        colfirst = _take_rows(xp, aro[:, :, None], jstar)[:, 0] > \
            _take_rows(xp, ac[:, :, None], istar)[:, 0]
        first_idx = xp.where(colfirst, jstar, istar)
        f = cross(active, first_idx, colfirst)
        f = xp.where(colfirst[:, None], residual_col(f, jstar), residual_row(f, istar))
        score = xp.where(xp.where(colfirst[:, None], used_r, used_c), -1.0, xp.abs(f))
        second = xp.argmax(score, axis=1)
        s = cross(active, second, ~colfirst)
        s = xp.where(colfirst[:, None], residual_row(s, second), residual_col(s, second))
        col = xp.where(colfirst[:, None], f, s)
        row = xp.where(colfirst[:, None], s, f)
        ipiv = xp.where(colfirst, second, istar)
        jpiv = xp.where(colfirst, jstar, second)
        pivot = _take_rows(xp, col[:, :, None], ipiv)[:, 0]
        ok = active & (xp.abs(pivot) > zero_tol)
        act_ids = bidx[active]
        used_r[act_ids, ipiv[active]] = True
        used_c[act_ids, jpiv[active]] = True
        safe = xp.where(ok, pivot, 1)
        u = xp.where(ok[:, None] & rowmask, col / safe[:, None], 0)
        v = xp.where(ok[:, None] & colmask, row, 0)
        # |S + u v^T|^2 = |S|^2 + 2 Re sum_l (u_l^H u)(v_l^H v) + |u|^2 |v|^2
        uu = xp.matmul(xp.conj(u)[:, None, :], U)[:, 0, :]  # conj(U^H u)
        vv = xp.matmul(xp.conj(v)[:, None, :], V)[:, 0, :]
        nu2 = xp.sum(xp.abs(u) ** 2, axis=1)
        nv2 = xp.sum(xp.abs(v) ** 2, axis=1)
        frob2 = frob2 + xp.maximum(2 * xp.real(xp.sum(xp.conj(uu) * xp.conj(vv), axis=1)).astype(rdt)
                                   + (nu2 * nv2).astype(rdt), -frob2)
        if bool((ok & (rank >= K)).any()):
            Kn = min(2 * K, L)
            U = xp.concatenate([U, xp.zeros((B, L, Kn - K), dtype=dtype)], axis=2)
            V = xp.concatenate([V, xp.zeros((B, L, Kn - K), dtype=dtype)], axis=2)
            K = Kn
        ok_ids = bidx[ok]
        rk = rank[ok]
        xp.swapaxes(U, 1, 2)[ok_ids, rk] = u[ok]  # U[b, :, rank[b]] = u[b]
        xp.swapaxes(V, 1, 2)[ok_ids, rk] = v[ok]
        rank = rank + ok
        # reference residuals follow the new cross
        refcol = refcol - u * _take_rows(xp, v[:, :, None], jref)
        refrow = refrow - _take_rows(xp, u[:, :, None], iref) * v
        tol2 = (eps * eps) * frob2
        rc2 = xp.sum(xp.where(used_r, 0, xp.abs(refcol) ** 2), axis=1) * n
        rr2 = xp.sum(xp.where(used_c, 0, xp.abs(refrow) ** 2), axis=1) * m
        rc2 = xp.where(dead_c, 0, rc2)
        rr2 = xp.where(dead_r, 0, rr2)
        done = ok & (nu2 * nv2 <= tol2) & (rc2 <= tol2) & (rr2 <= tol2)
        converged |= done
        active &= ~done
    return ACAResult(U, V, rank, steps, converged)


def aca_plus(entries, m, n, eps, zero_tol=0.0, **kw):
    """ACA+ of one m x n block given `entries(i, j)` (NumPy int arrays -> values):
    returns (U (m, r), V (n, r)) with block ~ U @ V.T."""
    probe = np.asarray(entries(np.zeros(1, np.int64), np.zeros(1, np.int64)))
    res = aca_plus_batched(lambda i, j: np.asarray(entries(i, j)), np.zeros(1, np.int64),
                           np.array([m]), np.zeros(1, np.int64), np.array([n]), eps, np,
                           probe.dtype, zero_tol=zero_tol, **kw)
    r = int(res.rank[0])
    return res.U[0, :m, :r], res.V[0, :n, :r]


def recompress(xp, U, V, rank, eps):
    """Truncated SVD of every U_b V_b^T to relative Frobenius accuracy eps.

    Works on the Gram matrices G = U^H U, V^H V (one batched GEMM each on the device,
    accumulated in double even for single-precision factors): with G = E diag(lam) E^H,
    U = Q_u S_u where S_u = lam^{1/2} E^H, so U V^T = Q_u (S_u S_v^T) Q_v^T and the SVD
    of the small core W diag(sig) Z^H gives U' = U E lam^{-1/2} W sig, V' = V E_v
    lam_v^{-1/2} conj(Z), truncated where the discarded sig fall below eps |sig|.
    Returns (U', V', rank') with columns beyond rank' zero and K' = max rank'."""
    B, L, K = U.shape
    if K == 0 or B == 0:
        return U, V, rank
    cdt = np.complex128 if np.iscomplexobj(U) else np.float64
    Ud, Vd = U.astype(cdt, copy=False), V.astype(cdt, copy=False)
    Gu = xp.matmul(xp.conj(xp.swapaxes(Ud, 1, 2)), Ud)
    Gv = xp.matmul(xp.conj(xp.swapaxes(Vd, 1, 2)), Vd)
    Tu, Tv, keep = _core_transforms(xp, Gu, Gv, eps)
    kmax = max(int(keep.max()), 1)
    Tu, Tv = Tu[:, :, :kmax].astype(U.dtype), Tv[:, :, :kmax].astype(U.dtype)
    return xp.matmul(U, Tu), xp.matmul(V, Tv), xp.asarray(keep.astype(np.int64))


def _core_transforms(xp, Gu, Gv, eps):
    """K x K transforms (on the device) and kept ranks (host) from the Gram matrices;
    the small eigen/singular value problems run batched on the device when the array
    module can, else on the host."""
    try:
        return _transforms(xp, Gu, Gv, eps)
    except Exception:  # no batched eigh/svd in this array module: host LAPACK
        Tu, Tv, keep = _transforms(np, to_host(Gu), to_host(Gv), eps)
        return xp.asarray(Tu), xp.asarray(Tv), keep


def _transforms(xp, Gu, Gv, eps):
    def half(G):
        lam, E = xp.linalg.eigh(G)
        lam_max = lam[:, -1:]
        good = lam > 1e-13 * lam_max
        root = xp.sqrt(xp.where(good, lam, 1))
        S = xp.where(good[:, :, None], root[:, :, None] * xp.conj(xp.swapaxes(E, 1, 2)), 0)
        Einv = E * xp.where(good, 1 / root, 0)[:, None, :]  # E lam^{-1/2}
        return S, Einv

    Su, Eu = half(Gu)
    Sv, Ev = half(Gv)
    W, sig, Zh = xp.linalg.svd(xp.matmul(Su, xp.swapaxes(Sv, 1, 2)))
    sig_h = to_host(sig)
    tail = np.sqrt(np.cumsum((sig_h ** 2)[:, ::-1], axis=1))[:, ::-1]  # |sig[r:]|
    keep = np.sum(tail > eps * tail[:, :1], axis=1)
    mask = xp.asarray(np.arange(sig_h.shape[1])[None, :] < keep[:, None])
    Tu = xp.matmul(Eu, W * xp.where(mask, sig, 0)[:, None, :])
    Tv = xp.matmul(Ev, xp.swapaxes(Zh, 1, 2) * mask[:, None, :])  # V Ev lam^-1/2 Zh^T
    return Tu, Tv, keep
