"""`SurfaceMesh`: the flat-triangle surface every stage after meshing works on.

Vertices are an (n, 3) float64 array, triangles an (m, 3) int64 array of vertex
indices ordered so that the right-hand normal points out of the body.

A mesh may hold several closed surfaces (the interfaces of a nested body, numbered
depth-first over the body tree: docs/conventions.md). `surface_ids` is then an (m,) int64
array of the surface of each triangle; each surface's vertices and triangles are
contiguous and in id order, so surface i is `vertices[surface_vertices(i)]`. None (the
default, and what a one-surface mesh always holds) means one surface, id 0. In a .msh file
surface i is the triangles of gmsh physical (and elementary) tag i + 1.
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
    surface_ids: np.ndarray | None = None

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
        object.__setattr__(self, "surface_ids", self._checked_ids(self.surface_ids))

    def _checked_ids(self, ids) -> np.ndarray | None:
        """The surface ids as (m,) int64, or None for one surface; MeshError unless every
        surface's triangles and vertices are contiguous and in id order."""
        if ids is None:
            return None
        s = np.ascontiguousarray(ids, dtype=np.int64)
        t = self.triangles
        if s.shape != (len(t),):
            raise MeshError(f"surface_ids must have shape ({len(t)},), got {s.shape}")
        if s[0] != 0 or np.any(np.diff(s) < 0) or np.any(np.diff(s) > 1):
            raise MeshError("surface_ids must number the surfaces 0, 1, ... in triangle order "
                            "(each surface's triangles contiguous)")
        if s[-1] == 0:
            return None
        starts = np.flatnonzero(np.diff(s)) + 1      # first triangle of surfaces 1..n-1
        lo = np.minimum.reduceat(t.min(axis=1), np.r_[0, starts])
        hi = np.maximum.reduceat(t.max(axis=1), np.r_[0, starts])
        if lo[0] != 0 or np.any(lo[1:] != hi[:-1] + 1) or hi[-1] != len(self.vertices) - 1:
            raise MeshError("surface_ids: each surface's vertices must be contiguous and in id "
                            "order (surface i uses only vertices[surface_vertices(i)])")
        return s

    # --- several surfaces ------------------------------------------------------------
    @cached_property
    def _triangle_starts(self) -> np.ndarray:
        """(n_surfaces + 1,): surface i is triangles[starts[i]:starts[i + 1]]."""
        if self.surface_ids is None:
            return np.array([0, len(self.triangles)])
        return np.searchsorted(self.surface_ids, np.arange(self.n_surfaces + 1))

    @property
    def n_surfaces(self) -> int:
        return 1 if self.surface_ids is None else int(self.surface_ids[-1]) + 1

    def _check_surface_index(self, i: int) -> int:
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) \
                or not 0 <= i < self.n_surfaces:
            raise IndexError(f"surface {i!r}: the mesh has {self.n_surfaces} surface(s)")
        return int(i)

    def surface_triangles(self, i: int) -> slice:
        """Triangle range of surface i in this mesh."""
        i = self._check_surface_index(i)
        a, b = self._triangle_starts[i:i + 2]
        return slice(int(a), int(b))

    def surface_vertices(self, i: int) -> slice:
        """Vertex range of surface i in this mesh."""
        if self.surface_ids is None:
            self._check_surface_index(i)
            return slice(0, self.n_vertices)
        tri = self.triangles[self.surface_triangles(i)]
        return slice(int(tri.min()), int(tri.max()) + 1)

    def surface(self, i: int) -> "SurfaceMesh":
        """Surface i alone, vertices renumbered from 0 (its meta: the union's `surfaces[i]`
        where the union recorded one, else this mesh's)."""
        if self.surface_ids is None:
            self._check_surface_index(i)
            return self
        v = self.surface_vertices(i)
        parts = self.meta.get("surfaces")
        meta = dict(parts[i]) if isinstance(parts, list) and len(parts) == self.n_surfaces \
            else dict(self.meta)
        return SurfaceMesh(self.vertices[v], self.triangles[self.surface_triangles(i)] - v.start,
                           meta)

    @classmethod
    def union(cls, meshes) -> "SurfaceMesh":
        """One mesh of `meshes`' surfaces in the given order (a mesh of several surfaces adds
        them all); meta: {"source": the sources joined by ' + ', "surfaces": each surface's
        meta}."""
        meshes = list(meshes)
        if not meshes:
            raise MeshError("SurfaceMesh.union: no meshes")
        parts = [m.surface(i) for m in meshes for i in range(m.n_surfaces)]
        if len(parts) == 1:
            return parts[0]
        offsets = np.cumsum([0] + [p.n_vertices for p in parts])
        triangles = np.concatenate([p.triangles + o for p, o in zip(parts, offsets)])
        ids = np.repeat(np.arange(len(parts)), [p.n_triangles for p in parts])
        sources = [str(p.meta.get("source", f"surface {i}")) for i, p in enumerate(parts)]
        meta = {"source": " + ".join(sources), "surfaces": [dict(p.meta) for p in parts]}
        return cls(np.concatenate([p.vertices for p in parts]), triangles, meta, ids)

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
        """SHA-256 of vertices, triangles and (several surfaces only) the surface ids:
        identifies the mesh a result was made on (a one-surface mesh's is as before ids)."""
        h = hashlib.sha256()
        h.update(self.vertices.tobytes())
        h.update(self.triangles.tobytes())
        if self.surface_ids is not None:
            h.update(b"surface_ids")
            h.update(self.surface_ids.tobytes())
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
        ids = _surface_ids_of_tags(m, path)
        # Drop vertices no triangle uses (gmsh files also carry curve/volume nodes); the
        # order of the rest is kept, so each surface's vertices stay contiguous.
        used = np.unique(tri)
        remap = np.full(len(m.points), -1, dtype=np.int64)
        remap[used] = np.arange(len(used))
        pts = np.asarray(m.points, dtype=np.float64)
        if pts.shape[1] == 2:
            pts = np.column_stack([pts, np.zeros(len(pts))])
        try:
            return cls(pts[used], remap[tri], {"source": str(path)}, ids)
        except MeshError as exc:
            raise MeshError(f"mesh file {str(path)!r}: {exc}") from None

    def write(self, path: str | Path, file_format: str | None = None) -> None:
        import meshio

        path = Path(path)
        fmt = file_format or ("gmsh22" if path.suffix == ".msh" else None)
        cell_data = None
        if fmt is not None and fmt.startswith("gmsh"):
            ids = np.zeros(self.n_triangles, np.int64) if self.surface_ids is None \
                else self.surface_ids
            tags = (ids + 1).astype(np.int32)       # surface i: physical (elementary) tag i + 1
            cell_data = {"gmsh:physical": [tags], "gmsh:geometrical": [tags]}
        meshio.write_points_cells(path, self.vertices, [("triangle", self.triangles)],
                                  cell_data=cell_data, file_format=fmt, binary=False)


def _surface_ids_of_tags(m, path: Path) -> np.ndarray | None:
    """Surface ids of the triangles of a meshio mesh from their gmsh physical tags (tag
    i + 1 = surface i); None where the file has none or one tag (one surface)."""
    tags = (m.cell_data or {}).get("gmsh:physical")
    if tags is None:
        return None
    blocks = [np.asarray(t) for c, t in zip(m.cells, tags) if c.type == "triangle"]
    tag = np.concatenate(blocks).astype(np.int64) if blocks else np.zeros(0, np.int64)
    values = np.unique(tag)
    if len(values) <= 1:
        return None
    if values[0] != 1 or values[-1] != len(values):
        raise MeshError(f"mesh file {str(path)!r}: the triangles' physical tags "
                        f"{values[:8].tolist()} are not the surfaces 1..n of a wavescat mesh")
    return tag - 1
