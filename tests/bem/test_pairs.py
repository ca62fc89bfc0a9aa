"""The element pairs that get more than the regular rule (bem/discretisation/pairs.py),
against their definitions checked pair by pair."""
import numpy as np
import pytest

from wavescat.bem.discretisation import pairs
from wavescat.geometry.icosphere import icosphere
from wavescat.surface import SurfaceMesh


def near_by_definition(mesh, factor, elements):
    """Every (a, b), a in `elements`, whose centroids are closer than factor * the larger
    diameter and which share no vertex: all pairs tried."""
    cen, diam, tri = mesh.centroids, mesh.edge_lengths.max(axis=1), mesh.triangles
    out = set()
    for a in elements:
        d2 = ((cen - cen[a]) ** 2).sum(axis=1)
        r = factor * np.maximum(diam, diam[a])
        touch = np.isin(tri, tri[a]).any(axis=1)
        out |= {(int(a), int(b)) for b in np.flatnonzero((d2 < r * r) & ~touch)}
    return out


def graded_mesh():
    """A sphere stretched to an ellipsoid with its vertices moved: elements of many sizes
    and shapes, so that the pair test's larger diameter matters."""
    sphere = icosphere(3)
    v = sphere.vertices * np.array([3.0, 1.0, 0.5])
    v = v + 0.05 * np.random.default_rng(7).standard_normal(v.shape) * v[:, :1] ** 2
    return SurfaceMesh(v, sphere.triangles)


@pytest.mark.parametrize("factor", [0.5, 2.0, 6.0])
def test_near_pairs_are_those_of_their_definition(factor):
    mesh = graded_mesh()
    every = np.arange(mesh.n_triangles)
    want = near_by_definition(mesh, factor, every)
    a, b = pairs.near_pairs(mesh, factor)
    got = list(zip(a.tolist(), b.tolist()))
    assert len(got) == len(set(got)) and set(got) == want
    h = len(a) // 2  # the pairs a < b, then the same swapped
    assert (a[:h] < b[:h]).all() and np.array_equal(a[:h], b[h:])
    part = np.sort(np.random.default_rng(1).choice(mesh.n_triangles, 97, replace=False))
    a, b = pairs.near_pairs(mesh, factor, part)
    got = list(zip(a.tolist(), b.tolist()))
    chosen = set(part.tolist())  # made once, not once per pair of `want`
    assert len(got) == len(set(got)) and set(got) == {p for p in want if p[0] in chosen}


def test_near_pairs_of_a_flat_mesh_and_of_none():
    flat = icosphere(2)
    v = flat.vertices.copy()
    v[:, 2] = 0.0  # a doubled disc: every centroid in one plane, one layer of cells
    mesh = SurfaceMesh(v, flat.triangles)
    a, b = pairs.near_pairs(mesh, 1.5)
    assert set(zip(a.tolist(), b.tolist())) == near_by_definition(mesh, 1.5, range(mesh.n_triangles))
    assert all(len(x) == 0 for x in pairs.near_pairs(icosphere(2), 0.0))
