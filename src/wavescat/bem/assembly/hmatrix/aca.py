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

from ....backend import to_host


@dataclass
class ACAResult:
    U: object  # (B, L, K) backend array, columns beyond rank[b] are zero
    V: object  # (B, L, K); block b ~ U[b, :m, :r] @ V[b, :n, :r].T
    rank: object  # (B,) backend int array
    steps: int
    converged: object  # (B,) bool: stopped by the tolerance (not by exhaustion)
    host_syncs: int = 0  # device -> host round trips (what bounds a step's latency on a GPU)


def _take_rows(xp, X, idx):
    """X[b, idx[b], :] for a (B, L, K) array."""
    return X[xp.arange(X.shape[0]), idx]


# Products of the thin (B, L, K) factors with one vector per block are batched GEMVs: cuBLAS
# strided batches on the GPU. On the CPU einsum: NumPy's matmul calls the threaded BLAS once
# per block, measured up to 100x slower on such stacks beside Numba's OpenMP threads.
def _stack_times(xp, M, x):
    """M[b] @ x[b] (B, L) for M (B, L, K), x (B, K)."""
    if xp is np:
        return np.einsum("blk,bk->bl", M, x)
    return xp.matmul(M, x[:, :, None])[:, :, 0]


def _times_stack(xp, x, M):
    """x[b] @ M[b] (B, K) for x (B, L), M (B, L, K)."""
    if xp is np:
        return np.einsum("bl,blk->bk", x, M)
    return xp.matmul(x[:, None, :], M)[:, 0, :]


class AcaState:
    """The per-block state of a batched ACA+ iteration: (Bw, ...) backend arrays over the
    blocks still in the working set (`orig`: their indices in the batch), and the factors of
    the blocks set aside when they finished (`done_parts`). `gather` narrows every array of
    FIELDS to the blocks it keeps."""

    FIELDS = ("r0", "m", "c0", "n", "rowmask", "colmask", "U", "V", "rank", "frob2", "used_r",
              "used_c", "was_ref_r", "was_ref_c", "restarts_r", "restarts_c", "active",
              "converged", "refcol", "refrow", "iref", "jref", "dead_r", "dead_c", "orig")

    def __init__(self, r0, m, c0, n, L, K, xp, dtype, rdt, evaluate):
        B = int(r0.shape[0])
        self.xp, self.dtype, self.L = xp, dtype, L
        self.evaluate = evaluate
        self.ar = xp.arange(L)
        self.r0, self.m, self.c0, self.n = r0, m, c0, n
        self.rowmask = self.ar[None, :] < m[:, None]
        self.colmask = self.ar[None, :] < n[:, None]
        self.U = xp.zeros((B, L, K), dtype=dtype)
        self.V = xp.zeros((B, L, K), dtype=dtype)
        self.rank = xp.zeros(B, dtype=xp.int64)
        self.frob2 = xp.zeros(B, dtype=rdt)
        self.used_r, self.used_c = ~self.rowmask, ~self.colmask
        self.was_ref_r, self.was_ref_c = ~self.rowmask, ~self.colmask
        self.restarts_r = xp.zeros(B, dtype=xp.int64)
        self.restarts_c = xp.zeros(B, dtype=xp.int64)
        self.active = xp.ones(B, dtype=bool)
        self.converged = xp.zeros(B, dtype=bool)
        self.dead_r = xp.zeros(B, dtype=bool)
        self.dead_c = xp.zeros(B, dtype=bool)
        self.orig = xp.arange(B)
        self.done_parts = []  # (orig ids, U, V, rank, converged) of blocks set aside
        # initial references: first column, then the row where it is smallest
        alltrue = xp.ones(B, dtype=bool)
        every = xp.arange(B)
        self.jref = xp.zeros(B, dtype=xp.int64)
        self.was_ref_c[every, self.jref] = True
        self.refcol = self.cross(every, self.jref, alltrue)
        self.iref = xp.argmin(xp.where(self.rowmask, xp.abs(self.refcol), xp.inf), axis=1)
        self.was_ref_r[every, self.iref] = True
        self.refrow = self.cross(every, self.iref, ~alltrue)

    @property
    def width(self) -> int:
        """Bw: the blocks in the working set."""
        return self.m.shape[0]

    def cross(self, ids, fixed, along_rows):
        """Entries of blocks `ids` (backend int array): column `fixed` (a vector over
        rows) where along_rows, else row `fixed`; (Bw, L), zero outside ids/block."""
        xp, L = self.xp, self.L
        out = xp.zeros((self.width, L), dtype=self.dtype)
        if ids.shape[0] == 0:
            return out
        m_, n_ = self.m[ids, None], self.n[ids, None]
        alr = along_rows[ids, None]
        fx = fixed[ids, None]
        ti = self.r0[ids, None] + xp.where(alr, xp.minimum(self.ar[None, :], m_ - 1), fx)
        sj = self.c0[ids, None] + xp.where(alr, fx, xp.minimum(self.ar[None, :], n_ - 1))
        vals = self.evaluate(ti.ravel(), sj.ravel()).reshape(ids.shape[0], L)
        out[ids] = xp.where(xp.where(alr, self.rowmask[ids], self.colmask[ids]), vals, 0)
        return out

    def residual_row(self, vec, i):
        """vec minus row i of the current approximation, for every block."""
        return vec - _stack_times(self.xp, self.V, _take_rows(self.xp, self.U, i))

    def residual_col(self, vec, j):
        return vec - _stack_times(self.xp, self.U, _take_rows(self.xp, self.V, j))

    def gather(self, keep):
        """Set the blocks outside `keep` (backend int array) aside; keep the rest."""
        xp = self.xp
        drop = xp.ones(self.width, dtype=bool)
        drop[keep] = False
        gone = xp.nonzero(drop)[0]
        if gone.shape[0]:
            self.done_parts.append((self.orig[gone], self.U[gone], self.V[gone],
                                    self.rank[gone], self.converged[gone]))
        for key in self.FIELDS:
            setattr(self, key, getattr(self, key)[keep])

    def small_refs(self, zero_tol):
        """Active blocks whose reference column / row needs a restart."""
        xp = self.xp
        out = []
        for ref, used, dead in ((self.refcol, self.used_r, self.dead_c),
                                (self.refrow, self.used_c, self.dead_r)):
            small = xp.max(xp.where(used, 0, xp.abs(ref)), axis=1) <= zero_tol
            out.append(self.active & small & ~dead)
        return out

    def running(self, kcap):
        return (self.active & ~(self.dead_r & self.dead_c) & (~self.used_r).any(axis=1)
                & (~self.used_c).any(axis=1) & (self.rank < kcap))

    def restart(self, is_col, need, max_restarts):
        """Replace the exhausted reference column (is_col) or row of the blocks `need` by a
        fresh unused one, at most `max_restarts` times a block; the others are marked dead."""
        xp = self.xp
        sfx = "c" if is_col else "r"
        was, dead, cnt = (getattr(self, "was_ref_" + sfx), getattr(self, "dead_" + sfx),
                          getattr(self, "restarts_" + sfx))
        free = ~(was | (self.used_c if is_col else self.used_r))
        new, ok = xp.argmax(free, axis=1), free.any(axis=1)
        can = need & ok & (cnt < max_restarts)
        setattr(self, "dead_" + sfx, dead | (need & ~can))
        setattr(self, "restarts_" + sfx, cnt + can)
        Bw = can.shape[0]
        bidx = xp.arange(Bw)
        was[bidx, new] |= can
        ids = xp.nonzero(can)[0]
        fresh = self.cross(ids, new, xp.full(Bw, is_col))
        fresh = self.residual_col(fresh, new) if is_col else self.residual_row(fresh, new)
        if is_col:
            self.jref = xp.where(can, new, self.jref)
            self.refcol = xp.where(can[:, None], fresh, self.refcol)
        else:
            self.iref = xp.where(can, new, self.iref)
            self.refrow = xp.where(can[:, None], fresh, self.refrow)

    def result(self, B, steps, syncs) -> ACAResult:
        """The factors of every block of the batch, in batch order."""
        xp, L, dtype = self.xp, self.L, self.dtype
        if not self.done_parts and self.orig.shape[0] == B:
            return ACAResult(self.U, self.V, self.rank, steps, self.converged, syncs)
        self.gather(xp.zeros(0, dtype=xp.int64))
        # the output holds the largest rank, not the working width K
        kout = max([int(p[3].max()) for p in self.done_parts if p[3].shape[0]] + [1])
        syncs += len(self.done_parts)
        U = xp.zeros((B, L, kout), dtype=dtype)
        V = xp.zeros((B, L, kout), dtype=dtype)
        rank = xp.zeros(B, dtype=xp.int64)
        converged = xp.zeros(B, dtype=bool)
        for o, Up, Vp, rp, cp in self.done_parts:
            kp = min(Up.shape[2], kout)
            U[o, :, :kp] = Up[:, :, :kp]
            V[o, :, :kp] = Vp[:, :, :kp]
            rank[o], converged[o] = rp, cp
        return ACAResult(U, V, rank, steps, converged, syncs)


def aca_plus_batched(evaluate, r0, m, c0, n, eps, xp, dtype, zero_tol=0.0, k_start=16,
                     max_rank=None, max_restarts=3, length=None, compact=0.5):
    """Low-rank factors of B blocks; `evaluate(ti, sj)` gives entries of the permuted
    matrix for backend int arrays of row and column positions. `length`: the factors'
    row count L (at least the largest block side; default exactly that).

    Work per step is kept to the blocks still running: when the active ones fall to
    `compact` of the working set, the finished blocks' factors are set aside and every
    state array is gathered down to the active blocks (AcaState.gather), so neither the
    batched GEMVs nor the vector updates keep sweeping finished blocks. One small flag
    transfer and one index compaction (`nonzero`) per step are the only host round trips."""
    B = int(r0.shape[0])
    mh, nh = to_host(m), to_host(n)
    L = int(max(mh.max(), nh.max(), length or 0))
    kcap = L if max_rank is None else int(max_rank)
    rdt = np.float32 if np.dtype(dtype) in (np.float32, np.complex64) else np.float64
    K = int(min(k_start, L))
    st = AcaState(r0, m, c0, n, L, K, xp, dtype, rdt, evaluate)
    syncs = 0
    steps = 0
    while True:
        need_c, need_r = st.small_refs(zero_tol)
        flags = to_host(xp.stack([need_c.any(), need_r.any(), st.running(kcap).any()]))
        syncs += 1
        if flags[0] or flags[1]:
            # restart exhausted references (zero on the unused indices)
            for is_col, need in ((True, need_c), (False, need_r)):
                if not flags[0 if is_col else 1]:
                    continue
                st.restart(is_col, need, max_restarts)
                syncs += 1
            flags[2] = bool(st.running(kcap).any())
            syncs += 1
        st.active = st.running(kcap)
        if not flags[2]:
            break
        ids = xp.nonzero(st.active)[0]
        syncs += 1
        Bw = st.width
        if ids.shape[0] <= compact * Bw:
            st.gather(ids)
            Bw = ids.shape[0]
            ids = xp.arange(Bw)
        steps += 1
        # a block's rank is at most the steps taken: grow the factors before they fill
        if steps > K:
            Kn = min(2 * K, L)
            st.U, st.V = (xp.concatenate([X, xp.zeros((Bw, L, Kn - K), dtype=dtype)], axis=2)
                          for X in (st.U, st.V))
            K = Kn
        active, rowmask, colmask = st.active, st.rowmask, st.colmask
        used_r, used_c, dead_r, dead_c = st.used_r, st.used_c, st.dead_r, st.dead_c
        bidx = xp.arange(Bw)
        ac = xp.where(used_r | dead_c[:, None], -1.0, xp.abs(st.refcol))
        istar = xp.argmax(ac, axis=1)
        aro = xp.where(used_c | dead_r[:, None], -1.0, xp.abs(st.refrow))
        jstar = xp.argmax(aro, axis=1)
        colfirst = aro[bidx, jstar] > ac[bidx, istar]
        f = st.cross(ids, xp.where(colfirst, jstar, istar), colfirst)
        f = xp.where(colfirst[:, None], st.residual_col(f, jstar), st.residual_row(f, istar))
        score = xp.where(xp.where(colfirst[:, None], used_r, used_c), -1.0, xp.abs(f))
        second = xp.argmax(score, axis=1)
        s = st.cross(ids, second, ~colfirst)
        s = xp.where(colfirst[:, None], st.residual_row(s, second), st.residual_col(s, second))
        col = xp.where(colfirst[:, None], f, s)
        row = xp.where(colfirst[:, None], s, f)
        ipiv = xp.where(colfirst, second, istar)
        jpiv = xp.where(colfirst, jstar, second)
        pivot = col[bidx, ipiv]
        ok = active & (xp.abs(pivot) > zero_tol)
        used_r[bidx, ipiv] |= active
        used_c[bidx, jpiv] |= active
        safe = xp.where(ok, pivot, 1)
        u = xp.where(ok[:, None] & rowmask, col / safe[:, None], 0)
        v = xp.where(ok[:, None] & colmask, row, 0)
        U, V, rank = st.U, st.V, st.rank
        # |S + u v^T|^2 = |S|^2 + 2 Re sum_l (u_l^H u)(v_l^H v) + |u|^2 |v|^2
        uu = _times_stack(xp, xp.conj(u), U)  # conj(U^H u)
        vv = _times_stack(xp, xp.conj(v), V)
        nu2 = xp.sum(xp.abs(u) ** 2, axis=1)
        nv2 = xp.sum(xp.abs(v) ** 2, axis=1)
        frob2 = st.frob2
        frob2 = frob2 + xp.maximum(2 * xp.real(xp.sum(xp.conj(uu) * xp.conj(vv), axis=1)).astype(rdt)
                                   + (nu2 * nv2).astype(rdt), -frob2)
        st.frob2 = frob2
        # column rank[b] is still zero (rank < steps <= K): u, v are zero where not ok
        xp.swapaxes(U, 1, 2)[bidx, rank] = u  # U[b, :, rank[b]] = u[b]
        xp.swapaxes(V, 1, 2)[bidx, rank] = v
        st.rank = rank + ok
        # reference residuals follow the new cross
        refcol = st.refcol - u * v[bidx, st.jref][:, None]
        refrow = st.refrow - u[bidx, st.iref][:, None] * v
        st.refcol, st.refrow = refcol, refrow
        tol2 = (eps * eps) * frob2
        rc2 = xp.sum(xp.where(used_r, 0, xp.abs(refcol) ** 2), axis=1) * st.n
        rr2 = xp.sum(xp.where(used_c, 0, xp.abs(refrow) ** 2), axis=1) * st.m
        rc2 = xp.where(dead_c, 0, rc2)
        rr2 = xp.where(dead_r, 0, rr2)
        done = ok & (nu2 * nv2 <= tol2) & (rc2 <= tol2) & (rr2 <= tol2)
        st.converged |= done
        st.active = active & ~done
    return st.result(B, steps, syncs)


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
