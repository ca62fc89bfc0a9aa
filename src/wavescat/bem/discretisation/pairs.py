"""Element pairs of a mesh that need more than the regular rule: those that touch (share a
vertex, edge or the element: the Sauter-Schwab rules) and disjoint ones closer than a few
diameters (the `near` rule). Found once per mesh and kept while the mesh lives: every
operator on the mesh needs them (a solve assembles two to six), dense or H-matrix.
"""
from __future__ import annotations

import weakref

import numba as nb
import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from . import quadrature

# per mesh: what every operator on the mesh needs (a solve assembles two to six of them, on
# every rank): its touching and near pairs, the touching pairs' kinds, the element data
_PER_MESH: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def mesh_cached(mesh, key, make):
    """make(), once per mesh and key, kept while the mesh lives."""
    cache = _PER_MESH.setdefault(mesh, {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def touching_pairs(mesh) -> tuple[np.ndarray, np.ndarray]:
    """All element pairs (a, b) of the mesh that share at least one vertex."""
    def make():
        m = mesh.n_triangles
        inc = sp.csr_matrix((np.ones(3 * m), (np.repeat(np.arange(m), 3), mesh.triangles.ravel())),
                            shape=(m, mesh.n_vertices))
        adj = (inc @ inc.T).tocoo()
        return adj.row.astype(np.int64), adj.col.astype(np.int64)

    return mesh_cached(mesh, "touching", make)


def touching_kinds(mesh):
    """(rule kind, vertex permutation of a, of b) of every touching pair, in the order of
    `touching_pairs` (quadrature.classify_pairs)."""
    def make():
        pa, pb = touching_pairs(mesh)
        return quadrature.classify_pairs(mesh.triangles[pa], mesh.triangles[pb])

    return mesh_cached(mesh, "touching_kinds", make)


@nb.njit(parallel=True, cache=True)
def _near_filter(a, b, cen, diam, tri, factor):
    """Pairs (a, b) whose centroids are closer than factor * the larger diameter (the test
    the dense kernels make) and that share no vertex."""
    keep = np.zeros(len(a), np.bool_)
    for p in nb.prange(len(a)):
        i, j = a[p], b[p]
        d2 = 0.0
        for c in range(3):
            d2 += (cen[i, c] - cen[j, c]) ** 2
        r = factor * max(diam[i], diam[j])
        touch = False
        for x in range(3):
            for y in range(3):
                touch |= tri[i, x] == tri[j, y]
        keep[p] = d2 < r * r and not touch
    return keep


def near_pairs(mesh, factor: float) -> tuple[np.ndarray, np.ndarray]:
    """Element pairs that do not touch but whose centroids are closer than factor * the
    larger diameter (they get the higher `near` quadrature order): the pairs (a, b) with
    a < b, then the same pairs swapped."""
    def make():
        if factor <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        cen = mesh.centroids
        diam = mesh.edge_lengths.max(axis=1)
        pairs = cKDTree(cen).query_pairs(factor * diam.max(), output_type="ndarray").astype(np.int64)
        a, b = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
        keep = _near_filter(a, b, cen, diam, mesh.triangles, float(factor))
        a, b = a[keep], b[keep]
        return np.concatenate([a, b]), np.concatenate([b, a])

    return mesh_cached(mesh, ("near", float(factor)), make)


def kept(keep, pa, pb, *more):
    """(pa, pb, *more) at the element pairs `keep(pa, pb)` selects (all where keep is None):
    a process that holds part of an H-matrix computes only the pairs of its blocks."""
    if keep is None:
        return (pa, pb, *more)
    sel = keep(pa, pb)
    return tuple(a[sel] for a in (pa, pb, *more))
