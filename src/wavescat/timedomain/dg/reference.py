"""The reference tetrahedron of nodal DG (Hesthaven & Warburton, "Nodal DG Methods", ch. 6, 10).

Reference element: vertices (-1,-1,-1), (1,-1,-1), (-1,1,-1), (-1,-1,1), coordinates (r, s, t).
Faces in Hesthaven-Warburton order: 0: t = -1, 1: s = -1, 2: r + s + t = -1, 3: r = -1.
Nodes are warp-and-blend nodes; the operators come from the orthonormal (Dubiner) basis
through the Vandermonde matrix V: mass M = (V V^T)^-1, Dr = Vr V^-1, LIFT = M^-1 E.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from math import gamma

import numpy as np

from ...errors import InputError

MAX_ORDER = 6
NODE_TOL = 1e-10
# face-local coordinates that parametrise each face in Lift3D
_FACE_COORDS = ((0, 1), (0, 2), (1, 2), (1, 2))
# optimised blend parameter alpha of the warp-and-blend nodes, index N
_ALPHA_OPT = (0.0, 0.0, 0.0, 0.1002, 1.1332, 1.5608, 1.3413, 1.2577, 1.1603, 1.10153,
              0.6080, 0.4523, 0.8856, 0.8717, 0.9655)


def check_order(order) -> int:
    if not isinstance(order, (int, np.integer)) or isinstance(order, bool) or not 1 <= order <= MAX_ORDER:
        raise InputError(f"dg order N = {order!r}: must be an integer in 1..{MAX_ORDER}")
    return int(order)


def jacobi_p(x, alpha: float, beta: float, n: int) -> np.ndarray:
    """Orthonormal Jacobi polynomial P_n^(alpha,beta) at x (normalised on [-1, 1])."""
    x = np.asarray(x, dtype=float)
    g0 = 2 ** (alpha + beta + 1) / (alpha + beta + 1) * gamma(alpha + 1) * gamma(beta + 1) / gamma(alpha + beta + 1)
    p_prev = np.full_like(x, 1.0 / np.sqrt(g0))
    if n == 0:
        return p_prev
    g1 = (alpha + 1) * (beta + 1) / (alpha + beta + 3) * g0
    p = ((alpha + beta + 2) * x / 2 + (alpha - beta) / 2) / np.sqrt(g1)
    a_old = 2 / (2 + alpha + beta) * np.sqrt((alpha + 1) * (beta + 1) / (alpha + beta + 3))
    for i in range(1, n):
        h1 = 2 * i + alpha + beta
        a_new = 2 / (h1 + 2) * np.sqrt((i + 1) * (i + 1 + alpha + beta) * (i + 1 + alpha)
                                       * (i + 1 + beta) / (h1 + 1) / (h1 + 3))
        b_new = -(alpha**2 - beta**2) / h1 / (h1 + 2)
        p_prev, p = p, (-a_old * p_prev + (x - b_new) * p) / a_new
        a_old = a_new
    return p


def grad_jacobi_p(x, alpha: float, beta: float, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros_like(np.asarray(x, dtype=float))
    return np.sqrt(n * (n + alpha + beta + 1)) * jacobi_p(x, alpha + 1, beta + 1, n - 1)


def jacobi_gl(n: int) -> np.ndarray:
    """Legendre-Gauss-Lobatto points on [-1, 1], ascending."""
    if n == 1:
        return np.array([-1.0, 1.0])
    inner = np.sort(np.polynomial.legendre.Legendre.basis(n).deriv().roots().real)
    return np.concatenate([[-1.0], inner, [1.0]])


def _mode_indices(n: int):
    return [(i, j, k) for i in range(n + 1) for j in range(n + 1 - i) for k in range(n + 1 - i - j)]


def _rst_to_abc(r, s, t):
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(np.abs(s + t) > NODE_TOL, 2 * (1 + r) / (-s - t) - 1, -1.0)
        b = np.where(np.abs(t - 1) > NODE_TOL, 2 * (1 + s) / (1 - t) - 1, -1.0)
    return a, b, t


def vandermonde3d(n: int, r, s, t) -> np.ndarray:
    a, b, c = _rst_to_abc(r, s, t)
    cols = [2 * np.sqrt(2) * jacobi_p(a, 0, 0, i) * jacobi_p(b, 2 * i + 1, 0, j) * (1 - b) ** i
            * jacobi_p(c, 2 * (i + j) + 2, 0, k) * (1 - c) ** (i + j) for i, j, k in _mode_indices(n)]
    return np.stack(cols, axis=1)


def grad_vandermonde3d(n: int, r, s, t):
    """(Vr, Vs, Vt): derivatives of the orthonormal basis at (r, s, t)."""
    a, b, c = _rst_to_abc(r, s, t)
    vr, vs, vt = [], [], []
    for i, j, k in _mode_indices(n):
        fa, dfa = jacobi_p(a, 0, 0, i), grad_jacobi_p(a, 0, 0, i)
        gb, dgb = jacobi_p(b, 2 * i + 1, 0, j), grad_jacobi_p(b, 2 * i + 1, 0, j)
        hc, dhc = jacobi_p(c, 2 * (i + j) + 2, 0, k), grad_jacobi_p(c, 2 * (i + j) + 2, 0, k)
        dr = dfa * gb * hc
        if i > 0:
            dr = dr * (0.5 * (1 - b)) ** (i - 1)
        if i + j > 0:
            dr = dr * (0.5 * (1 - c)) ** (i + j - 1)
        ds = 0.5 * (1 + a) * dr
        tmp = dgb * (0.5 * (1 - b)) ** i
        if i > 0:
            tmp = tmp - 0.5 * i * gb * (0.5 * (1 - b)) ** (i - 1)
        if i + j > 0:
            tmp = tmp * (0.5 * (1 - c)) ** (i + j - 1)
        tmp = fa * tmp * hc
        ds = ds + tmp
        dt = 0.5 * (1 + a) * dr + 0.5 * (1 + b) * tmp
        tmp = dhc * (0.5 * (1 - c)) ** (i + j)
        if i + j > 0:
            tmp = tmp - 0.5 * (i + j) * hc * (0.5 * (1 - c)) ** (i + j - 1)
        dt = dt + fa * gb * tmp * (0.5 * (1 - b)) ** i
        scale = 2.0 ** (2 * i + j + 1.5)
        vr.append(dr * scale)
        vs.append(ds * scale)
        vt.append(dt * scale)
    return np.stack(vr, 1), np.stack(vs, 1), np.stack(vt, 1)


def vandermonde2d(n: int, r, s) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where(np.abs(s - 1) > NODE_TOL, 2 * (1 + r) / (1 - s) - 1, -1.0)
    b = s
    cols = [np.sqrt(2) * jacobi_p(a, 0, 0, i) * jacobi_p(b, 2 * i + 1, 0, j) * (1 - b) ** i
            for i in range(n + 1) for j in range(n + 1 - i)]
    return np.stack(cols, axis=1)


def _warp_factor(n: int, xout: np.ndarray) -> np.ndarray:
    """1D warp from equidistant to Gauss-Lobatto points, evaluated at xout (HW evalwarp)."""
    gauss = -jacobi_gl(n)
    xeq = -1 + 2 * (n - np.arange(n + 1)) / n
    warp = np.zeros_like(xout)
    for i in range(n + 1):
        d = np.full_like(xout, gauss[i] - xeq[i])
        for j in range(1, n):
            if i != j:
                d = d * (xout - xeq[j]) / (xeq[i] - xeq[j])
        if i != 0:
            d = -d / (xeq[i] - xeq[0])
        if i != n:
            d = d / (xeq[i] - xeq[n])
        warp = warp + d
    return warp


def _face_shift(n: int, alpha: float, l1, l2, l3):
    """Warp of a face in its own 2D frame (HW evalshift)."""
    b1, b2, b3 = l2 * l3, l1 * l3, l1 * l2
    w1 = b1 * 4 * _warp_factor(n, l3 - l2) * (1 + (alpha * l1) ** 2)
    w2 = b2 * 4 * _warp_factor(n, l1 - l3) * (1 + (alpha * l2) ** 2)
    w3 = b3 * 4 * _warp_factor(n, l2 - l1) * (1 + (alpha * l3) ** 2)
    c2, c3 = np.cos(2 * np.pi / 3), np.cos(4 * np.pi / 3)
    s2, s3 = np.sin(2 * np.pi / 3), np.sin(4 * np.pi / 3)
    return w1 + c2 * w2 + c3 * w3, s2 * w2 + s3 * w3


_EQ_VERTS = np.array([[-1, -1 / np.sqrt(3), -1 / np.sqrt(6)], [1, -1 / np.sqrt(3), -1 / np.sqrt(6)],
                      [0, 2 / np.sqrt(3), -1 / np.sqrt(6)], [0, 0, 3 / np.sqrt(6)]])


def warp_blend_nodes(n: int):
    """Warp-and-blend nodes (r, s, t) on the reference tetrahedron (HW Nodes3D + xyztorst)."""
    idx = [(q, m, p) for p in range(n + 1) for m in range(n + 1 - p) for q in range(n + 1 - p - m)]
    q, m, p = np.array(idx, dtype=float).T
    r, s, t = -1 + 2 * q / n, -1 + 2 * m / n, -1 + 2 * p / n
    lam = [(1 + t) / 2, (1 + s) / 2, -(1 + r + s + t) / 2, (1 + r) / 2]  # L1..L4
    v1, v2, v3, v4 = _EQ_VERTS
    t1 = np.array([v2 - v1, v2 - v1, v3 - v2, v3 - v1])
    t2 = np.array([v3 - 0.5 * (v1 + v2), v4 - 0.5 * (v1 + v2), v4 - 0.5 * (v2 + v3), v4 - 0.5 * (v1 + v3)])
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    t2 /= np.linalg.norm(t2, axis=1, keepdims=True)
    xyz = np.outer(lam[2], v1) + np.outer(lam[3], v2) + np.outer(lam[1], v3) + np.outer(lam[0], v4)
    alpha = _ALPHA_OPT[n] if n < len(_ALPHA_OPT) else 1.0
    shift = np.zeros_like(xyz)
    tol = 1e-10
    for face, (ia, ib, ic, id_) in enumerate([(0, 1, 2, 3), (1, 0, 2, 3), (2, 0, 3, 1), (3, 0, 2, 1)]):
        la, lb, lc, ld = lam[ia], lam[ib], lam[ic], lam[id_]
        w1, w2 = _face_shift(n, alpha, lb, lc, ld)
        blend = lb * lc * ld
        denom = (lb + 0.5 * la) * (lc + 0.5 * la) * (ld + 0.5 * la)
        ok = denom > tol
        blend[ok] = (1 + (alpha * la[ok]) ** 2) * blend[ok] / denom[ok]
        shift += np.outer(blend * w1, t1[face]) + np.outer(blend * w2, t2[face])
        on_face = (la < tol) & ((lb > tol).astype(int) + (lc > tol) + (ld > tol) < 3)
        shift[on_face] = np.outer(w1[on_face], t1[face]) + np.outer(w2[on_face], t2[face])
    xyz = xyz + shift
    # back to (r, s, t): xyz = A rst + centre
    a_mat = 0.5 * np.stack([v2 - v1, v3 - v1, v4 - v1], axis=1)
    rst = np.linalg.solve(a_mat, (xyz - 0.5 * (v2 + v3 + v4 - v1)).T)
    return rst[0], rst[1], rst[2]


@dataclass(frozen=True)
class ReferenceTetrahedron:
    """Nodes and operators of order N: arrays of shape (Np,) / (Np, Np) / (Np, 4 Nfp)."""

    order: int
    r: np.ndarray
    s: np.ndarray
    t: np.ndarray
    V: np.ndarray
    Dr: np.ndarray
    Ds: np.ndarray
    Dt: np.ndarray
    mass: np.ndarray
    face_mask: np.ndarray  # (4, Nfp) volume-node index of each face node
    face_mass: np.ndarray  # (Np, 4 Nfp) E: face mass matrices in face-local coordinates
    lift: np.ndarray  # (Np, 4 Nfp) LIFT = M^-1 E

    @property
    def n_nodes(self) -> int:
        return self.r.size

    @property
    def n_face_nodes(self) -> int:
        return self.face_mask.shape[1]

    def interpolation_matrix(self, r, s, t) -> np.ndarray:
        """Rows that evaluate the nodal interpolant at reference points (r, s, t)."""
        return np.linalg.solve(self.V.T, vandermonde3d(self.order, r, s, t).T).T


@functools.lru_cache(maxsize=None)
def reference_tetrahedron(order: int) -> ReferenceTetrahedron:
    n = check_order(order)
    r, s, t = warp_blend_nodes(n)
    v = vandermonde3d(n, r, s, t)
    vr, vs, vt = grad_vandermonde3d(n, r, s, t)
    vinv = np.linalg.inv(v)
    dr, ds, dt = vr @ vinv, vs @ vinv, vt @ vinv
    mass = vinv.T @ vinv
    rst = np.stack([r, s, t])
    on_face = [np.abs(1 + t), np.abs(1 + s), np.abs(1 + r + s + t), np.abs(1 + r)]
    face_mask = np.stack([np.flatnonzero(d < NODE_TOL) for d in on_face])
    nfp = (n + 1) * (n + 2) // 2
    emat = np.zeros((r.size, 4 * nfp))
    for f in range(4):
        a, b = _FACE_COORDS[f]
        vf = vandermonde2d(n, rst[a, face_mask[f]], rst[b, face_mask[f]])
        emat[face_mask[f], f * nfp:(f + 1) * nfp] = np.linalg.inv(vf @ vf.T)
    lift = v @ (v.T @ emat)
    return ReferenceTetrahedron(n, r, s, t, v, dr, ds, dt, mass, face_mask, emat, lift)
