"""Sphere, spheroid and box meshes: closed, outward (divergence-theorem volume), area,
and the element size asked for; errors for bad geometry keys."""
import math

import numpy as np
import pytest

from wavescat.configuration.case import Case
from wavescat.errors import ConfigError
from wavescat.geometry import mesh_case
from wavescat.geometry.statistics import mesh_statistics

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}


def case(geometry, h, **mesh):
    """A case whose highest frequency gives element size h at 10 elements per wavelength
    (frequency sizing only: no geometry sizing)."""
    return Case.from_dict({"geometry": geometry, "frequencies_hz": [100.0, 1500.0 / (10 * h)],
                           "mesh": {"elements_per_wavelength": 10, "max_element_size": None,
                                    "curvature_refinement": 0, "max_volume_error": None,
                                    **mesh}}, MEDIUM)


def prolate_area(a, b):
    e = math.sqrt(1 - b**2 / a**2)
    return 2 * math.pi * b**2 * (1 + a / (b * e) * math.asin(e))


def assert_size_respected(stats, h):
    assert stats["h_requested"] == pytest.approx(h)
    assert stats["edge_length_max"] <= 1.5 * h
    assert 0.8 * h <= stats["edge_length_mean"] <= 1.05 * h


def test_sphere_volume_area_converge_at_second_order():
    errors = []
    for h in (0.4, 0.2):
        mesh, stats = mesh_case(case({"kind": "sphere", "radius": 1.0,
                                      "center": [1.0, -2.0, 0.5]}, h))
        assert_size_respected(stats, h)
        assert np.allclose(np.linalg.norm(mesh.vertices - [1.0, -2.0, 0.5], axis=1), 1.0)
        # Outward normals: radial component positive on every triangle.
        assert np.all(np.einsum("ij,ij->i", mesh.normals, mesh.centroids - [1.0, -2.0, 0.5]) > 0)
        errors.append((1 - stats["enclosed_volume"] / (4 / 3 * math.pi),
                       1 - stats["area"] / (4 * math.pi)))
    (v1, a1), (v2, a2) = errors
    # Inscribed polyhedron: errors positive, O(h^2) and within the chord-height bound h^2/(2R^2).
    assert 0 < v2 < v1 < 0.4**2 / 2 and 0 < a2 < a1 < 0.4**2 / 2
    assert math.log2(v1 / v2) > 1.7 and math.log2(a1 / a2) > 1.7


def test_spheroid_prolate_volume_and_area():
    h = 0.2
    mesh, stats = mesh_case(case({"kind": "spheroid", "semi_axes": [2.0, 1.0, 1.0]}, h))
    assert_size_respected(stats, h)
    v_exact, a_exact = 4 / 3 * math.pi * 2.0, prolate_area(2.0, 1.0)
    assert 0 < 1 - stats["enclosed_volume"] / v_exact < h**2 / 2
    assert 0 < 1 - stats["area"] / a_exact < h**2 / 2
    # Every vertex lies on the ellipsoid.
    assert np.allclose(((mesh.vertices / [2.0, 1.0, 1.0]) ** 2).sum(axis=1), 1.0, atol=1e-6)


def test_triaxial_spheroid_volume():
    h = 0.25
    _, stats = mesh_case(case({"kind": "spheroid", "semi_axes": [1.5, 1.0, 0.6],
                               "center": [0, 0, 3]}, h))
    assert 0 < 1 - stats["enclosed_volume"] / (4 / 3 * math.pi * 0.9) < h**2


def test_box_is_exact():
    h = 0.3
    mesh, stats = mesh_case(case({"kind": "box", "size": [1.0, 2.0, 3.0],
                                  "center": [1.0, 2.0, 3.0]}, h))
    assert_size_respected(stats, h)
    assert stats["enclosed_volume"] == pytest.approx(6.0, rel=1e-12)
    assert stats["area"] == pytest.approx(22.0, rel=1e-12)
    assert mesh.vertices.min(axis=0) == pytest.approx([0.5, 1.0, 1.5])
    assert mesh.vertices.max(axis=0) == pytest.approx([1.5, 3.0, 4.5])
    # Flat faces: every normal is a coordinate axis pointing away from the centre.
    n = mesh.normals
    assert np.allclose(np.abs(n).max(axis=1), 1.0)
    assert np.all(np.einsum("ij,ij->i", n, mesh.centroids - [1.0, 2.0, 3.0]) > 0)


def test_max_element_size_caps_h():
    _, stats = mesh_case(case({"kind": "box", "size": [1, 1, 1]}, 0.5, max_element_size=0.25))
    assert stats["h_requested"] == 0.25
    assert stats["edge_length_max"] <= 1.5 * 0.25


def test_curvature_refinement_resolves_a_coarse_sphere():
    """h = 2 on a unit sphere is coarser than the sphere; 24 elements per 2 pi refine it."""
    plain, s0 = mesh_case(case({"kind": "sphere", "radius": 1.0}, 2.0))
    fine, s1 = mesh_case(case({"kind": "sphere", "radius": 1.0}, 2.0, curvature_refinement=24))
    assert s1["elements"] > 4 * s0["elements"]
    assert s1["edge_length_max"] <= 1.5 * 2 * math.pi / 24
    assert s1["curvature_refinement"] == 24


def test_statistics_of_a_regular_tetrahedron():
    from wavescat.surface import SurfaceMesh
    v = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=float)
    t = np.array([[0, 1, 2], [0, 3, 1], [0, 2, 3], [1, 3, 2]])
    s = mesh_statistics(SurfaceMesh(v, t), h=1.0, seconds=0.5)
    edge = math.sqrt(8)
    assert (s["elements"], s["vertices"]) == (4, 4)
    assert s["edge_length_min"] == pytest.approx(edge) and s["edge_length_max"] == pytest.approx(edge)
    assert s["min_angle_deg"] == pytest.approx(60.0)
    assert s["area"] == pytest.approx(4 * math.sqrt(3) / 4 * edge**2)
    assert s["enclosed_volume"] == pytest.approx(edge**3 / (6 * math.sqrt(2)))
    assert s["meshing_time_s"] == 0.5


@pytest.mark.parametrize("geometry, key", [
    ({"kind": "sphere", "radius": -1.0}, "geometry.radius"),
    ({"kind": "sphere"}, "geometry: kind 'sphere' needs key 'radius'"),
    ({"kind": "spheroid", "semi_axes": [1.0, 0.0, 1.0]}, "geometry.semi_axes"),
    ({"kind": "box", "size": [1.0, 1.0]}, "geometry.size"),
    ({"kind": "box", "size": [1, 1, 1], "center": "origin"}, "geometry.center"),
    ({"kind": "cone"}, "geometry.kind"),
])
def test_bad_geometry_names_key(geometry, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        mesh_case(case(geometry, 0.5))


@pytest.mark.parametrize("medium, mesh, freqs, key", [
    ({"sound_speed": 0.0}, {}, [100.0], "medium.sound_speed"),
    (MEDIUM, {"elements_per_wavelength": -3}, [100.0], "mesh.elements_per_wavelength"),
    (MEDIUM, {"max_element_size": 0}, [100.0], "mesh.max_element_size"),
    (MEDIUM, {"curvature_refinement": 2.5}, [100.0], "mesh.curvature_refinement"),
    (MEDIUM, {}, [100.0, -50.0], r"frequencies_hz\[1\]"),
])
def test_bad_mesh_settings_name_key(medium, mesh, freqs, key):
    c = {"geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": freqs, "mesh": mesh}
    with pytest.raises(ConfigError, match=key):
        mesh_case(Case.from_dict(c, medium))


def test_meshing_is_deterministic():
    c = case({"kind": "spheroid", "semi_axes": [1.0, 0.7, 0.5]}, 0.3)
    (m1, _), (m2, _) = mesh_case(c), mesh_case(c)
    assert m1.fingerprint() == m2.fingerprint()
