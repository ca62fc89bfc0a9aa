"""Element pairs of a mesh that need more than the regular rule: those that touch (share a
vertex, edge or the element: the Sauter-Schwab rules) and disjoint ones closer than a few
diameters (the `near` rule). Found once per mesh and kept while the mesh lives: every
operator on the mesh needs them (a solve assembles two to six), dense or H-matrix.
"""
from __future__ import annotations

import hashlib
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


def _subset_key(elements):
    """A cache key of an element subset (None: the whole mesh)."""
    if elements is None:
        return None
    return hashlib.blake2b(np.ascontiguousarray(elements, np.int64).tobytes(), digest_size=16).hexdigest()


def touching_pairs(mesh, elements=None) -> tuple[np.ndarray, np.ndarray]:
    """All element pairs (a, b) of the mesh that share at least one vertex; with `elements`
    (increasing), those with a among them."""
    def make():
        m = mesh.n_triangles
        inc = sp.csr_matrix((np.ones(3 * m), (np.repeat(np.arange(m), 3), mesh.triangles.ravel())),
                            shape=(m, mesh.n_vertices))
        adj = ((inc if elements is None else inc[elements]) @ inc.T).tocoo()
        rows = adj.row.astype(np.int64)
        return (rows if elements is None else np.asarray(elements, np.int64)[rows]), \
            adj.col.astype(np.int64)

    return mesh_cached(mesh, ("touching", _subset_key(elements)), make)


def touching_kinds(mesh, elements=None):
    """(rule kind, vertex permutation of a, of b) of every touching pair, in the order of
    `touching_pairs` (quadrature.classify_pairs)."""
    def make():
        pa, pb = touching_pairs(mesh, elements)
        return quadrature.classify_pairs(mesh.triangles[pa], mesh.triangles[pb])

    return mesh_cached(mesh, ("touching_kinds", _subset_key(elements)), make)


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


def near_pairs(mesh, factor: float, elements=None) -> tuple[np.ndarray, np.ndarray]:
    """Element pairs that do not touch but whose centroids are closer than factor * the
    larger diameter (they get the higher `near` quadrature order): the pairs (a, b) with
    a < b, then the same pairs swapped; with `elements` (increasing), those with a among
    them."""
    def make():
        if factor <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        cen = mesh.centroids
        diam = mesh.edge_lengths.max(axis=1)
        radius = factor * diam.max()
        if elements is None:
            pairs = cKDTree(cen).query_pairs(radius, output_type="ndarray").astype(np.int64)
            a, b = np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])
        else:
            sub = np.asarray(elements, np.int64)
            found = cKDTree(cen[sub]).sparse_distance_matrix(cKDTree(cen), radius,
                                                             output_type="ndarray")
            a = np.ascontiguousarray(sub[found["i"]])
            b = np.ascontiguousarray(found["j"].astype(np.int64))
        keep = _near_filter(a, b, cen, diam, mesh.triangles, float(factor))
        a, b = a[keep], b[keep]
        if elements is not None:
            return a, b
        return np.concatenate([a, b]), np.concatenate([b, a])

    return mesh_cached(mesh, ("near", float(factor), _subset_key(elements)), make)


def kept(keep, pa, pb, *more):
    """(pa, pb, *more) at the element pairs `keep(pa, pb)` selects (all where keep is None):
    a process that holds part of an H-matrix computes only the pairs of its blocks."""
    if keep is None:
        return (pa, pb, *more)
    sel = keep(pa, pb)
    return tuple(a[sel] for a in (pa, pb, *more))


def touching_kept(mesh, keep):
    """(pa, pb, *kinds) of the touching pairs that `keep` selects (every one where keep is
    None), searched only among the pairs of `keep.elements` where it has them (the test
    elements a rank's dense blocks reach: a quarter of the mesh's search on 4 ranks)."""
    elements = getattr(keep, "elements", None)
    return kept(keep, *touching_pairs(mesh, elements), *touching_kinds(mesh, elements))


def near_kept(mesh, factor: float, keep):
    """(pa, pb) of the near pairs that `keep` selects, as `touching_kept`."""
    return kept(keep, *near_pairs(mesh, factor, getattr(keep, "elements", None)))
