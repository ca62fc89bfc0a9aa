"""ACA of admissible blocks on the kernel matrix of their quadrature points (CPU).

A regular Galerkin block is a projection of a point kernel matrix,

    A_ts = P_t^T G_ts P_s,

G_ts the weighted kernel w_x w_y k(x, y) at the rule's points of the elements touching
cluster t (rows) and cluster s (columns), P the basis values that sum a point into the dofs
of its element (W: the surface curls and the normals times the basis values of Maue's
formula, six weight sets). ACA needs rows and columns: a row of G_ts is one kernel value
per point of s, where a row of A_ts pairs each of a dof's ~6 triangles with every triangle
of s, all their point pairs (~30 times as many values with the 6-point rule). The ranks of
G_ts are those of the smooth kernel on the two point sets, a few more than A_ts's at the
tenth of the tolerance they are compressed to here (POINT_EPS).

Each block runs alone, one per thread: ACA+ as in aca.py (the same pivots and stopping
rule, on one block without padding) on the point matrix; its factors summed into dofs
(for W six sets, so six times the columns); ACA+ again on that product, whose entries cost
a few multiply-adds, which leaves about the block's own rank; compress_far's recompression
cuts it to eps. No LAPACK or BLAS call runs inside the threads: beside Numba's threads,
BLAS's own made small factorisations 8 times slower (measured), and truncating W's
six-fold factors by SVD cost more than the kernel values.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from ...kernels.green import Operator, kernel
from .aca import ACAResult
from .elementwise import _elements_of, _ints

_W = int(Operator.hypersingular)
_V = int(Operator.single_layer)
POINT_EPS = 0.1  # the point matrix's tolerance, a fraction of the block's
MAX_RESTARTS = 3


@nb.njit(cache=True)
def _points(side, els):
    """(x, n, w) of the rule's points of elements els: point p is point p % nq of els[p // nq]."""
    pts, wts, nrm = side[3], side[4], side[5]
    nq = pts.shape[1]
    x = np.empty((len(els) * nq, 3))
    n = np.empty((len(els) * nq, 3))
    w = np.empty(len(els) * nq)
    for jj in range(len(els)):
        e = els[jj]
        for q in range(nq):
            p = jj * nq + q
            x[p] = pts[e, q]
            n[p] = nrm[e]
            w[p] = wts[e, q]
    return x, n, w


# A block's entries come from one of two sources, both a tuple of the same types (one
# compiled ACA): POINTS, the weighted kernel between point sets X (rows) and Y (columns);
# FACTORS, the product A B^T of the point factors summed into dofs.
POINTS, FACTORS = 0, 1


@nb.njit(cache=True)
def _cross(src, fixed, along_rows, out):
    """Column `fixed` of the source's matrix into out (along_rows), else its row `fixed`."""
    kind, op, kr, ki, X, NX, WX, Y, NY, WY, A, B = src
    if kind == FACTORS:
        fixed_side, other = (B, A) if along_rows else (A, B)
        for p in range(other.shape[0]):
            acc = 0j
            for l in range(other.shape[1]):
                acc += other[p, l] * fixed_side[fixed, l]
            out[p] = acc
        return
    # POINTS: the kernel with d = x - y, x a test (row) point
    P, NP, WP = (X, NX, WX) if along_rows else (Y, NY, WY)
    f, nf, wf = (Y[fixed], NY[fixed], WY[fixed]) if along_rows else (X[fixed], NX[fixed], WX[fixed])
    sign = 1.0 if along_rows else -1.0
    for p in range(P.shape[0]):
        out[p] = 0.0
        d0, d1, d2 = sign * (P[p, 0] - f[0]), sign * (P[p, 1] - f[1]), sign * (P[p, 2] - f[2])
        if d0 * d0 + d1 * d1 + d2 * d2 == 0.0:
            continue  # a point shared by touching elements: no admissible pair has one
        na = NP[p] if along_rows else nf  # the test point's normal
        nb_ = nf if along_rows else NP[p]
        gre, gim = kernel(op, d0, d1, d2, na[0], na[1], na[2], nb_[0], nb_[1], nb_[2], kr, ki)
        out[p] = (WP[p] * wf) * complex(gre, gim)


@nb.njit(cache=True)
def _shape(src):
    kind, X, Y, A, B = src[0], src[4], src[7], src[10], src[11]
    return (A.shape[0], B.shape[0]) if kind == FACTORS else (X.shape[0], Y.shape[0])


@nb.njit(cache=True)
def _minus_approximation(vec, A, B, idx, rank):
    """vec -= A[:, :rank] @ B[idx, :rank]: the residual of a cross."""
    for l in range(rank):
        c = B[idx, l]
        if c != 0:
            for p in range(vec.shape[0]):
                vec[p] -= A[p, l] * c


@nb.njit(cache=True)
def _largest_free(vec, used):
    """argmax |vec| over the indices not used (-1 if every one is)."""
    best, at = -1.0, -1
    for p in range(vec.shape[0]):
        if not used[p]:
            a = abs(vec[p])
            if a > best:
                best, at = a, p
    return at, best


@nb.njit(cache=True)
def _free_norm2(vec, used):
    s = 0.0
    for p in range(vec.shape[0]):
        if not used[p]:
            s += vec[p].real ** 2 + vec[p].imag ** 2
    return s


@nb.njit(cache=True)
def _restarted(src, ref, used_along, was, used_fixed, along_rows, A, B, rank, zero_tol, allowed):
    """Where the residual of reference `ref` (a column along_rows, else a row) vanished over
    the indices not used_along: the first index neither a reference before (`was`) nor a
    pivot (`used_fixed`) as the new reference, its residual in `ref` (A, B: the factors along
    and across it). Returns it, -1 where no restart is needed, -2 where none is possible
    (none left, or not `allowed`): the reference is dead."""
    _, big = _largest_free(ref, used_along)
    if big > zero_tol:
        return -1
    if not allowed:
        return -2
    for j in range(len(was)):
        if not was[j] and not used_fixed[j]:
            was[j] = True
            _cross(src, j, along_rows, ref)
            _minus_approximation(ref, A, B, j, rank)
            return j
    return -2


@nb.njit(cache=True)
def _aca_plus(src, eps, zero_tol):
    """ACA+ of the source's matrix G to relative Frobenius accuracy eps: (U (mp, r),
    V (np, r), converged, entries evaluated), G ~ U V^T. aca.py's algorithm on
    one block: reference column and row, the pivot where the references promise more,
    restarts of exhausted references, the stop on |u| |v| and both scaled references."""
    mp, np_ = _shape(src)
    kcap = min(mp, np_)
    K = min(16, kcap)
    U = np.zeros((mp, K), np.complex128)
    V = np.zeros((np_, K), np.complex128)
    used_r = np.zeros(mp, np.bool_)
    used_c = np.zeros(np_, np.bool_)
    was_r = np.zeros(mp, np.bool_)
    was_c = np.zeros(np_, np.bool_)
    col = np.empty(mp, np.complex128)
    row = np.empty(np_, np.complex128)
    refcol = np.empty(mp, np.complex128)
    refrow = np.empty(np_, np.complex128)
    used_none_r = np.zeros(mp, np.bool_)
    used_none_c = np.zeros(np_, np.bool_)
    evals = 0
    jref = 0
    was_c[0] = True
    _cross(src, jref, True, refcol)
    iref, smallest = 0, np.inf
    for p in range(mp):
        if abs(refcol[p]) < smallest:
            iref, smallest = p, abs(refcol[p])
    was_r[iref] = True
    _cross(src, iref, False, refrow)
    evals += mp + np_
    rank = 0
    frob2 = 0.0
    restarts_r = restarts_c = 0
    dead_r = dead_c = False
    converged = False
    while True:
        # restart a reference whose residual vanished (its index became a pivot, or the
        # block is exhausted there) with the first row / column not yet used for anything
        if not dead_c:
            new = _restarted(src, refcol, used_r, was_c, used_c, True, U, V, rank, zero_tol,
                             restarts_c < MAX_RESTARTS)
            dead_c = new == -2
            if new >= 0:
                restarts_c += 1
                jref = new
                evals += mp
        if not dead_r:
            new = _restarted(src, refrow, used_c, was_r, used_r, False, V, U, rank, zero_tol,
                             restarts_r < MAX_RESTARTS)
            dead_r = new == -2
            if new >= 0:
                restarts_r += 1
                iref = new
                evals += np_
        if (dead_r and dead_c) or used_r.all() or used_c.all() or rank >= kcap:
            break
        istar, acol = (-1, -1.0) if dead_c else _largest_free(refcol, used_r)
        jstar, arow = (-1, -1.0) if dead_r else _largest_free(refrow, used_c)
        if arow > acol:  # the reference row promises more: its column first
            _cross(src, jstar, True, col)
            _minus_approximation(col, U, V, jstar, rank)
            ipiv, _ = _largest_free(col, used_r)
            jpiv = jstar
            _cross(src, ipiv, False, row)
            _minus_approximation(row, V, U, ipiv, rank)
        else:
            _cross(src, istar, False, row)
            _minus_approximation(row, V, U, istar, rank)
            jpiv, _ = _largest_free(row, used_c)
            ipiv = istar
            _cross(src, jpiv, True, col)
            _minus_approximation(col, U, V, jpiv, rank)
        evals += mp + np_
        used_r[ipiv] = True
        used_c[jpiv] = True
        pivot = col[ipiv]
        if abs(pivot) <= zero_tol:
            continue
        if rank == K:  # grow the factors before they fill
            K = min(2 * K, kcap)
            U2 = np.zeros((mp, K), np.complex128)
            V2 = np.zeros((np_, K), np.complex128)
            U2[:, :rank] = U[:, :rank]
            V2[:, :rank] = V[:, :rank]
            U, V = U2, V2
        u = col / pivot
        v = row
        # |S + u v^T|^2 = |S|^2 + 2 Re sum_l (u_l^H u)(v_l^H v) + |u|^2 |v|^2 (loops, not
        # BLAS's dot products: see the module's docstring)
        cross_term = 0.0
        for l in range(rank):
            a = 0j
            for p in range(mp):
                a += U[p, l].conjugate() * u[p]
            c = 0j
            for q in range(np_):
                c += V[q, l].conjugate() * v[q]
            cross_term += 2.0 * (a * c).real
        nu2 = _free_norm2(u, used_none_r)
        nv2 = _free_norm2(v, used_none_c)
        frob2 = max(frob2 + cross_term + nu2 * nv2, 0.0)
        U[:, rank] = u
        V[:, rank] = v
        rank += 1
        # the reference residuals follow the new cross
        vj, ui = v[jref], u[iref]
        for p in range(mp):
            refcol[p] -= u[p] * vj
        for q in range(np_):
            refrow[q] -= ui * v[q]
        tol2 = eps * eps * frob2
        rc2 = 0.0 if dead_c else _free_norm2(refcol, used_r) * np_
        rr2 = 0.0 if dead_r else _free_norm2(refrow, used_c) * mp
        if nu2 * nv2 <= tol2 and rc2 <= tol2 and rr2 <= tol2:
            converged = True
            break
    return U[:, :rank], V[:, :rank], converged, evals


@nb.njit(cache=True)
def _to_dofs(side, start, size, els, X, maue, scale_normals):
    """The point factor X summed into the dofs [start, start + size) of the elements els:
    (size, K) with the basis values, or with `maue` (size, 6 K): the curls [0, 1, 2] and the
    normals times the basis values [3, 4, 5] (these times scale_normals), K each."""
    dofs, nrm, phi, curl = side[2], side[5], side[6], side[7]
    nq = phi.shape[0]
    K = X.shape[1]
    out = np.zeros((size, (6 if maue else 1) * K), np.complex128)
    for jj in range(len(els)):
        e = els[jj]
        for a in range(dofs.shape[1]):
            i = dofs[e, a] - start
            if i < 0 or i >= size:
                continue
            for q in range(nq):
                p = jj * nq + q
                if not maue:
                    for k in range(K):
                        out[i, k] += phi[q, a] * X[p, k]
                    continue
                for c in range(3):
                    cw = curl[e, a, c]
                    nw = scale_normals * (nrm[e, c] * phi[q, a])
                    for k in range(K):
                        out[i, c * K + k] += cw * X[p, k]
                        out[i, (3 + c) * K + k] += nw * X[p, k]
    return out


@nb.njit(parallel=True, cache=True)
def _blocks(op, kr, ki, T, S, r0, m, c0, n, t_el, t_cnt, s_el, s_cnt, eps, zero_tol, U, V,
            rank, converged, evals):
    """Factors of each block b (rows r0[b] + [0, m[b]), columns c0[b] + [0, n[b]); its
    elements t_el[b, :t_cnt[b]] and s_el[b, :s_cnt[b]]) into U[b, :m[b], :rank[b]] and
    V[b, :n[b], :rank[b]]; rank[b] = -1 where they would not fit U's width. The point
    matrix's ACA at POINT_EPS eps, its factors summed into dofs (W: six sets), and ACA of
    that product at eps, as the entries' ACA would have run."""
    maue = op == _W
    kop = _V if maue else op  # W: the G of Maue's formula
    k2 = complex(kr, ki) ** 2
    none2 = np.zeros((0, 0), np.complex128)
    for b in nb.prange(len(t_cnt)):
        X, NX, WX = _points(T, t_el[b, :t_cnt[b]])
        Y, NY, WY = _points(S, s_el[b, :s_cnt[b]])
        Up, Vp, conv, ev = _aca_plus((POINTS, kop, kr, ki, X, NX, WX, Y, NY, WY, none2, none2),
                                     POINT_EPS * eps, zero_tol)
        # W = curl . curl G - k^2 (n . n) G: the normals' sets of the columns times -k^2
        A = _to_dofs(T, r0[b], m[b], t_el[b, :t_cnt[b]], Up, maue, 1.0 + 0j)
        B = _to_dofs(S, c0[b], n[b], s_el[b, :s_cnt[b]], Vp, maue, -k2)
        Ub, Vb, _, _ = _aca_plus((FACTORS, kop, kr, ki, X, NX, WX, Y, NY, WY, A, B), eps,
                                 zero_tol)
        r = Ub.shape[1]
        evals[b] = ev
        converged[b] = conv
        if r > U.shape[2]:
            rank[b] = -1
            continue
        rank[b] = r
        U[b, :m[b], :r] = Ub
        V[b, :n[b], :r] = Vb


@nb.njit(parallel=True, cache=True)
def _block_elements(side, start, size, out, count):
    """out[b, :count[b]]: the elements touching dofs [start[b], start[b] + size[b]) (with
    out of width 0: only count)."""
    for b in nb.prange(len(start)):
        els = _elements_of(side, start[b], start[b] + size[b])
        count[b] = len(els)
        if out.shape[1]:
            out[b, :len(els)] = els


def _elements(side, start, size):
    count = np.zeros(len(start), np.int64)
    _block_elements(side, start, size, np.zeros((len(start), 0), np.int64), count)
    out = np.zeros((len(start), max(1, int(count.max(initial=0)))), np.int64)
    _block_elements(side, start, size, out, count)
    return out, count


def point_aca(kernel_, r0, m, c0, n, eps, dtype, zero_tol, length, width):
    """ACAResult of the blocks (host int arrays r0, m, c0, n), their factors `length` rows
    and first at most `width` columns wide (blocks of higher rank are redone at full
    width); compress_far's recompression then cuts them to eps."""
    sums = kernel_.elements
    r0, m, c0, n = _ints(r0, m, c0, n)
    k = sums.k
    t_el, t_cnt = _elements(sums.T, r0, m)
    s_el, s_cnt = _elements(sums.S, c0, n)

    def run(ids, w):
        U = np.zeros((len(ids), length, w), np.complex128)
        V = np.zeros((len(ids), length, w), np.complex128)
        rank = np.zeros(len(ids), np.int64)
        conv = np.zeros(len(ids), np.bool_)
        ev = np.zeros(len(ids), np.int64)
        with nb.parallel_chunksize(1):  # blocks differ in work: one at a time
            _blocks(sums.op, k.real, k.imag, sums.T, sums.S, r0[ids], m[ids], c0[ids], n[ids],
                    t_el[ids], t_cnt[ids], s_el[ids], s_cnt[ids], float(eps), float(zero_tol),
                    U, V, rank, conv, ev)
        kernel_.evaluations += int(ev.sum())
        kernel_.entries += int(ev.sum())
        return U, V, rank, conv

    U, V, rank, conv = run(np.arange(len(r0)), max(1, min(width, length)))
    wide = np.nonzero(rank < 0)[0]
    if len(wide):  # a rank above the first guess: those blocks again, as wide as they can be
        Uw, Vw, rw, cw = run(wide, length)
        grow = int(rw.max()) - U.shape[2]
        U, V = (np.concatenate([X, np.zeros(X.shape[:2] + (grow,), X.dtype)], axis=2)
                for X in (U, V))
        U[wide], V[wide] = Uw[:, :, :U.shape[2]], Vw[:, :, :U.shape[2]]
        rank[wide], conv[wide] = rw, cw
    kmax = max(1, int(rank.max(initial=0)))
    U, V = U[:, :, :kmax], V[:, :, :kmax]
    if np.dtype(dtype).kind != "c":  # Laplace: real kernels, real weights
        U, V = U.real, V.real
    return ACAResult(U.astype(dtype, copy=False), V.astype(dtype, copy=False), rank, 0, conv, 0)
