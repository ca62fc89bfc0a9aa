"""Straight-sided tetrahedral volume meshes for nodal DG: checks, face connectivity, a
structured box mesh built in NumPy (for machines without gmsh).

Local faces follow Hesthaven-Warburton: face f of a tet with vertices (v0, v1, v2, v3) is
(v0 v1 v2), (v0 v1 v3), (v1 v2 v3), (v0 v2 v3) -- opposite to vertex 3, 2, 0, 1.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import MeshError

FACE_VERTICES = np.array([[0, 1, 2], [0, 1, 3], [1, 2, 3], [0, 2, 3]])


@dataclass(frozen=True)
class TetMesh:
    """vertices (nv, 3) float64 and positively oriented tets (K, 4) int64."""

    vertices: np.ndarray
    tets: np.ndarray

    def __post_init__(self):
        check_tet_mesh(self.vertices, self.tets)

    @property
    def n_elements(self) -> int:
        return self.tets.shape[0]

    def signed_volumes(self) -> np.ndarray:
        return signed_volumes(self.vertices, self.tets)

    def h(self) -> float:
        """Largest edge length: the mesh size used in convergence tables."""
        x = self.vertices[self.tets]
        pairs = [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
        return float(max(np.linalg.norm(x[:, i] - x[:, j], axis=1).max() for i, j in pairs))


def signed_volumes(vertices: np.ndarray, tets: np.ndarray) -> np.ndarray:
    x = vertices[tets]
    return np.einsum("ki,ki->k", np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0]), x[:, 3] - x[:, 0]) / 6.0


def check_tet_mesh(vertices: np.ndarray, tets: np.ndarray) -> None:
    """Raise MeshError for an empty mesh, bad shapes or indices, or inverted/degenerate tets."""
    vertices, tets = np.asarray(vertices), np.asarray(tets)
    if tets.ndim != 2 or tets.shape[1] != 4 or tets.shape[0] == 0:
        raise MeshError(f"volume mesh has no tetrahedra (tets shape {tets.shape}); "
                        "a DG run needs a 3D mesh with volume elements")
    if vertices.ndim != 2 or vertices.shape[1] != 3:
        raise MeshError(f"mesh vertices must have shape (n, 3), got {vertices.shape}")
    if tets.min() < 0 or tets.max() >= len(vertices):
        raise MeshError(f"tet vertex index out of range 0..{len(vertices) - 1}: "
                        f"min {tets.min()}, max {tets.max()}")
    vol = signed_volumes(vertices, tets)
    scale = np.ptp(vertices, axis=0).max() ** 3
    bad = np.flatnonzero(vol <= 1e-14 * scale)
    if bad.size:
        raise MeshError(f"{bad.size} inverted or degenerate tetrahedra (first: element {bad[0]}, "
                        f"signed volume {vol[bad[0]]:.3e}); vertices must be ordered with positive volume")


def face_connectivity(tets: np.ndarray):
    """(EToE, EToF) of shape (K, 4); a boundary face points to itself (HW convention)."""
    k = tets.shape[0]
    faces = np.sort(tets[:, FACE_VERTICES].reshape(-1, 3), axis=1)
    _, inv, counts = np.unique(faces, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    if counts.max() > 2:
        raise MeshError(f"non-manifold volume mesh: a face is shared by {counts.max()} tetrahedra")
    order = np.argsort(inv, kind="stable")
    sorted_ids = inv[order]
    same = np.flatnonzero(sorted_ids[1:] == sorted_ids[:-1])
    a, b = order[same], order[same + 1]
    partner = np.arange(4 * k)
    partner[a], partner[b] = b, a
    return (partner // 4).reshape(k, 4), (partner % 4).reshape(k, 4)


def box_tet_mesh(n, lower=(0.0, 0.0, 0.0), upper=(1.0, 1.0, 1.0)) -> TetMesh:
    """Structured mesh of a box: n = (nx, ny, nz) cubes (or one int), 6 Kuhn tets per cube."""
    nx, ny, nz = (n, n, n) if np.isscalar(n) else n
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    axes = [np.linspace(lower[d], upper[d], m + 1) for d, m in enumerate((nx, ny, nz))]
    gx, gy, gz = np.meshgrid(*axes, indexing="ij")
    vertices = np.stack([gx.ravel(), gy.ravel(), gz.ravel()], axis=1)
    i, j, kk = np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij")
    base = (i * (ny + 1) + j) * (nz + 1) + kk
    ex, ey, ez = (ny + 1) * (nz + 1), nz + 1, 1
    corner = {c: base.ravel() + c[0] * ex + c[1] * ey + c[2] * ez
              for c in [(a, b, c) for a in (0, 1) for b in (0, 1) for c in (0, 1)]}
    tets = []
    # the 6 monotone paths from (0,0,0) to (1,1,1) through the cube's corners
    for perm in [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]:
        p = [0, 0, 0]
        path = [tuple(p)]
        for axis in perm:
            p[axis] = 1
            path.append(tuple(p))
        tets.append(np.stack([corner[c] for c in path], axis=1))
    tets = np.concatenate(tets).astype(np.int64)
    vol = signed_volumes(vertices, tets)
    tets[vol < 0] = tets[vol < 0][:, [0, 2, 1, 3]]
    return TetMesh(vertices, tets)
