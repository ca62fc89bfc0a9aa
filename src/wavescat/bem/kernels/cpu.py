"""Numba kernels of the Galerkin boundary integral operators (CPU twin of kernels_gpu.py).

Operator codes and kernels: green.py (x on the test element (A), y on the trial element (B)).

Regular pairs use tensor Gauss rules with points and weights precomputed per element
(`pts` (m, nq, 3), `wts` (m, nq) = rule weight * element area); for P1 the 3x3 local
matrix shares one kernel evaluation per pair of quadrature points.
Touching pairs use paired (Sauter-Schwab) points given per rule kind on the reference
triangles, with the local vertex permutation of each pair.
All kernels compute in float64.
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .green import Operator, green, kernel, radial

CHUNK = 64  # pairs per parallel task (one scratch allocation per task)
SCHUNK = 8  # touching pairs per parallel task
CONTRACT = {"contract"}  # a * b + c as one FMA (more accurate, as on the GPU); no reassociation
_K, _KP, _W = int(Operator.double_layer), int(Operator.adjoint_double_layer), int(Operator.hypersingular)


@njit(cache=True, fastmath=False, error_model="numpy")
def _regular_pair(op, a, b, pts_a, wts_a, nrm_a, phi_a, pts_b, wts_b, nrm_b, phi_b,
                  kr, ki, t_re, t_im, loc_re, loc_im):
    """Local matrix S_ij = sum_qa sum_qb w w kernel phi_a_i(qa) phi_b_j(qb) into loc."""
    nla = phi_a.shape[1]
    nlb = phi_b.shape[1]
    for i in range(nla):
        for j in range(nlb):
            loc_re[i, j] = 0.0
            loc_im[i, j] = 0.0
    na0, na1, na2 = nrm_a[a, 0], nrm_a[a, 1], nrm_a[a, 2]
    nb0, nb1, nb2 = nrm_b[b, 0], nrm_b[b, 1], nrm_b[b, 2]
    for qa in range(pts_a.shape[1]):
        x0, x1, x2 = pts_a[a, qa, 0], pts_a[a, qa, 1], pts_a[a, qa, 2]
        for j in range(nlb):
            t_re[j] = 0.0
            t_im[j] = 0.0
        for qb in range(pts_b.shape[1]):
            gre, gim = kernel(op, x0 - pts_b[b, qb, 0], x1 - pts_b[b, qb, 1],
                               x2 - pts_b[b, qb, 2], na0, na1, na2, nb0, nb1, nb2, kr, ki)
            wb = wts_b[b, qb]
            for j in range(nlb):
                c = wb * phi_b[qb, j]
                t_re[j] += gre * c
                t_im[j] += gim * c
        wa = wts_a[a, qa]
        for i in range(nla):
            c = wa * phi_a[qa, i]
            for j in range(nlb):
                loc_re[i, j] += c * t_re[j]
                loc_im[i, j] += c * t_im[j]


# Regular pairs are evaluated PAIRS at a time, their point pairs interleaved (index q PAIRS + p):
# one kernel-value loop over PAIRS x 36 points fills whole 8-wide vectors (36 alone leave a
# scalar remainder); the contraction with the bases then runs pair by pair, its sums in registers.
PAIRS = 8


@njit(cache=True, fastmath=CONTRACT, error_model="numpy")
def _kernel_values(op, d, val, nqq, kr, ki, damped):
    """Weighted kernel values at nqq point pairs (x test, y trial) given as d[0] = r^2,
    d[1] = weight, d[2] = (x - y).n_x, d[3] = (y - x).n_y: val[0] + i val[1] of (x, y) and
    val[2] + i val[3] of the swapped pair (test y, trial x), sharing one evaluation of G
    (V, W symmetric, K <-> K'). Branch-free in the loop (selects on loop invariants) so that
    LLVM vectorises it, with one division and one square root per point pair."""
    ktype = op == _K or op == _KP
    for q in range(nqq):
        r2 = d[0, q]
        rinv = 1.0 / math.sqrt(r2)
        r = r2 * rinv
        gre, gim = green(r, rinv, kr, ki, damped)
        gre *= d[1, q]
        gim *= d[1, q]
        fre, fim = radial(gre, gim, r, rinv, kr, ki)
        hre = fre if ktype else gre
        him = fim if ktype else gim
        pb = d[3, q] if ktype else 1.0
        pa = d[2, q] if ktype else 1.0
        p1 = pb if op == _K else pa
        p2 = pa if op == _K else pb
        val[0, q] = hre * p1
        val[1, q] = him * p1
        val[2, q] = hre * p2
        val[3, q] = him * p2


@njit(cache=True, fastmath=CONTRACT, error_model="numpy")
def _point_pairs(a, b, pts, wts, nrm, d, p):
    """d[:, q PAIRS + p], q = qa nq + qb, for the regular rule's points of elements a (x), b (y)."""
    nq = pts.shape[1]
    na0, na1, na2 = nrm[a, 0], nrm[a, 1], nrm[a, 2]
    nb0, nb1, nb2 = nrm[b, 0], nrm[b, 1], nrm[b, 2]
    for qa in range(nq):
        x0, x1, x2, wa = pts[a, qa, 0], pts[a, qa, 1], pts[a, qa, 2], wts[a, qa]
        for qb in range(nq):
            q = (qa * nq + qb) * PAIRS + p
            dx = x0 - pts[b, qb, 0]
            dy = x1 - pts[b, qb, 1]
            dz = x2 - pts[b, qb, 2]
            d[0, q] = dx * dx + dy * dy + dz * dz
            d[1, q] = wa * wts[b, qb]
            d[2, q] = dx * na0 + dy * na1 + dz * na2
            d[3, q] = -(dx * nb0 + dy * nb1 + dz * nb2)


@njit(cache=True, fastmath=CONTRACT, error_model="numpy", inline="always")
def _contract_p1(val, phi, loc, c, p, nq):
    """P1 local matrix loc[c, :, :, p] from the kernel values of lane p: nine sums in registers,
    the three trial sums first."""
    l00 = l01 = l02 = l10 = l11 = l12 = l20 = l21 = l22 = 0.0
    for qa in range(nq):
        s0 = s1 = s2 = 0.0
        for qb in range(nq):
            x = val[c, (qa * nq + qb) * PAIRS + p]
            s0 += x * phi[qb, 0]
            s1 += x * phi[qb, 1]
            s2 += x * phi[qb, 2]
        g0, g1, g2 = phi[qa, 0], phi[qa, 1], phi[qa, 2]
        l00 += g0 * s0
        l01 += g0 * s1
        l02 += g0 * s2
        l10 += g1 * s0
        l11 += g1 * s1
        l12 += g1 * s2
        l20 += g2 * s0
        l21 += g2 * s1
        l22 += g2 * s2
    loc[c, 0, 0, p], loc[c, 0, 1, p], loc[c, 0, 2, p] = l00, l01, l02
    loc[c, 1, 0, p], loc[c, 1, 1, p], loc[c, 1, 2, p] = l10, l11, l12
    loc[c, 2, 0, p], loc[c, 2, 1, p], loc[c, 2, 2, p] = l20, l21, l22


@njit(cache=True, fastmath=CONTRACT, error_model="numpy")
def _regular_pairs_both(op, pa, pb, npairs, pts, wts, nrm, phi, kr, ki, t, loc):
    """As _regular_pair for a space paired with itself, for the pairs (pa[p], pb[p]), p < npairs
    <= PAIRS: loc[0, :, :, p] + i loc[1, :, :, p] is the local matrix of (a, b), loc[2] + i loc[3]
    at [i, j] the one of the swapped pair (b, a) at [j, i] (K and K' swap; V and W need only
    loc[0:2]). t = _pair_scratch(...)[0]. Lanes p >= npairs hold stale values: unused."""
    nq = pts.shape[1]
    nl = phi.shape[1]
    d, val, sj = t  # (4, nq^2 PAIRS), (4, nq^2 PAIRS), (nl, PAIRS)
    for p in range(npairs):
        _point_pairs(pa[p], pb[p], pts, wts, nrm, d, p)
    _kernel_values(op, d, val, nq * nq * PAIRS, kr, ki, ki != 0.0)
    nc = 4 if (op == _K or op == _KP) else 2
    for c in range(nc):
        for p in range(npairs):
            if nl == 3 and nq == 6:  # the default rule: loops of known length, unrolled
                _contract_p1(val, phi, loc, c, p, 6)
                continue
            if nl == 3:
                _contract_p1(val, phi, loc, c, p, nq)
                continue
            for qa in range(nq):
                for j in range(nl):
                    acc = 0.0
                    for qb in range(nq):
                        acc += val[c, (qa * nq + qb) * PAIRS + p] * phi[qb, j]
                    sj[j, p] = acc
                for i in range(nl):
                    for j in range(nl):
                        if qa == 0:
                            loc[c, i, j, p] = 0.0
                        loc[c, i, j, p] += phi[qa, i] * sj[j, p]


@njit(cache=True, error_model="numpy")
def _pair_scratch(nq, nl):
    """(t, loc, pa, pb) for _regular_pairs_both; d starts as r^2 = 1, weight 0 in every lane."""
    d = np.zeros((4, nq * nq * PAIRS))
    d[0] = 1.0
    t = (d, np.empty((4, nq * nq * PAIRS)), np.empty((nl, PAIRS)))  # d, kernel values, sums
    return t, np.empty((4, nl, nl, PAIRS)), np.zeros(PAIRS, np.int64), np.zeros(PAIRS, np.int64)


@njit(parallel=True, cache=True, fastmath=CONTRACT, error_model="numpy")
def dense_regular_symmetric(op, color_elements, tri, dofs, cen, near, pts, wts, nrm, phi, curl,
                            kr, ki, out, out_sw):
    """Test space = trial space: every regular pair a < b (a in color_elements) evaluated
    once; the pair (a, b) goes to out at [dofs_a, dofs_b] and, for K and K', the swapped
    pair (b, a), transposed, to out_sw at [dofs_a, dofs_b]. The matrix is out + out_sw^T
    (V, W: out + out^T), plus touching and near pairs. Rows of one color are race-free as in
    dense_regular."""
    nl = phi.shape[1]
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    cplx = out.shape[2] == 2
    swapped = op == _K or op == _KP
    nq = pts.shape[1]
    m = pts.shape[0]
    for e in prange(len(color_elements)):
        a = color_elements[e]
        t, loc, pa, pb = _pair_scratch(nq, nl)
        pa[:] = a
        b = a + 1
        while b < m:
            nb = 0  # the next PAIRS regular pairs (a, b)
            while b < m and nb < PAIRS:
                rad = max(near[a], near[b])
                d0 = cen[a, 0] - cen[b, 0]
                d1 = cen[a, 1] - cen[b, 1]
                d2 = cen[a, 2] - cen[b, 2]
                if not _touch(tri, tri, a, b) and d0 * d0 + d1 * d1 + d2 * d2 >= rad * rad:
                    pb[nb] = b
                    nb += 1
                b += 1
            _regular_pairs_both(op, pa, pb, nb, pts, wts, nrm, phi, kr, ki, t, loc)
            for p in range(nb):
                bp = pb[p]
                if op == _W:
                    _hypersingular_finish(a, bp, curl, curl, nrm, nrm, k2re, k2im, loc[0, :, :, p], loc[1, :, :, p])
                for i in range(nl):
                    r = dofs[a, i]
                    for j in range(nl):
                        cidx = dofs[bp, j]
                        out[r, cidx, 0] += loc[0, i, j, p]
                        if cplx:
                            out[r, cidx, 1] += loc[1, i, j, p]
                        if swapped:
                            out_sw[r, cidx, 0] += loc[2, i, j, p]
                            if cplx:
                                out_sw[r, cidx, 1] += loc[3, i, j, p]


@njit(cache=True, fastmath=False, error_model="numpy")
def _hypersingular_finish(a, b, curl_a, curl_b, nrm_a, nrm_b, k2re, k2im, loc_re, loc_im):
    """Turn S_ij = int int G phi_i phi_j into curl_i.curl_j int int G - k^2 n.n S_ij (P1: sum S = int int G)."""
    nla = loc_re.shape[0]
    nlb = loc_re.shape[1]
    s0re = 0.0
    s0im = 0.0
    for i in range(nla):
        for j in range(nlb):
            s0re += loc_re[i, j]
            s0im += loc_im[i, j]
    nn = nrm_a[a, 0] * nrm_b[b, 0] + nrm_a[a, 1] * nrm_b[b, 1] + nrm_a[a, 2] * nrm_b[b, 2]
    for i in range(nla):
        for j in range(nlb):
            cc = (curl_a[a, i, 0] * curl_b[b, j, 0] + curl_a[a, i, 1] * curl_b[b, j, 1]
                  + curl_a[a, i, 2] * curl_b[b, j, 2])
            sre = loc_re[i, j]
            sim = loc_im[i, j]
            loc_re[i, j] = cc * s0re - nn * (k2re * sre - k2im * sim)
            loc_im[i, j] = cc * s0im - nn * (k2re * sim + k2im * sre)


@njit(parallel=True, cache=True, fastmath=False, error_model="numpy")
def regular_local(op, pa, pb, pts_a, wts_a, nrm_a, phi_a, curl_a,
                  pts_b, wts_b, nrm_b, phi_b, curl_b, kr, ki, out_re, out_im):
    """Local matrices (npairs, nla, nlb) of the element pairs (pa[p], pb[p]), regular rule."""
    npairs = len(pa)
    nla = phi_a.shape[1]
    nlb = phi_b.shape[1]
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    nchunks = (npairs + CHUNK - 1) // CHUNK
    for c in prange(nchunks):
        t_re = np.empty(nlb)
        t_im = np.empty(nlb)
        for p in range(c * CHUNK, min(npairs, (c + 1) * CHUNK)):
            a = pa[p]
            b = pb[p]
            _regular_pair(op, a, b, pts_a, wts_a, nrm_a, phi_a, pts_b, wts_b, nrm_b, phi_b,
                          kr, ki, t_re, t_im, out_re[p], out_im[p])
            if op == _W:
                _hypersingular_finish(a, b, curl_a, curl_b, nrm_a, nrm_b, k2re, k2im,
                                      out_re[p], out_im[p])


@njit(cache=True, error_model="numpy")
def _touch(tri_a, tri_b, a, b):
    for i in range(3):
        for j in range(3):
            if tri_a[a, i] == tri_b[b, j]:
                return True
    return False


@njit(parallel=True, cache=True, fastmath=False, error_model="numpy")
def dense_regular(op, color_elements, tri_a, tri_b, dofs_a, dofs_b, cen_a, cen_b, near_a, near_b,
                  pts_a, wts_a, nrm_a, phi_a, curl_a, pts_b, wts_b, nrm_b, phi_b, curl_b,
                  kr, ki, out):
    """Add all regular pairs of the test elements `color_elements` x every trial element
    into the dense matrix `out` (n_test, n_trial, 1 or 2: re[, im]). Touching pairs, and
    near pairs (centroid distance < max(near_a[a], near_b[b])), are left to other rules.
    Test elements of one color share no test dof, so rows are race-free."""
    nla = phi_a.shape[1]
    nlb = phi_b.shape[1]
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    cplx = out.shape[2] == 2
    for e in prange(len(color_elements)):
        a = color_elements[e]
        t_re = np.empty(nlb)
        t_im = np.empty(nlb)
        loc_re = np.empty((nla, nlb))
        loc_im = np.empty((nla, nlb))
        for b in range(pts_b.shape[0]):
            if _touch(tri_a, tri_b, a, b):
                continue
            rad = max(near_a[a], near_b[b])
            d0 = cen_a[a, 0] - cen_b[b, 0]
            d1 = cen_a[a, 1] - cen_b[b, 1]
            d2 = cen_a[a, 2] - cen_b[b, 2]
            if d0 * d0 + d1 * d1 + d2 * d2 < rad * rad:
                continue
            _regular_pair(op, a, b, pts_a, wts_a, nrm_a, phi_a, pts_b, wts_b, nrm_b, phi_b,
                          kr, ki, t_re, t_im, loc_re, loc_im)
            if op == _W:
                _hypersingular_finish(a, b, curl_a, curl_b, nrm_a, nrm_b, k2re, k2im,
                                      loc_re, loc_im)
            for i in range(nla):
                r = dofs_a[a, i]
                for j in range(nlb):
                    cidx = dofs_b[b, j]
                    out[r, cidx, 0] += loc_re[i, j]
                    if cplx:
                        out[r, cidx, 1] += loc_im[i, j]


@njit(cache=True, fastmath={"contract", "reassoc"}, error_model="numpy")
def _barycentric_moments(g, h, ref_a, ref_b, q0, nqq, m):
    """m[0, i, j] = sum_q g[q] la_i lb_j and m[1, i, j] the same of h, at the points q0 + q of a
    paired rule, la, lb the barycentric coordinates (1 - s - t, s, t) on the two reference
    triangles. Summation order free (reassoc): LLVM vectorises the sums over thousands of points."""
    m00 = m01 = m02 = m10 = m11 = m12 = m20 = m21 = m22 = 0.0
    n00 = n01 = n02 = n10 = n11 = n12 = n20 = n21 = n22 = 0.0
    for q in range(nqq):
        s, t = ref_a[0, q0 + q], ref_a[1, q0 + q]
        u, v = ref_b[0, q0 + q], ref_b[1, q0 + q]
        w = 1.0 - u - v
        r = 1.0 - s - t
        g0, g1, g2 = g[q] * r, g[q] * s, g[q] * t
        h0, h1, h2 = h[q] * r, h[q] * s, h[q] * t
        m00 += g0 * w
        m01 += g0 * u
        m02 += g0 * v
        m10 += g1 * w
        m11 += g1 * u
        m12 += g1 * v
        m20 += g2 * w
        m21 += g2 * u
        m22 += g2 * v
        n00 += h0 * w
        n01 += h0 * u
        n02 += h0 * v
        n10 += h1 * w
        n11 += h1 * u
        n12 += h1 * v
        n20 += h2 * w
        n21 += h2 * u
        n22 += h2 * v
    m[0, 0, 0], m[0, 0, 1], m[0, 0, 2] = m00, m01, m02
    m[0, 1, 0], m[0, 1, 1], m[0, 1, 2] = m10, m11, m12
    m[0, 2, 0], m[0, 2, 1], m[0, 2, 2] = m20, m21, m22
    m[1, 0, 0], m[1, 0, 1], m[1, 0, 2] = n00, n01, n02
    m[1, 1, 0], m[1, 1, 1], m[1, 1, 2] = n10, n11, n12
    m[1, 2, 0], m[1, 2, 1], m[1, 2, 2] = n20, n21, n22


@njit(parallel=True, cache=True, fastmath=CONTRACT, error_model="numpy")
def singular_local(op, pa, pb, kind, perm_a, perm_b, offsets, ref_a, ref_b, ref_w,
                   corners_a, areas_a, nrm_a, curl_a, nla, corners_b, areas_b, nrm_b, curl_b, nlb,
                   kr, ki, out_re, out_im, sw_re, sw_im):
    """Local matrices of touching pairs with paired rules: rule `kind[p]` has points
    ref_a/ref_b[:, offsets[kind]:offsets[kind+1]] ((2, n): coordinates (s, t) in rows, for
    contiguous vector loads) on the reference triangles whose corners
    are the element corners in the order perm_a[p] / perm_b[p]; ref_w sum to 1 for a
    smooth integrand over the pair of unit-area triangles. When sw_re is not empty (K, K'
    of a space with itself), sw_re/sw_im[p, i, j] also get the swapped pair (b, a) at [j, i]."""
    npairs = len(pa)
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    swapped = len(sw_re) > 0
    nmax = 0
    for r in range(len(offsets) - 1):
        nmax = max(nmax, offsets[r + 1] - offsets[r])
    for chunk in prange((npairs + SCHUNK - 1) // SCHUNK):
        # scratch once per task: a coincident rule has thousands of points, and fresh pages per
        # pair cost more than the pair's arithmetic
        d = np.empty((4, nmax))  # r^2, weights and normal projections of x - y
        val = np.empty((4, nmax))
        ca = np.empty((3, 3))  # corner 0 and the two edge vectors, permuted order
        cb = np.empty((3, 3))
        m = np.empty((2, 3, 3))
        lp = np.empty((4, 3, 3))
        for p in range(chunk * SCHUNK, min(npairs, (chunk + 1) * SCHUNK)):
            a = pa[p]
            b = pb[p]
            for c in range(3):
                ca[0, c] = corners_a[a, perm_a[p, 0], c]
                ca[1, c] = corners_a[a, perm_a[p, 1], c] - ca[0, c]
                ca[2, c] = corners_a[a, perm_a[p, 2], c] - ca[0, c]
                cb[0, c] = corners_b[b, perm_b[p, 0], c]
                cb[1, c] = corners_b[b, perm_b[p, 1], c] - cb[0, c]
                cb[2, c] = corners_b[b, perm_b[p, 2], c] - cb[0, c]
            q0, q1 = offsets[kind[p]], offsets[kind[p] + 1]
            nqq = q1 - q0
            scale = areas_a[a] * areas_b[b]
            for q in range(nqq):
                s, t = ref_a[0, q0 + q], ref_a[1, q0 + q]
                u, v = ref_b[0, q0 + q], ref_b[1, q0 + q]
                dx = (ca[0, 0] + s * ca[1, 0] + t * ca[2, 0]) - (cb[0, 0] + u * cb[1, 0] + v * cb[2, 0])
                dy = (ca[0, 1] + s * ca[1, 1] + t * ca[2, 1]) - (cb[0, 1] + u * cb[1, 1] + v * cb[2, 1])
                dz = (ca[0, 2] + s * ca[1, 2] + t * ca[2, 2]) - (cb[0, 2] + u * cb[1, 2] + v * cb[2, 2])
                d[0, q] = dx * dx + dy * dy + dz * dz
                d[1, q] = ref_w[q0 + q] * scale
                d[2, q] = dx * nrm_a[a, 0] + dy * nrm_a[a, 1] + dz * nrm_a[a, 2]
                d[3, q] = -(dx * nrm_b[b, 0] + dy * nrm_b[b, 1] + dz * nrm_b[b, 2])
            _kernel_values(op, d, val, nqq, kr, ki, ki != 0.0)
            lp[:] = 0.0  # permuted frame: row ci <-> corner perm_a[ci]
            nc = 4 if swapped else 2
            for c in range(0, nc, 2):  # (re, im) of a pair, or of its swap, in one pass
                _barycentric_moments(val[c], val[c + 1], ref_a, ref_b, q0, nqq, m)
                for i in range(3):  # P0 sides sum the barycentric coordinates (they sum to 1)
                    for j in range(3):
                        lp[c, 0 if nla == 1 else i, 0 if nlb == 1 else j] += m[0, i, j]
                        lp[c + 1, 0 if nla == 1 else i, 0 if nlb == 1 else j] += m[1, i, j]
            for i in range(nla):
                ia = 0 if nla == 1 else perm_a[p, i]
                for j in range(nlb):
                    jb = 0 if nlb == 1 else perm_b[p, j]
                    out_re[p, ia, jb] = lp[0, i, j]
                    out_im[p, ia, jb] = lp[1, i, j]
                    if swapped:
                        sw_re[p, ia, jb] = lp[2, i, j]
                        sw_im[p, ia, jb] = lp[3, i, j]
            if op == _W:
                _hypersingular_finish(a, b, curl_a, curl_b, nrm_a, nrm_b, k2re, k2im, out_re[p], out_im[p])


@njit(parallel=True, cache=True, fastmath=CONTRACT, error_model="numpy")
def regular_local_both(op, pa, pb, pts, wts, nrm, phi, curl, kr, ki, out_re, out_im, sw_re, sw_im):
    """regular_local for a space paired with itself, with (for K, K') the swapped pairs
    (b, a) transposed into sw_re/sw_im as in singular_local."""
    npairs = len(pa)
    nl = phi.shape[1]
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    swapped = len(sw_re) > 0
    nchunks = (npairs + CHUNK - 1) // CHUNK
    nq = pts.shape[1]
    for c in prange(nchunks):
        t, loc, la, lb = _pair_scratch(nq, nl)
        end = min(npairs, (c + 1) * CHUNK)
        for p0 in range(c * CHUNK, end, PAIRS):
            n = min(PAIRS, end - p0)
            la[:n] = pa[p0:p0 + n]
            lb[:n] = pb[p0:p0 + n]
            _regular_pairs_both(op, la, lb, n, pts, wts, nrm, phi, kr, ki, t, loc)
            for l in range(n):
                p = p0 + l
                if op == _W:
                    _hypersingular_finish(pa[p], pb[p], curl, curl, nrm, nrm, k2re, k2im,
                                          loc[0, :, :, l], loc[1, :, :, l])
                out_re[p] = loc[0, :, :, l]
                out_im[p] = loc[1, :, :, l]
                if swapped:
                    sw_re[p] = loc[2, :, :, l]
                    sw_im[p] = loc[3, :, :, l]


@njit(cache=True, error_model="numpy")
def scatter_local(pa, pb, dofs_a, dofs_b, loc, row_pos, col_pos, out):
    """out[row_pos[dof_a], col_pos[dof_b]] += loc[p] for local dofs that are in the block."""
    for p in range(len(pa)):
        a = pa[p]
        b = pb[p]
        for i in range(loc.shape[1]):
            r = row_pos[dofs_a[a, i]]
            if r < 0:
                continue
            for j in range(loc.shape[2]):
                c = col_pos[dofs_b[b, j]]
                if c >= 0:
                    out[r, c] += loc[p, i, j]


@njit(cache=True, error_model="numpy")
def greedy_coloring(element_dofs, n_dofs):
    """Colors of elements such that elements of one color share no dof (greedy)."""
    m, nloc = element_dofs.shape
    color = np.full(m, -1, np.int64)
    # bitmask of colors already used at each dof (up to 64 colors)
    used = np.zeros(n_dofs, np.int64)
    for e in range(m):
        mask = 0
        for i in range(nloc):
            mask |= used[element_dofs[e, i]]
        c = 0
        while (mask >> c) & 1:
            c += 1
        color[e] = c
        for i in range(nloc):
            used[element_dofs[e, i]] |= (1 << c)
    return color
