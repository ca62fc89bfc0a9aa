"""`SurfaceMesh`: the flat-triangle surface every stage after meshing works on.

Vertices are an (n, 3) float64 array, triangles an (m, 3) int64 array of vertex
indices ordered so that the right-hand normal points out of the body.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np

from .errors import MeshError


@dataclass(frozen=True, eq=False)
class SurfaceMesh:
    vertices: np.ndarray
    triangles: np.ndarray
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        v = np.ascontiguousarray(self.vertices, dtype=np.float64)
        t = np.ascontiguousarray(self.triangles, dtype=np.int64)
        if v.ndim != 2 or v.shape[1] != 3:
            raise MeshError(f"vertices must have shape (n, 3), got {v.shape}")
        if t.ndim != 2 or t.shape[1] != 3:
            raise MeshError(f"triangles must have shape (m, 3), got {t.shape}")
        if len(t) == 0:
            raise MeshError("the mesh has no triangles")
        if t.min() < 0 or t.max() >= len(v):
            raise MeshError(f"triangle vertex index out of range [0, {len(v)})")
        bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
        if len(bad):  # named here: NaN would otherwise surface deep inside SciPy or the solver
            source = self.meta.get("source", "mesh")
            raise MeshError(f"{source}: {len(bad)} vertex(es) with a NaN or infinite "
                            f"coordinate, the first is vertex {bad[0]} = {v[bad[0]].tolist()}")
        object.__setattr__(self, "vertices", v)
        object.__setattr__(self, "triangles", t)

    # --- geometry of the triangles -------------------------------------------------
    @property
    def n_vertices(self) -> int:
        return len(self.vertices)

    @property
    def n_triangles(self) -> int:
        return len(self.triangles)

    @cached_property
    def corners(self) -> np.ndarray:
        """(m, 3, 3): corner k of triangle i is corners[i, k]."""
        return self.vertices[self.triangles]

    @cached_property
    def jacobians(self) -> np.ndarray:
        """(m, 3, 2): columns are the edge vectors p1 - p0 and p2 - p0."""
        c = self.corners
        return np.stack([c[:, 1] - c[:, 0], c[:, 2] - c[:, 0]], axis=2)

    @cached_property
    def _cross(self) -> np.ndarray:
        c = self.corners
        return np.cross(c[:, 1] - c[:, 0], c[:, 2] - c[:, 0])

    @cached_property
    def areas(self) -> np.ndarray:
        return 0.5 * np.linalg.norm(self._cross, axis=1)

    @cached_property
    def normals(self) -> np.ndarray:
        """Unit normals (outward for a correctly oriented closed mesh)."""
        n = self._cross
        return n / np.linalg.norm(n, axis=1, keepdims=True)

    @cached_property
    def centroids(self) -> np.ndarray:
        return self.corners.mean(axis=1)

    @cached_property
    def edge_lengths(self) -> np.ndarray:
        """(m, 3): length of edge (k, k+1 mod 3) of each triangle."""
        c = self.corners
        return np.linalg.norm(c[:, [1, 2, 0]] - c, axis=2)

    @property
    def total_area(self) -> float:
        return float(self.areas.sum())

    @property
    def enclosed_volume(self) -> float:
        """Signed volume by the divergence theorem; positive when normals point out."""
        c = self.corners
        return float(np.einsum("ij,ij->i", c[:, 0], np.cross(c[:, 1], c[:, 2])).sum() / 6.0)

    @property
    def diameter_estimate(self) -> float:
        lo, hi = self.vertices.min(axis=0), self.vertices.max(axis=0)
        return float(np.linalg.norm(hi - lo))

    def fingerprint(self) -> str:
        """SHA-256 of vertices and triangles: identifies the mesh a result was made on."""
        h = hashlib.sha256()
        h.update(self.vertices.tobytes())
        h.update(self.triangles.tobytes())
        return h.hexdigest()

    # --- input / output through meshio ----------------------------------------------
    @classmethod
    def from_file(cls, path: str | Path) -> "SurfaceMesh":
        import meshio

        path = Path(path)
        if not path.exists():
            raise MeshError(f"mesh file {str(path)!r} does not exist")
        try:
            m = meshio.read(path)
        except Exception as exc:
            raise MeshError(f"cannot read mesh file {str(path)!r}: {exc}") from exc
        tris = [c.data for c in m.cells if c.type == "triangle"]
        if not tris:
            raise MeshError(f"mesh file {str(path)!r} holds no triangles")
        tri = np.concatenate(tris)
        # Drop vertices no triangle uses (gmsh files also carry curve/volume nodes).
        used = np.unique(tri)
        remap = np.full(len(m.points), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        pts = np.asarray(m.points, dtype=np.float64)
        if pts.shape[1] == 2:
            pts = np.column_stack([pts, np.zeros(len(pts))])
        return cls(pts[used], remap[tri], {"source": str(path)})

    def write(self, path: str | Path, file_format: str | None = None) -> None:
        import meshio

        path = Path(path)
        fmt = file_format or ("gmsh22" if path.suffix == ".msh" else None)
        meshio.write_points_cells(path, self.vertices, [("triangle", self.triangles)],
                                  file_format=fmt, binary=False)
