"""SurfaceMesh with several surfaces: union, surface(i), surface_vertices(i), fingerprint,
and the surface ids through a .msh file (gmsh physical tag i + 1 = surface i)."""
import numpy as np
import pytest

from wavescat.errors import MeshError
from wavescat.geometry.icosphere import icosphere
from wavescat.surface import SurfaceMesh


def _sphere(radius, center=(0.0, 0.0, 0.0), level=1):
    m = icosphere(level)
    return SurfaceMesh(radius * m.vertices + np.asarray(center), m.triangles,
                       {"source": f"sphere {radius}"})


def test_one_surface_mesh_has_no_ids():
    m = _sphere(1.0)
    assert m.surface_ids is None and m.n_surfaces == 1
    assert m.surface(0) is m and m.surface_vertices(0) == slice(0, m.n_vertices)
    with pytest.raises(IndexError):
        m.surface(1)
    # all-zero ids are one surface: normalised to None, same fingerprint
    same = SurfaceMesh(m.vertices, m.triangles, {}, np.zeros(m.n_triangles, int))
    assert same.surface_ids is None and same.fingerprint() == m.fingerprint()


def test_union_surfaces_in_order():
    a, b, c = _sphere(1.0), _sphere(0.5, level=0), _sphere(0.2, (0.1, 0, 0), level=2)
    u = SurfaceMesh.union([a, b, c])
    assert u.n_surfaces == 3
    assert u.n_vertices == a.n_vertices + b.n_vertices + c.n_vertices
    assert u.surface_ids.dtype == np.int64 and u.surface_ids.shape == (u.n_triangles,)
    assert np.all(np.diff(u.surface_ids) >= 0)
    assert u.surface_vertices(1) == slice(a.n_vertices, a.n_vertices + b.n_vertices)
    for i, part in enumerate((a, b, c)):
        s = u.surface(i)
        np.testing.assert_array_equal(s.vertices, part.vertices)
        np.testing.assert_array_equal(s.triangles, part.triangles)
        assert s.meta["source"] == part.meta["source"]
        assert s.surface_ids is None
        np.testing.assert_array_equal(u.vertices[u.surface_vertices(i)], part.vertices)
    assert u.meta["source"] == "sphere 1.0 + sphere 0.5 + sphere 0.2"
    # a union of unions flattens in order
    uu = SurfaceMesh.union([SurfaceMesh.union([a, b]), c])
    np.testing.assert_array_equal(uu.surface_ids, u.surface_ids)
    assert uu.fingerprint() == u.fingerprint()
    assert u.enclosed_volume == pytest.approx(a.enclosed_volume + b.enclosed_volume
                                              + c.enclosed_volume)


def test_fingerprint_includes_ids():
    a, b = _sphere(1.0), _sphere(0.5)
    u = SurfaceMesh.union([a, b])
    plain = SurfaceMesh(u.vertices, u.triangles)
    assert plain.fingerprint() != u.fingerprint()


def test_ids_must_be_contiguous_and_ordered():
    a, b = _sphere(1.0), _sphere(0.5)
    u = SurfaceMesh.union([a, b])
    with pytest.raises(MeshError, match="in triangle order"):
        SurfaceMesh(u.vertices, u.triangles, {}, u.surface_ids[::-1])
    with pytest.raises(MeshError, match="shape"):
        SurfaceMesh(u.vertices, u.triangles, {}, u.surface_ids[:-1])
    # surface 1's triangles on surface 0's vertices
    t = u.triangles.copy()
    t[-1] = t[0]
    with pytest.raises(MeshError, match="contiguous"):
        SurfaceMesh(u.vertices, t, {}, u.surface_ids)


def test_msh_round_trip_keeps_surface_ids(tmp_path):
    u = SurfaceMesh.union([_sphere(1.0), _sphere(0.5), _sphere(0.2, (0.3, 0, 0))])
    path = tmp_path / "mesh.msh"
    u.write(path)
    back = SurfaceMesh.from_file(path)
    assert back.n_surfaces == 3
    np.testing.assert_array_equal(back.surface_ids, u.surface_ids)
    np.testing.assert_allclose(back.vertices, u.vertices)
    np.testing.assert_array_equal(back.triangles, u.triangles)
    assert back.fingerprint() == u.fingerprint()
    import meshio
    tags = meshio.read(path).cell_data["gmsh:physical"][0]
    np.testing.assert_array_equal(tags, u.surface_ids + 1)


def test_msh_one_surface_round_trip(tmp_path):
    m = _sphere(1.0)
    m.write(tmp_path / "one.msh")
    back = SurfaceMesh.from_file(tmp_path / "one.msh")
    assert back.surface_ids is None and back.fingerprint() == m.fingerprint()
