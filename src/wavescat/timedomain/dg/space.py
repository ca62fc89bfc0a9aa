"""The nodal DG space on a tetrahedral mesh: physical nodes, affine geometric factors,
outward normals and face scalings, and the face-node maps vmapM / vmapP.

Boundary face nodes carry a code instead of a neighbour: vmapP = -1 - (8 j + code), with j
the node's index among all boundary face nodes (into boundary data: the incident normal
velocity and pressure) and code one of the BC_* below. Faces between elements of different
regions (a fluid body inside the surrounding medium) are boundary faces too, of code
BC_INTERFACE: their data turn the neighbour's field into the element's own (the total field
inside a body, the scattered field outside), and `boundary_partner` holds the neighbour's node.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ...errors import InputError, MeshError
from .mesh import FACE_VERTICES, TetMesh, face_connectivity
from .reference import ReferenceTetrahedron, reference_tetrahedron

# rigid wall; the scatterer's surface, rigid (v_s.n = -v_inc.n), pressure-release
# (p_s = -p_inc) or of an admittance (the impedance condition on the total field); the
# characteristic absorbing boundary; the interface of two regions
BC_RIGID, BC_SCATTERER, BC_ABSORBING, BC_SOFT, BC_IMPEDANCE, BC_INTERFACE = 0, 1, 2, 3, 4, 5
BC_CODES = (BC_RIGID, BC_SCATTERER, BC_ABSORBING, BC_SOFT, BC_IMPEDANCE)  # of outer faces
CODE_BITS = 3  # vmapP = -1 - (j << CODE_BITS | code)
BoundaryRule = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class DGSpace:
    mesh: TetMesh
    ref: ReferenceTetrahedron
    xyz: np.ndarray  # (3, K, Np) physical node coordinates
    geo: np.ndarray  # (K, 9) rx, ry, rz, sx, sy, sz, tx, ty, tz
    jacobian: np.ndarray  # (K,) volume Jacobian (element volume / (4/3))
    normals: np.ndarray  # (K, 4, 3) outward unit normals
    fscale: np.ndarray  # (K, 4) surface Jacobian / volume Jacobian
    vmap_m: np.ndarray  # (K, 4 Nfp) flat volume-node index of each face node
    vmap_p: np.ndarray  # (K, 4 Nfp) neighbour's node index, or the boundary code (see module doc)
    boundary_xyz: np.ndarray  # (Nb, 3) boundary face nodes, in the order of j
    boundary_normals: np.ndarray  # (Nb, 3)
    boundary_codes: np.ndarray  # (Nb,)
    boundary_elements: np.ndarray  # (Nb,) element of each boundary face node
    boundary_partner: np.ndarray  # (Nb,) BC_INTERFACE: the neighbour's node index; else -1
    regions: np.ndarray  # (K,) region of each element (0: the surrounding medium)

    @property
    def n_elements(self) -> int:
        return self.geo.shape[0]

    @property
    def n_nodes(self) -> int:
        return self.geo.shape[0] * self.ref.n_nodes

    def locate(self, points: np.ndarray, chunk: int = 4096):
        """(element index, interpolation rows (P, Np)) of points inside the mesh."""
        points = np.atleast_2d(np.asarray(points, float))
        v = self.mesh.vertices[self.mesh.tets]  # (K, 4, 3)
        inv_jm = np.linalg.inv(np.stack([v[:, 1] - v[:, 0], v[:, 2] - v[:, 0], v[:, 3] - v[:, 0]], axis=2))
        elem = np.full(len(points), -1)
        best = np.full(len(points), -np.inf)
        for start in range(0, len(points), chunk):
            pts = points[start:start + chunk]
            lam = np.einsum("kij,pkj->pki", inv_jm, pts[:, None, :] - v[None, :, 0])  # (P, K, 3)
            worst = np.minimum(lam.min(axis=2), 1 - lam.sum(axis=2))  # >= 0 inside
            e = worst.argmax(axis=1)
            elem[start:start + chunk], best[start:start + chunk] = e, worst[np.arange(len(pts)), e]
        outside = np.flatnonzero(best < -1e-9)
        if outside.size:
            raise InputError(f"probe point {points[outside[0]].tolist()} is outside the DG mesh")
        lam = np.einsum("pij,pj->pi", inv_jm[elem], points - v[elem, 0])
        r, s, t = 2 * lam.T - 1
        return elem, self.ref.interpolation_matrix(r, s, t)


def _match_face_nodes(xm: np.ndarray, xp: np.ndarray, tol: float, chunk: int = 8192) -> np.ndarray:
    """For paired faces (F, Nfp, 3), the permutation taking each M node to its P node."""
    perm = np.empty(xm.shape[:2], dtype=np.int64)
    for s in range(0, len(xm), chunk):
        d = np.linalg.norm(xm[s:s + chunk, :, None, :] - xp[s:s + chunk, None, :, :], axis=3)
        perm[s:s + chunk] = d.argmin(axis=2)
        if np.take_along_axis(d, perm[s:s + chunk, :, None], 2).max() > tol:
            raise MeshError("face nodes of neighbouring tetrahedra do not coincide (non-conforming mesh)")
    return perm


def build_space(mesh: TetMesh, order: int, boundary: BoundaryRule | int = BC_RIGID,
                regions: np.ndarray | None = None) -> DGSpace:
    """DG space of `order` on `mesh`; `boundary` is one code for every boundary face or a
    function (face centroids (F, 3), outward normals (F, 3)) -> codes (F,); `regions` (K,)
    ints, default all 0: faces between regions become BC_INTERFACE faces."""
    ref = reference_tetrahedron(order)
    k, npn, nfp = mesh.n_elements, ref.n_nodes, ref.n_face_nodes
    regions = np.zeros(k, np.int64) if regions is None else np.asarray(regions, np.int64)
    if regions.shape != (k,):
        raise InputError(f"regions: one per element ({k}), got shape {regions.shape}")
    v = mesh.vertices[mesh.tets]  # (K, 4, 3)
    lam = np.stack([-(1 + ref.r + ref.s + ref.t), 1 + ref.r, 1 + ref.s, 1 + ref.t]) / 2  # (4, Np)
    xyz = np.einsum("vn,kvd->dkn", lam, v)
    jm = np.stack([v[:, 1] - v[:, 0], v[:, 2] - v[:, 0], v[:, 3] - v[:, 0]], axis=2) / 2  # columns x_r, x_s, x_t
    jac = np.linalg.det(jm)
    inv = np.linalg.inv(jm)  # rows (r_x r_y r_z), (s_...), (t_...)
    geo = inv.reshape(k, 9)
    n = np.stack([-inv[:, 2], -inv[:, 1], inv.sum(axis=1), -inv[:, 0]], axis=1)  # (K, 4, 3)
    fscale = np.linalg.norm(n, axis=2)
    normals = n / fscale[..., None]

    fmask = ref.face_mask.ravel()
    vmap_m = np.arange(k)[:, None] * npn + fmask[None, :]
    e2e, e2f = face_connectivity(mesh.tets)
    vmap_p = np.empty((k, 4, nfp), dtype=np.int64)
    interior = e2e != np.arange(k)[:, None]
    ki, fi = np.nonzero(interior)
    k2, f2 = e2e[ki, fi], e2f[ki, fi]
    x_face = xyz.transpose(1, 2, 0)[:, ref.face_mask]  # (K, 4, Nfp, 3)
    perm = _match_face_nodes(x_face[ki, fi], x_face[k2, f2], tol=1e-7 * mesh.h())
    vmap_p[ki, fi] = k2[:, None] * npn + ref.face_mask[f2[:, None], perm]

    kb, fb = np.nonzero(~interior)
    codes = np.zeros(0, np.int64)
    if kb.size:
        centroids = v[kb[:, None], FACE_VERTICES[fb]].mean(axis=1)
        codes = np.broadcast_to(np.asarray(boundary(centroids, normals[kb, fb]) if callable(boundary)
                                           else boundary, dtype=np.int64), (kb.size,))
        if not np.isin(codes, BC_CODES).all():
            raise InputError(f"boundary codes {np.unique(codes).tolist()}: must be rigid (0), "
                              "scatterer (1), absorbing (2), pressure-release scatterer (3) or "
                              "impedance scatterer (4)")
    # faces between regions, seen from each side, after the boundary faces
    across = interior & (regions[e2e] != regions[:, None])
    ka, fa = np.nonzero(across)
    kb, fb = np.concatenate([kb, ka]), np.concatenate([fb, fa])
    partner = np.concatenate([np.full(codes.size * nfp, -1, np.int64), vmap_p[ka, fa].ravel()])
    node_codes = np.repeat(np.concatenate([codes, np.full(ka.size, BC_INTERFACE)]), nfp)
    j = np.arange(kb.size * nfp)
    vmap_p[kb, fb] = (-1 - ((j << CODE_BITS) | node_codes)).reshape(kb.size, nfp)
    b_xyz = x_face[kb, fb].reshape(-1, 3)
    b_normals = np.repeat(normals[kb, fb], nfp, axis=0).reshape(-1, 3)
    return DGSpace(mesh, ref, xyz, geo, jac, normals, fscale, vmap_m, vmap_p.reshape(k, 4 * nfp),
                   b_xyz, b_normals, node_codes, np.repeat(kb, nfp), partner, regions)
