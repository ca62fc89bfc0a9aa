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


@nb.njit(cache=True)
def _cells(points, size):
    """Each point's cell (i, j, k) in a grid of cubes of side `size`, the grid's extent, and
    each point's cell as one sortable key."""
    lo = np.empty(3)
    for c in range(3):
        lo[c] = points[:, c].min()
    cell = np.empty(points.shape, np.int64)
    dims = np.ones(3, np.int64)
    for i in range(points.shape[0]):
        for c in range(3):
            cell[i, c] = int((points[i, c] - lo[c]) / size)
            dims[c] = max(dims[c], cell[i, c] + 1)
    return cell, dims, (cell[:, 0] * dims[1] + cell[:, 1]) * dims[2] + cell[:, 2]


@nb.njit(parallel=True, cache=True)
def _near_in_cells(sub, cen, diam, tri, factor, cell, dims, order, keys, upper, start, a, b):
    """For each element i of `sub`: the elements j of its cell and the 26 around it whose
    centroid is closer than factor * the larger diameter of the two and that share no vertex
    with i (`upper`: only j > i). Counts them (`start` empty), or writes them from start[s].
    `cen`, `diam` and `tri` are in the cells' order (`order`: their elements), `cell` not."""
    count = np.zeros(len(sub), np.int64)
    where = np.empty(len(order), np.int64)  # each element's place in the cells' order
    where[order] = np.arange(len(order))
    reach = factor * diam.max()
    for s in nb.prange(len(sub)):
        i = sub[s]
        p = where[i]
        n = 0
        for dx in range(-1, 2):
            x = cell[i, 0] + dx
            for dy in range(-1, 2):
                y = cell[i, 1] + dy
                if x < 0 or x >= dims[0] or y < 0 or y >= dims[1]:
                    continue
                row = (x * dims[1] + y) * dims[2]  # the three cells along z: one run of keys
                lo = np.searchsorted(keys, row + max(cell[i, 2] - 1, 0))
                hi = np.searchsorted(keys, row + min(cell[i, 2] + 1, dims[2] - 1) + 1)
                for q in range(lo, hi):
                    d2 = 0.0
                    for c in range(3):
                        d2 += (cen[p, c] - cen[q, c]) ** 2
                    if d2 >= reach * reach or q == p or (upper and order[q] < i):
                        continue
                    r = factor * max(diam[p], diam[q])
                    touch = False
                    for u in range(3):
                        for v in range(3):
                            touch |= tri[p, u] == tri[q, v]
                    if d2 < r * r and not touch:
                        if len(start):
                            a[start[s] + n] = i
                            b[start[s] + n] = order[q]
                        n += 1
        count[s] = n
    return count


def close_pairs(cen, diam, tri, factor: float, sub, upper: bool):
    """(a, b): the pairs `_near_in_cells` finds, on a grid of cells of side factor * the
    largest diameter (a compiled search on threads: scipy's k-d tree searched on one, 1.25 s
    on each rank at 2 kHz, issue 28)."""
    none = np.zeros(0, np.int64)
    size = factor * float(diam.max(initial=0.0))
    if not size > 0:  # no element has extent: none is near another
        return none, none
    cell, dims, key = _cells(cen, size)
    order = np.argsort(key, kind="stable")
    args = (sub, np.ascontiguousarray(cen[order]), np.ascontiguousarray(diam[order]),
            np.ascontiguousarray(tri[order]), float(factor), cell, dims, order, key[order], upper)
    count = _near_in_cells(*args, none, none, none)
    start = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    a, b = np.empty(int(count.sum()), np.int64), np.empty(int(count.sum()), np.int64)
    if len(a):
        _near_in_cells(*args, start, a, b)
    return a, b


def near_pairs(mesh, factor: float, elements=None) -> tuple[np.ndarray, np.ndarray]:
    """Element pairs that do not touch but whose centroids are closer than factor * the
    larger diameter (they get the higher `near` quadrature order): the pairs (a, b) with
    a < b, then the same pairs swapped; with `elements` (increasing), those with a among
    them."""
    def make():
        if factor <= 0 or mesh.n_triangles == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        whole = elements is None
        sub = np.arange(mesh.n_triangles) if whole else np.asarray(elements, np.int64)
        a, b = close_pairs(mesh.centroids, mesh.edge_lengths.max(axis=1), mesh.triangles,
                           factor, sub.astype(np.int64), upper=whole)
        return (np.concatenate([a, b]), np.concatenate([b, a])) if whole else (a, b)

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
