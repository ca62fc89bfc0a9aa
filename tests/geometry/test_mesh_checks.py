"""Broken meshes built here give the right MeshError; orientation defects are repaired."""
import logging

import numpy as np
import pytest

from wavescat.errors import MeshError
from wavescat.geometry.checks import check_surface, merge_duplicate_vertices
from wavescat.geometry.icosphere import icosphere
from wavescat.surface import SurfaceMesh

SPHERE = icosphere(2)  # 320 triangles, outward


def with_triangles(t, v=SPHERE.vertices):
    return SurfaceMesh(v, t)


def test_good_mesh_passes_unchanged(caplog):
    with caplog.at_level(logging.WARNING):
        out = check_surface(SPHERE)
    assert np.array_equal(out.triangles, SPHERE.triangles) and not caplog.records


def test_hole_is_reported_as_boundary_edges():
    with pytest.raises(MeshError, match=r"3 boundary edge\(s\): the surface is not closed at \("):
        check_surface(with_triangles(SPHERE.triangles[1:]))


def test_flipped_triangles_are_repaired_with_a_warning(caplog):
    t = SPHERE.triangles.copy()
    t[[5, 77, 200]] = t[[5, 77, 200]][:, ::-1]
    with caplog.at_level(logging.WARNING, logger="wavescat.geometry.checks"):
        out = check_surface(with_triangles(t), source="test")
    assert np.array_equal(out.triangles, SPHERE.triangles)
    assert "re-oriented 3 of 320 triangles" in caplog.text and "inconsistent across 9 edge" in caplog.text


def test_inward_mesh_is_turned_outward(caplog):
    with caplog.at_level(logging.WARNING, logger="wavescat.geometry.checks"):
        out = check_surface(with_triangles(SPHERE.triangles[:, ::-1]))
    assert out.enclosed_volume > 0 and "pointed inward" in caplog.text


def test_each_component_is_made_outward():
    """Two separate spheres, one inward and with a flipped triangle: both end outward."""
    other = icosphere(1, radius=0.5, center=(3.0, 0, 0))
    t2 = other.triangles[:, ::-1] + SPHERE.n_vertices
    t2[0] = t2[0][::-1]
    mesh = SurfaceMesh(np.vstack([SPHERE.vertices, other.vertices]),
                       np.vstack([SPHERE.triangles, t2]))
    out = check_surface(mesh)
    assert np.array_equal(out.triangles[:SPHERE.n_triangles], SPHERE.triangles)
    assert np.array_equal(out.triangles[SPHERE.n_triangles:], other.triangles + SPHERE.n_vertices)


def test_duplicated_face():
    t = np.vstack([SPHERE.triangles, SPHERE.triangles[[10]][:, [1, 2, 0]]])
    with pytest.raises(MeshError, match=r"1 duplicated face\(s\) at"):
        check_surface(with_triangles(t))


def test_non_manifold_edge():
    """Two tetrahedra glued along one edge: that edge has four triangles."""
    v = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1],
                  [0, -1, 0], [0, 0, -1]], dtype=float)
    tet1 = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]]
    tet2 = [[0, 1, 4], [0, 5, 1], [0, 4, 5], [1, 5, 4]]
    with pytest.raises(MeshError, match=r"1 non-manifold edge\(s\).* at \(0\.5, 0, 0\)"):
        check_surface(SurfaceMesh(v, np.array(tet1 + tet2)))


def test_degenerate_triangles():
    t = SPHERE.triangles.copy()
    t[3, 2] = t[3, 1]
    with pytest.raises(MeshError, match=r"1 degenerate triangle\(s\) \(1 with a repeated vertex"):
        check_surface(with_triangles(t))
    # A zero-area sliver: a vertex moved onto the line through two others.
    v = SPHERE.vertices.copy()
    a, b, c = SPHERE.triangles[7]
    v[c] = 0.3 * v[a] + 0.7 * v[b]
    with pytest.raises(MeshError, match=r"degenerate triangle\(s\) \(0 with a repeated vertex, "
                                        r"\d+ of zero area\)"):
        check_surface(with_triangles(SPHERE.triangles, v))


def test_triangle_soup_is_merged():
    """STL-like input: every triangle has its own three corners."""
    soup = SurfaceMesh(SPHERE.corners.reshape(-1, 3), np.arange(3 * SPHERE.n_triangles).reshape(-1, 3))
    merged = merge_duplicate_vertices(soup)
    assert merged.n_vertices == SPHERE.n_vertices
    out = check_surface(soup)
    assert out.n_vertices == SPHERE.n_vertices
    assert out.enclosed_volume == pytest.approx(SPHERE.enclosed_volume)


def test_split_in_four_keeps_the_surface_and_halves_the_edges():
    """Splitting every triangle through its edge midpoints: four times the triangles, a vertex
    more per edge, the same area and volume (flat), the edges halved, and still a closed
    outward surface that passes the checks unchanged."""
    from wavescat.geometry.icosphere import split_in_four

    coarse = icosphere(2)
    v, f = split_in_four(coarse.vertices, coarse.triangles)
    fine = SurfaceMesh(v, f)
    edges = np.unique(np.sort(np.concatenate([coarse.triangles[:, [0, 1]], coarse.triangles[:, [1, 2]],
                                              coarse.triangles[:, [2, 0]]]), axis=1), axis=0)
    assert len(f) == 4 * len(coarse.triangles) and len(v) == len(coarse.vertices) + len(edges)
    assert fine.total_area == pytest.approx(coarse.total_area, rel=1e-13)
    assert fine.enclosed_volume == pytest.approx(coarse.enclosed_volume, rel=1e-13)
    assert fine.edge_lengths.max() == pytest.approx(coarse.edge_lengths.max() / 2, rel=1e-13)
    checked = check_surface(fine)
    assert np.array_equal(checked.triangles, f)
