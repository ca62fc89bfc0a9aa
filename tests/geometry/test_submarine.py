"""The BeTSSi-like submarine: one closed, outward body of the documented size."""
import math

import numpy as np
import pytest

from wavescat.configuration.case import Case
from wavescat.errors import ConfigError
from wavescat.geometry import mesh_case
from wavescat.geometry.submarine import DEFAULTS, Submarine

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}


def sub_case(h=1.5, **geometry):
    return {"geometry": {"kind": "submarine", **geometry},
            "frequencies_hz": [1500.0 / (10 * h)], "mesh": {"elements_per_wavelength": 10}}


def appendage_volume(p=DEFAULTS):
    """Upper bound of what sail and rudders add to the hull (their whole solids)."""
    sail_planform = (p["sail_length"] - p["sail_nose_length"] - p["sail_tail_length"]) * \
        p["sail_width"] + math.pi * p["sail_nose_length"] * p["sail_width"] / 4 + \
        p["sail_tail_length"] * p["sail_width"] / 2
    sail = sail_planform * (p["sail_height"] + p["hull_diameter"] / 4)
    trapezoid = lambda root, tip, span, t: (root + tip) / 2 * span * t  # noqa: E731
    return sail + 4 * trapezoid(p["stern_rudder_root_chord"], p["stern_rudder_tip_chord"],
                                p["stern_rudder_span"], p["stern_rudder_thickness"]) + \
        2 * trapezoid(p["sail_rudder_root_chord"], p["sail_rudder_tip_chord"],
                      p["sail_width"] / 2 + p["sail_rudder_span"], p["sail_rudder_thickness"])


def test_default_submarine_closed_outward_and_betssi_sized():
    h = 0.75
    mesh, s = mesh_case(Case.from_dict(sub_case(h), MEDIUM))
    lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
    assert lo[0] == pytest.approx(-31.0) and hi[0] == pytest.approx(31.0)       # 62 m, bow at +x
    assert hi[2] == pytest.approx(3.5 + 3.5)                                   # sail top
    assert lo[2] == pytest.approx(-3.5)                                        # keel, rudder
    assert hi[1] == pytest.approx(1.0 + 2.5)                                   # sail planes
    hull = Submarine().hull_volume()
    # Faceting loses at most ~h^2/(2 R^2) of the hull; appendages add less than their solids.
    assert hull * (1 - h**2 / (2 * 3.5**2)) < s["enclosed_volume"] < hull + appendage_volume()
    assert s["enclosed_volume"] > hull  # sail and rudders are really there
    assert s["edge_length_max"] <= 1.5 * h
    # Cylinder area as a lower bound of the whole surface.
    assert s["area"] > 2 * math.pi * 3.5 * 42


def test_sail_is_on_top_and_rudders_cross_at_the_stern():
    mesh, _ = mesh_case(Case.from_dict(sub_case(1.5), MEDIUM))
    v = mesh.vertices
    top = v[v[:, 2] > 3.6]
    assert top[:, 0].min() >= 31 - 14 - 13 - 1e-9 and top[:, 0].max() <= 31 - 14 + 1e-9
    stern = v[v[:, 0] < -31 + 5.1]
    # Four stern rudders reach 3.5 m from the axis along +-y and +-z.
    assert stern[:, 1].max() == pytest.approx(3.5) and stern[:, 1].min() == pytest.approx(-3.5)
    assert stern[:, 2].max() == pytest.approx(3.5) and stern[:, 2].min() == pytest.approx(-3.5)


def test_ogive_stern_and_centre_shift():
    h = 1.5
    g = {"stern_shape": "ogive", "stern_tip_diameter": 1.0, "center": [10.0, 0.0, -5.0]}
    mesh, s = mesh_case(Case.from_dict(sub_case(h, **g), MEDIUM))
    assert mesh.vertices[:, 0].max() == pytest.approx(41.0)
    hull = Submarine(**g).hull_volume()
    assert hull > Submarine(stern_tip_diameter=1.0).hull_volume()  # the ogive is fuller
    assert hull * (1 - h**2 / (2 * 3.5**2)) < s["enclosed_volume"] < hull + appendage_volume()


def test_scaled_submarine_keeps_volume_ratio():
    """Every dimension a key: halving all of them divides the volume by 8."""
    half = {k: v / 2 for k, v in DEFAULTS.items() if isinstance(v, float)}
    _, s1 = mesh_case(Case.from_dict(sub_case(0.75), MEDIUM))
    _, s2 = mesh_case(Case.from_dict(sub_case(0.375, **half), MEDIUM))
    assert s2["enclosed_volume"] * 8 == pytest.approx(s1["enclosed_volume"], rel=0.02)


@pytest.mark.parametrize("geometry, key", [
    ({"hull_length": 40.0}, "geometry.middle_body_length"),
    ({"stern_shape": "boat"}, "geometry.stern_shape"),
    ({"sail_height": -1}, "geometry.sail_height"),
    ({"sail_distance_from_bow": 45.0}, "geometry.sail_distance_from_bow"),
    ({"stern_rudder_span": 0.5}, "geometry.stern_rudder_span"),
    ({"fins": 3}, "geometry: unknown key 'fins'"),
])
def test_bad_submarine_keys(geometry, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        mesh_case(Case.from_dict(sub_case(**geometry), MEDIUM))


@pytest.mark.slow
def test_default_submarine_meshes_at_500_hz():
    """The issue's acceptance: c = 1500, 10 elements per wavelength at 500 Hz (h = 0.3 m)."""
    case = {"geometry": {"kind": "submarine"}, "frequencies_hz": [250.0, 500.0],
            "mesh": {"elements_per_wavelength": 10, "max_element_size": None,
                     "curvature_refinement": 0}}
    _, s = mesh_case(Case.from_dict(case, MEDIUM))  # runs every check
    assert s["h_requested"] == pytest.approx(0.3)
    assert s["edge_length_max"] <= 1.5 * 0.3 and s["min_angle_deg"] > 10
    assert 30_000 < s["elements"] < 60_000
    hull = Submarine().hull_volume()
    assert hull < s["enclosed_volume"] < hull + appendage_volume()
