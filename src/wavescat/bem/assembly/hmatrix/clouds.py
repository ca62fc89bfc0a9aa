"""Quadrature clouds: every basis function as a small set of weighted points.

A Galerkin entry between two basis functions whose supports do not touch is a double
sum over the quadrature points of their supports,

    A[i, j] = sum_a sum_b  f_op(x_ia, y_jb)        (regular quadrature),

so one table per space - for each dof its points, weights (rule weight * area * basis
value), normals and weighted surface curls - lets a GPU thread compute any entry without
touching element or connectivity data. Rows, columns and near-field blocks of ACA are
then flat lists of (test dof, trial dof) pairs, which batch across thousands of blocks.
Supports are padded to the largest dof valence with zero weights.

A space's cloud also keeps the element structure it was summed from (`ElementRule`): the
CPU near field evaluates each element pair once and scatters its local matrix into all the
entries it feeds, where the per-entry sums would recompute it for each of them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numba as nb
import numpy as np

from ....errors import WavescatError
from ...discretisation.quadrature import mapped_rule

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
class ElementRule:
    """The element-wise quadrature a space's cloud sums (host arrays): entry (i, j) of the
    regular matrix is the sum, over the element pairs (e, f) with i = dofs[e, a] and
    j = dofs[f, b], of sum_q sum_r kernel(pts[e, q], pts[f, r]) wts[e, q] wts[f, r]
    phi[q, a] phi[r, b] (W: with the curls, Maue's formula)."""

    dofs: np.ndarray  # (m, nloc) the cloud's dof of each local function
    pts: np.ndarray  # (m, nq, 3)
    wts: np.ndarray  # (m, nq) rule weight * area
    nrm: np.ndarray  # (m, 3)
    phi: np.ndarray  # (nq, nloc) basis values at the rule's points
    curl: np.ndarray  # (m, nloc, 3) surface curls of the local functions (no weight)

    def renumbered(self, iperm: np.ndarray) -> "ElementRule":
        """The same elements with dof d renamed iperm[d]."""
        return replace(self, dofs=np.ascontiguousarray(iperm[self.dofs]))


@dataclass(frozen=True, eq=False)
class DofCloud:
    """Per-dof quadrature points of a space, padded to Q points per dof (host arrays)."""

    pos: np.ndarray  # (n, Q, 3)
    nrm: np.ndarray  # (n, Q, 3)
    w: np.ndarray  # (n, Q)  rule weight * area * basis value
    curl: np.ndarray  # (n, Q, 3) rule weight * area * surface curl of the basis function
    lo: np.ndarray  # (n, 3) bounding box of the support
    hi: np.ndarray  # (n, 3)
    elements: ElementRule | None = None  # None for point clouds

    @property
    def n(self) -> int:
        return self.pos.shape[0]

    @property
    def q(self) -> int:
        return self.pos.shape[1]

    def permuted(self, perm: np.ndarray) -> "DofCloud":
        """The cloud with dof d' = perm[d] of this one renamed d' (cluster-tree order)."""
        elements = None
        if self.elements is not None:
            iperm = np.empty_like(perm)
            iperm[perm] = np.arange(len(perm))
            elements = self.elements.renumbered(iperm)
        return DofCloud(*(np.ascontiguousarray(a[perm]) for a in
                          (self.pos, self.nrm, self.w, self.curl, self.lo, self.hi)), elements)

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
    # n x grad(phi_i) on a flat triangle is the opposite edge (x_{i+1} - x_{i+2}) / (2 area)
    c = mesh.corners
    curl = (c[:, [1, 2, 0]] - c[:, [2, 0, 1]]) / (2.0 * mesh.areas)[:, None, None]
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
    el = element_rule(space, rule)
    counts = np.bincount(el.dofs.ravel(), minlength=space.n_dofs)
    qmax = int(counts.max()) * len(ref)
    pos, nrm, w, cw, lo, hi = _fill_cloud(el.dofs, space.mesh.corners, el.nrm, space.mesh.areas,
                                          ref, wref, el.phi, el.curl, space.n_dofs, qmax)
    return DofCloud(pos, nrm, w, cw, lo, hi, el)


def element_rule(space, rule) -> ElementRule:
    """The ElementRule of a P0/P1 space for `rule` = (reference points (nq, 2), weights)."""
    ref = np.asarray(rule[0], float).reshape(-1, 2)
    mesh = space.mesh
    phi, curl = _basis_and_curls(mesh, space.kind, ref)
    pts, wts = mapped_rule(mesh, ref, rule[1])  # the arithmetic of _fill_cloud too
    return ElementRule(np.ascontiguousarray(space.element_dofs, dtype=np.int64),
                       np.ascontiguousarray(pts), np.ascontiguousarray(wts),
                       np.ascontiguousarray(mesh.normals, dtype=float),
                       np.ascontiguousarray(phi), np.ascontiguousarray(curl))


def point_cloud(points, weights, normals=None) -> DofCloud:
    """One point per dof (collocation-like kernel matrices for tests and benchmarks)."""
    p = np.asarray(points, float).reshape(-1, 1, 3)
    n = len(p)
    nrm = np.zeros_like(p) if normals is None else np.asarray(normals, float).reshape(n, 1, 3)
    w = np.broadcast_to(np.asarray(weights, float), (n,)).reshape(n, 1).copy()
    return DofCloud(p.copy(), nrm.copy(), w, np.zeros_like(p), p[:, 0].copy(), p[:, 0].copy())


@nb.njit(cache=True)
def _incidence(edofs, n):
    """(offsets, records): the (element * nloc + local function) records of each dof in
    element order, as CSR (a counting sort, so the order matches a stable sort)."""
    m, nloc = edofs.shape
    offsets = np.zeros(n + 1, np.int64)
    for e in range(m):
        for li in range(nloc):
            offsets[edofs[e, li] + 1] += 1
    for d in range(n):
        offsets[d + 1] += offsets[d]
    fill = offsets[:-1].copy()
    records = np.empty(m * nloc, np.int64)
    for e in range(m):
        for li in range(nloc):
            d = edofs[e, li]
            records[fill[d]] = e * nloc + li
            fill[d] += 1
    return offsets, records


@nb.njit(parallel=True, cache=True)
def _fill_cloud(edofs, corners, normals, areas, ref, wref, phi, curl, n, qmax):
    """Each dof's records (element, local function, point) in element order; padded slots
    repeat the dof's first point with weight 0 (tight boxes)."""
    nloc = edofs.shape[1]
    nq = ref.shape[0]
    offsets, records = _incidence(edofs, n)
    pos = np.empty((n, qmax, 3))
    nrm = np.zeros((n, qmax, 3))
    w = np.zeros((n, qmax))
    cw = np.zeros((n, qmax, 3))
    lo = np.empty((n, 3))
    hi = np.empty((n, 3))
    for d in nb.prange(n):
        s = 0
        for x in range(3):
            lo[d, x] = np.inf
            hi[d, x] = -np.inf
        for r in range(offsets[d], offsets[d + 1]):
            e = records[r] // nloc
            li = records[r] - e * nloc
            for q in range(nq):
                wa = areas[e] * wref[q]
                for x in range(3):
                    c0 = corners[e, 0, x]
                    pos[d, s, x] = (c0 + ref[q, 0] * (corners[e, 1, x] - c0)
                                    + ref[q, 1] * (corners[e, 2, x] - c0))
                    nrm[d, s, x] = normals[e, x]
                    cw[d, s, x] = wa * curl[e, li, x]
                w[d, s] = wa * phi[q, li]
                s += 1
            for x in range(3):
                lo[d, x] = min(lo[d, x], corners[e, 0, x], corners[e, 1, x], corners[e, 2, x])
                hi[d, x] = max(hi[d, x], corners[e, 0, x], corners[e, 1, x], corners[e, 2, x])
        for t in range(s, qmax):
            for x in range(3):
                pos[d, t, x] = pos[d, 0, x]
    return pos, nrm, w, cw, lo, hi
