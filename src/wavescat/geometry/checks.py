"""Checks that a triangle surface bounds a body: closed, manifold, non-degenerate, without
duplicated faces, consistently oriented with outward normals.

`check_surface` merges duplicate vertices (STL stores each facet's corners separately),
raises `MeshError` naming the defect with counts and locations, repairs inconsistent
orientation by re-orienting every connected component from one face (logging a warning),
and turns each component outward by the sign of its enclosed volume.
"""
from __future__ import annotations

import logging

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components
from scipy.spatial import cKDTree

from ..errors import MeshError
from ..surface import SurfaceMesh

log = logging.getLogger(__name__)

MERGE_TOLERANCE = 1e-9   # relative to the bounding-box diagonal
DEGENERATE_AREA = 1e-12  # relative to the squared mean edge length
SHOW = 5                 # locations listed in a message


def _where(points: np.ndarray) -> str:
    pts = "; ".join("(" + ", ".join(f"{x:.4g}" for x in p) + ")" for p in points[:SHOW])
    more = f" and {len(points) - SHOW} more" if len(points) > SHOW else ""
    return f"at {pts}{more}"


def merge_duplicate_vertices(mesh: SurfaceMesh, tolerance: float = MERGE_TOLERANCE) -> SurfaceMesh:
    """Identify vertices closer than `tolerance` * bounding-box diagonal; drop unused ones."""
    v, t = mesh.vertices, mesh.triangles
    tol = tolerance * max(mesh.diameter_estimate, np.finfo(float).tiny)
    pairs = cKDTree(v).query_pairs(tol, output_type="ndarray")
    if len(pairs):
        graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(v),) * 2)
        _, label = connected_components(graph, directed=False)
        # Each cluster is represented by its lowest-index vertex.
        first = np.full(label.max() + 1, len(v), dtype=np.int64)
        np.minimum.at(first, label, np.arange(len(v)))
        t = first[label][t]
    used, t = np.unique(t, return_inverse=True)
    return SurfaceMesh(v[used], t.reshape(-1, 3), dict(mesh.meta))


def _check_degenerate(mesh: SurfaceMesh, source: str) -> None:
    t = mesh.triangles
    repeated = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 2] == t[:, 0])
    scale = np.mean(mesh.edge_lengths) ** 2
    flat = mesh.areas <= DEGENERATE_AREA * scale
    bad = np.flatnonzero(repeated | flat)
    if len(bad):
        raise MeshError(
            f"{source}: {len(bad)} degenerate triangle(s) ({int(repeated.sum())} with a repeated "
            f"vertex, {int((flat & ~repeated).sum())} of zero area) {_where(mesh.centroids[bad])}")


def _check_duplicate_faces(mesh: SurfaceMesh, source: str) -> None:
    key = np.sort(mesh.triangles, axis=1)
    _, first, count = np.unique(key, axis=0, return_index=True, return_counts=True)
    dup = first[count > 1]
    if len(dup):
        raise MeshError(f"{source}: {int((count[count > 1] - 1).sum())} duplicated face(s) "
                        f"{_where(mesh.centroids[dup])}")


def _edges(t: np.ndarray):
    """Half-edges (a, b) of all triangles, their undirected edge id, and edge counts."""
    half = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    face = np.tile(np.arange(len(t)), 3)
    _, edge, count = np.unique(np.sort(half, axis=1), axis=0, return_inverse=True,
                               return_counts=True)
    return half, face, edge.ravel(), count


def _check_closed_manifold(mesh: SurfaceMesh, half, edge, count, source: str) -> None:
    v = mesh.vertices
    for n_bad, what in ((1, "boundary edge(s): the surface is not closed"),
                        (3, "non-manifold edge(s) (shared by more than two triangles)")):
        bad = count == 1 if n_bad == 1 else count > 2
        if bad.any():
            ids = np.flatnonzero(bad)
            first = np.full(len(count), -1, dtype=np.int64)
            first[edge] = np.arange(len(edge))  # any one half-edge of each edge
            h = half[first[ids]]
            raise MeshError(f"{source}: {len(ids)} {what} {_where(0.5 * (v[h[:, 0]] + v[h[:, 1]]))}")


def _orient(mesh: SurfaceMesh, half, face, edge, source: str) -> tuple[np.ndarray, int, int]:
    """(flip flags making each connected component consistently oriented and outward,
    edges found inconsistent, connected components: the closed bodies of the mesh).

    Two triangles sharing an edge agree when they traverse it in opposite directions.
    Faces are doubled into (f, kept) and (f, flipped) states linked so that agreeing
    states connect; a component is orientable iff f's two states stay apart.
    """
    m = len(mesh.triangles)
    order = np.argsort(edge, kind="stable")
    f = face[order].reshape(-1, 2)          # every edge has exactly two faces here
    same_dir = half[order][0::2, 0] == half[order][1::2, 0]
    n_inconsistent = int(same_dir.sum())
    a = np.where(same_dir, f[:, 1] + m, f[:, 1])  # same direction: one of them must flip
    rows = np.concatenate([f[:, 0], f[:, 0] + m])
    cols = np.concatenate([a, np.where(a >= m, a - m, a + m)])
    graph = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(2 * m, 2 * m))
    _, state = connected_components(graph, directed=False)
    if np.any(state[:m] == state[m:]):
        bad = np.flatnonzero(state[:m] == state[m:])
        raise MeshError(f"{source}: the surface is not orientable ({len(bad)} triangles, "
                        f"e.g. a Moebius-like strip) {_where(mesh.centroids[bad])}")
    # Components of the surface: faces linked through any shared edge.
    plain = coo_matrix((np.ones(len(f)), (f[:, 0], f[:, 1])), shape=(m, m))
    n_comp, comp = connected_components(plain, directed=False)
    root = np.full(n_comp, m, dtype=np.int64)
    np.minimum.at(root, comp, np.arange(m))
    flip = state[:m] != state[root[comp]]
    # Outward: the signed volume of each component must be positive.
    c = mesh.corners
    vol = np.einsum("ij,ij->i", c[:, 0], np.cross(c[:, 1], c[:, 2])) / 6.0
    comp_vol = np.bincount(comp, weights=np.where(flip, -vol, vol), minlength=n_comp)
    flip ^= comp_vol[comp] < 0
    return flip, n_inconsistent, n_comp


def orient_outward(mesh: SurfaceMesh, source: str = "mesh"):
    """(mesh with consistent outward orientation, inconsistent edges found, triangles flipped);
    the mesh must be closed and manifold (MeshError otherwise). The mesh's meta
    "closed_bodies" counts its connected components (disjoint closed surfaces)."""
    half, face, edge, count = _edges(mesh.triangles)
    _check_closed_manifold(mesh, half, edge, count, source)
    flip, n_inconsistent, n_bodies = _orient(mesh, half, face, edge, source)
    t = mesh.triangles
    if flip.any():
        t = t.copy()
        t[flip] = t[flip][:, ::-1]
    out = SurfaceMesh(mesh.vertices, t, {**mesh.meta, "closed_bodies": n_bodies},
                      mesh.surface_ids)
    return out, n_inconsistent, flip


def check_surface(mesh: SurfaceMesh, source: str = "mesh", merge: bool = True) -> SurfaceMesh:
    """The checked, outward-oriented mesh; raises MeshError on defects it cannot repair."""
    if merge:
        mesh = merge_duplicate_vertices(mesh)
    _check_degenerate(mesh, source)
    _check_duplicate_faces(mesh, source)
    mesh, n_inconsistent, flip = orient_outward(mesh, source)
    if n_inconsistent:
        log.warning("%s: orientation was inconsistent across %d edge(s); re-oriented %d of %d "
                    "triangles by breadth-first propagation, normals now point outward",
                    source, n_inconsistent, int(flip.sum()), len(flip))
    elif flip.all():
        log.warning("%s: all normals pointed inward; flipped all %d triangles", source, len(flip))
    elif flip.any():
        log.warning("%s: %d of %d triangles (whole components) pointed inward; flipped them",
                    source, int(flip.sum()), len(flip))
    return mesh
