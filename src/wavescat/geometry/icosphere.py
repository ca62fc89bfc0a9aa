"""Sphere meshes without gmsh: a subdivided icosahedron projected onto the sphere.

Used by tests and benchmarks that need nested, quasi-uniform sphere meshes of a chosen
size on machines without gmsh (the GPU device). `subdivisions` s gives 20 * 4**s triangles
and 10 * 4**s + 2 vertices.
"""
from __future__ import annotations

import numpy as np

from ..surface import SurfaceMesh


def _icosahedron() -> tuple[np.ndarray, np.ndarray]:
    t = (1.0 + 5.0**0.5) / 2.0
    v = np.array([[-1, t, 0], [1, t, 0], [-1, -t, 0], [1, -t, 0],
                  [0, -1, t], [0, 1, t], [0, -1, -t], [0, 1, -t],
                  [t, 0, -1], [t, 0, 1], [-t, 0, -1], [-t, 0, 1]], dtype=float)
    f = np.array([[0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11],
                  [1, 5, 9], [5, 11, 4], [11, 10, 2], [10, 7, 6], [7, 1, 8],
                  [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8], [3, 8, 9],
                  [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1]], dtype=np.int64)
    return v / np.linalg.norm(v, axis=1, keepdims=True), f


def split_in_four(v: np.ndarray, f: np.ndarray, unit_sphere: bool = False
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Split every triangle into four through its edge midpoints (shared midpoints merged;
    with `unit_sphere` the midpoints moved onto the unit sphere): a flat mesh of half the
    edge length, as for twice the frequency (bench/bench_osrc_factorisation.py)."""
    edges = np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]])
    key = np.sort(edges, axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.ravel()
    mid = 0.5 * (v[uniq[:, 0]] + v[uniq[:, 1]])
    if unit_sphere:
        mid /= np.linalg.norm(mid, axis=1, keepdims=True)
    m = len(f)
    a, b, c = f[:, 0], f[:, 1], f[:, 2]
    ab, bc, ca = (len(v) + inv[:m], len(v) + inv[m:2 * m], len(v) + inv[2 * m:])
    new = np.concatenate([np.stack([a, ab, ca], 1), np.stack([ab, b, bc], 1),
                          np.stack([ca, bc, c], 1), np.stack([ab, bc, ca], 1)])
    return np.concatenate([v, mid]), new


def icosphere(subdivisions: int, radius: float = 1.0, center=(0.0, 0.0, 0.0)) -> SurfaceMesh:
    if subdivisions < 0:
        raise ValueError(f"subdivisions = {subdivisions}: must be >= 0")
    v, f = _icosahedron()
    for _ in range(subdivisions):
        v, f = split_in_four(v, f, unit_sphere=True)
    return SurfaceMesh(radius * v + np.asarray(center, dtype=float), f,
                       {"kind": "icosphere", "subdivisions": subdivisions, "radius": radius})


def subdivisions_for(n_vertices: int) -> int:
    """Smallest s whose icosphere has at least `n_vertices` vertices (P1 DOFs)."""
    s = 0
    while 10 * 4**s + 2 < n_vertices:
        s += 1
    return s
