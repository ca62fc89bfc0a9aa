"""Meshes that resolve the body at every frequency: the meshed volume of every built-in kind
within mesh.max_volume_error (1%) of the exact one at low frequencies, frequency sizing where
it is finer, and warnings where a mesh is coarse against the body."""
import math

import pytest

from wavescat.configuration.case import Case
from wavescat.geometry import mesh_case
from wavescat.geometry.sizing import frequency_bands

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}


def case(geometry, f, **mesh):
    return Case.from_dict({"geometry": geometry, "frequencies_hz": [f],
                           "mesh": {"elements_per_wavelength": 10, **mesh}}, MEDIUM)


def ellipsoid_volume(a, b, c):
    return 4 / 3 * math.pi * a * b * c


@pytest.mark.parametrize("geometry, f, epw, exact", [
    ({"kind": "sphere", "radius": 0.9}, 500.0, 8, 4 / 3 * math.pi * 0.9**3),
    ({"kind": "spheroid", "semi_axes": [1.5, 0.6, 0.4]}, 600.0, 10, ellipsoid_volume(1.5, 0.6, 0.4)),
])
def test_the_reported_meshes_now_keep_the_volume(geometry, f, epw, exact):
    """A 0.9 m sphere at 500 Hz, 8 elements per wavelength, lost 4.6% of its volume; a
    1.5 x 0.6 x 0.4 m spheroid at 600 Hz about 5%."""
    _, plain = mesh_case(case(geometry, f, elements_per_wavelength=epw, max_volume_error=None))
    _, s = mesh_case(case(geometry, f, elements_per_wavelength=epw))
    assert 1 - plain["enclosed_volume"] / exact > 0.04
    assert abs(1 - s["enclosed_volume"] / exact) <= 0.01
    assert s["warnings"] == []


@pytest.mark.parametrize("geometry, f, exact", [
    ({"kind": "spheroid", "semi_axes": [1.0, 1.0, 0.25], "center": [0, 1, 0]}, 50.0,
     ellipsoid_volume(1.0, 1.0, 0.25)),                                     # oblate, thin rim
    ({"kind": "spheroid", "semi_axes": [0.25, 1.0, 0.2]}, 100.0, ellipsoid_volume(0.25, 1, .2)),
    ({"kind": "spheroid", "semi_axes": [0.5, 0.1, 0.1]}, 30.0, ellipsoid_volume(0.5, .1, .1)),
    ({"kind": "box", "size": [1.0, 0.2, 3.0]}, 20.0, 0.6),
])
def test_low_frequency_meshes_keep_the_volume(geometry, f, exact):
    _, s = mesh_case(case(geometry, f))
    assert abs(1 - s["enclosed_volume"] / exact) <= 0.01
    assert s["exact_volume"] == pytest.approx(exact, rel=1e-3)
    assert s["warnings"] == []


def test_submarine_volume_against_the_occ_solid():
    """The surface mesh's divergence-theorem volume against OpenCASCADE's volume of the
    fused solid, at 100 Hz (h = 1.5 m from the frequency)."""
    from wavescat.geometry.gmsh_model import gmsh_session
    from wavescat.geometry.submarine import Submarine, build_submarine

    with gmsh_session() as gmsh:
        tag = build_submarine(gmsh.model.occ, Submarine())
        gmsh.model.occ.synchronize()
        exact = gmsh.model.occ.getMass(3, tag)
    _, s = mesh_case(case({"kind": "submarine"}, 100.0))
    assert abs(1 - s["enclosed_volume"] / exact) <= 0.01
    assert s["warnings"] == []
    _, plain = mesh_case(case({"kind": "submarine"}, 100.0, max_volume_error=None))
    assert 1 - plain["enclosed_volume"] / exact > 0.015
    assert len(plain["warnings"]) > 0  # sail leading edge and stern hub too coarse


def test_frequency_sizing_where_it_is_finer():
    """The default sphere at ka = 5: the wavelength asks for finer elements than the
    geometry, so the mesh is the frequency-sized one (h = lambda / 10)."""
    f = 5 * 1500.0 / (2 * math.pi)
    _, s = mesh_case(case({"kind": "sphere", "radius": 1.0}, f))
    _, plain = mesh_case(case({"kind": "sphere", "radius": 1.0}, f, max_volume_error=None))
    assert s["elements"] == plain["elements"]
    assert abs(1 - s["enclosed_volume"] / (4 / 3 * math.pi)) <= 0.01
    assert s["warnings"] == []


def test_slender_spheroid_at_default_density_warns():
    """0.5 x 0.1 x 0.1 m semi-axes at 2 kHz with frequency sizing only: 162 unknowns, about
    two elements per turn of the 2 cm tip radius: warned about."""
    mesh, s = mesh_case(case({"kind": "spheroid", "semi_axes": [0.5, 0.1, 0.1]}, 2000.0,
                             max_volume_error=None))
    assert s["vertices"] == 162
    assert any("+ tip" in w and "coarse" in w for w in s["warnings"])
    assert any("- tip" in w for w in s["warnings"])



def test_frequency_bands():
    f = [100.0 * k for k in range(1, 11)]  # 100 ... 1000 Hz
    bands = frequency_bands(f, 1.5)
    assert bands[0] == [6, 7, 8, 9]       # 700-1000 Hz on the finest mesh
    assert sorted(i for b in bands for i in b) == list(range(10))
    for band in bands:  # no frequency more than 1.5 times below its band's top
        top = max(f[i] for i in band)
        assert all(f[i] * 1.5 >= top for i in band)
    tops = [max(f[i] for i in b) for b in bands]
    assert tops == sorted(tops, reverse=True)
    # consecutive bands: the next top lies below the previous band
    assert all(t1 * 1.5 < t0 for t0, t1 in zip(tops, tops[1:]))
    assert frequency_bands([500.0], 1.5) == [[0]]
    assert frequency_bands([300.0, 100.0, 300.0], 1.0) == [[0, 2], [1]]
    assert frequency_bands(f, 100.0) == [list(range(10))]


def test_max_element_size_merges_bands():
    """Where mesh.max_element_size sets h, the frequencies below share one mesh."""
    from wavescat.geometry.sizing import sizing_frequencies
    c = {"frequencies_hz": [400.0, 800.0, 1600.0],
         "mesh": {"elements_per_wavelength": 8, "max_element_size": 0.12}}
    f = sizing_frequencies(Case.from_dict(c, MEDIUM))  # h = 0.12 m is lambda / 8 at 1562.5 Hz
    assert f == [1562.5, 1562.5, 1600.0]
    assert frequency_bands(f, 1.5) == [[0, 1, 2]]
    assert sizing_frequencies(Case.from_dict({**c, "mesh": {}}, MEDIUM)) == c["frequencies_hz"]


@pytest.mark.parametrize("f", [30e3, 38e3])
def test_finite_cylinder_keeps_the_volume(f):
    """The fisheries benchmark's finite cylinder (radius 1 cm, 7 cm long) at 30 and 38 kHz:
    frequency sizing alone loses more than 1% of the volume (rim polygons inscribed in the
    circles); geometry sizing of the curved mantle brings it within the tolerance, and the
    mesh stays inscribed (all vertices on the body, which is convex: volume below exact)."""
    geometry = {"kind": "cylinder", "radius": 0.01, "length": 0.07, "axis": [1, 0, 0]}
    exact = math.pi * 0.01**2 * 0.07
    _, plain = mesh_case(case(geometry, f, max_volume_error=None))
    _, s = mesh_case(case(geometry, f))
    assert 1 - plain["enclosed_volume"] / exact > 0.01
    assert s["exact_volume"] == pytest.approx(exact, rel=1e-9)
    assert 0 < 1 - s["enclosed_volume"] / exact <= 0.01
    assert s["warnings"] == []
