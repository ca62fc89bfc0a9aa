"""Quadrature clouds: every basis function as a small set of weighted points.

A Galerkin entry between two basis functions whose supports do not touch is a double
sum over the quadrature points of their supports,

    A[i, j] = sum_a sum_b  f_op(x_ia, y_jb)        (regular quadrature),

so one table per space - for each dof its points, weights (rule weight * area * basis
value), normals and weighted surface curls - lets a GPU thread compute any entry without
touching element or connectivity data. Rows, columns and near-field blocks of ACA are
then flat lists of (test dof, trial dof) pairs, which batch across thousands of blocks.
Supports are padded to the largest dof valence with zero weights.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import WavescatError

# Symmetric triangle rules in barycentric coordinates, weights summing to 1.
_A6, _B6 = 0.445948490915965, 0.091576213509771
_W6A, _W6B = 0.223381589678011, 0.109951743655322
TRIANGLE_RULES = {
    1: (np.array([[1 / 3, 1 / 3]]), np.array([1.0])),
    3: (np.array([[1 / 6, 1 / 6], [2 / 3, 1 / 6], [1 / 6, 2 / 3]]), np.full(3, 1 / 3)),
    6: (np.array([[_A6, _A6], [1 - 2 * _A6, _A6], [_A6, 1 - 2 * _A6],
                  [_B6, _B6], [1 - 2 * _B6, _B6], [_B6, 1 - 2 * _B6]]),
        np.array([_W6A] * 3 + [_W6B] * 3)),
}


@dataclass(frozen=True, eq=False)
class DofCloud:
    """Per-dof quadrature points of a space, padded to Q points per dof (host arrays)."""

    pos: np.ndarray  # (n, Q, 3)
    nrm: np.ndarray  # (n, Q, 3)
    w: np.ndarray  # (n, Q)  rule weight * area * basis value
    curl: np.ndarray  # (n, Q, 3) rule weight * area * surface curl of the basis function
    lo: np.ndarray  # (n, 3) bounding box of the support
    hi: np.ndarray  # (n, 3)

    @property
    def n(self) -> int:
        return self.pos.shape[0]

    @property
    def q(self) -> int:
        return self.pos.shape[1]

    def permuted(self, perm: np.ndarray) -> "DofCloud":
        return DofCloud(*(np.ascontiguousarray(a[perm]) for a in
                          (self.pos, self.nrm, self.w, self.curl, self.lo, self.hi)))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.pos, self.nrm, self.w, self.curl))


def _basis_and_curls(mesh, kind: str, bary: np.ndarray):
    """Basis values (nq, nloc) at reference points and weightless curls (m, nloc, 3)."""
    m = mesh.n_triangles
    if kind == "P0":
        return np.ones((len(bary), 1)), np.zeros((m, 1, 3))
    s, t = bary[:, 0], bary[:, 1]
    phi = np.stack([1.0 - s - t, s, t], axis=1)
    jac = mesh.jacobians
    metric_inv = np.linalg.inv(np.einsum("mki,mkj->mij", jac, jac))
    ref_grad = np.array([[-1.0, -1.0], [1.0, 0.0], [0.0, 1.0]])
    grad = np.einsum("mki,mij,cj->mck", jac, metric_inv, ref_grad)
    curl = np.cross(np.broadcast_to(mesh.normals[:, None, :], grad.shape), grad)
    return phi, curl


def space_cloud(space, points_per_triangle: int | None = None, rule=None) -> DofCloud:
    """The quadrature cloud of a P0/P1 space (`space.mesh`, `.kind`, `.element_dofs`,
    `.n_dofs`). `rule` = (reference points (nq, 2) on the triangle (0,0),(1,0),(0,1),
    weights) overrides `points_per_triangle` (1, 3 or 6)."""
    if rule is None:
        npt = 3 if points_per_triangle is None else points_per_triangle
        if npt not in TRIANGLE_RULES:
            raise WavescatError(f"far-field points_per_triangle = {npt}: must be one of "
                                f"{sorted(TRIANGLE_RULES)}")
        rule = TRIANGLE_RULES[npt]
    ref = np.asarray(rule[0], float).reshape(-1, 2)
    wref = np.asarray(rule[1], float)
    wref = wref / wref.sum()
    mesh = space.mesh
    edofs = np.asarray(space.element_dofs)
    m, nloc = edofs.shape
    nq = len(ref)
    c = mesh.corners
    pts = (c[:, None, 0] + ref[None, :, 0, None] * (c[:, None, 1] - c[:, None, 0])
           + ref[None, :, 1, None] * (c[:, None, 2] - c[:, None, 0]))  # (m, nq, 3)
    phi, curl = _basis_and_curls(mesh, space.kind, ref)
    wa = mesh.areas[:, None] * wref[None, :]  # (m, nq)
    # One record per (element, local function, point), grouped by dof.
    dof = np.repeat(edofs[:, :, None], nq, axis=2).ravel()  # (m, nloc, nq)
    e = np.broadcast_to(np.arange(m)[:, None, None], (m, nloc, nq)).ravel()
    qi = np.broadcast_to(np.arange(nq)[None, None, :], (m, nloc, nq)).ravel()
    li = np.broadcast_to(np.arange(nloc)[None, :, None], (m, nloc, nq)).ravel()
    order = np.argsort(dof, kind="stable")
    dof, e, qi, li = dof[order], e[order], qi[order], li[order]
    n = space.n_dofs
    counts = np.bincount(dof, minlength=n)
    slot = np.arange(len(dof)) - np.repeat(np.cumsum(counts) - counts, counts)
    qmax = int(counts.max())
    pos = np.zeros((n, qmax, 3))
    nrm = np.zeros((n, qmax, 3))
    w = np.zeros((n, qmax))
    cw = np.zeros((n, qmax, 3))
    pos[dof, slot] = pts[e, qi]
    nrm[dof, slot] = mesh.normals[e]
    w[dof, slot] = wa[e, qi] * phi[qi, li]
    cw[dof, slot] = wa[e, qi, None] * curl[e, li]
    # Padded slots repeat the dof's first point (weight 0) so boxes stay tight.
    pad = np.arange(qmax)[None, :] >= counts[:, None]
    pos[pad] = np.broadcast_to(pos[:, :1], pos.shape)[pad]
    corner_lo = np.full((n, 3), np.inf)
    corner_hi = np.full((n, 3), -np.inf)
    tri_lo, tri_hi = c.min(axis=1), c.max(axis=1)
    np.minimum.at(corner_lo, edofs.ravel(), np.repeat(tri_lo, nloc, axis=0))
    np.maximum.at(corner_hi, edofs.ravel(), np.repeat(tri_hi, nloc, axis=0))
    return DofCloud(pos, nrm, w, cw, corner_lo, corner_hi)


def point_cloud(points, weights, normals=None) -> DofCloud:
    """One point per dof (collocation-like kernel matrices for tests and benchmarks)."""
    p = np.asarray(points, float).reshape(-1, 1, 3)
    n = len(p)
    nrm = np.zeros_like(p) if normals is None else np.asarray(normals, float).reshape(n, 1, 3)
    w = np.broadcast_to(np.asarray(weights, float), (n,)).reshape(n, 1).copy()
    return DofCloud(p.copy(), nrm.copy(), w, np.zeros_like(p), p[:, 0].copy(), p[:, 0].copy())
