"""The finite cylinder: closed, outward, vertices on the body, area and volume converging,
the rims resolved (mesh lines on the rim circles, finer there), config checks."""
import math

import numpy as np
import pytest

from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config
from wavescat.errors import ConfigError
from wavescat.geometry import mesh_case

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}
AXIS = np.array([1.0, 1.0, 0.5]) / 1.5
CENTER = np.array([0.3, -0.2, 1.0])


def _case(h, **geometry):
    return {"geometry": {"kind": "cylinder", "radius": 0.5, "length": 2.0, "axis": AXIS.tolist(),
                         "center": CENTER.tolist(), **geometry},
            "frequencies_hz": [1500.0 / (10 * h)],
            "mesh": {"elements_per_wavelength": 10, "max_element_size": None,
                     "curvature_refinement": 0, "max_volume_error": None}}  # h alone


def _axial_radial(points):
    rel = points - CENTER
    s = rel @ AXIS
    return s, np.linalg.norm(rel - s[:, None] * AXIS, axis=1)


def test_cylinder_mesh_lies_on_the_body_and_converges():
    r, length = 0.5, 2.0
    errors = []
    for h in (0.2, 0.1):
        mesh, stats = mesh_case(Case.from_dict(_case(h), MEDIUM))
        s, rho = _axial_radial(mesh.vertices)
        on_mantle = np.isclose(rho, r, atol=1e-9)
        on_ends = np.isclose(np.abs(s), length / 2, atol=1e-9)
        assert np.all(on_mantle | on_ends)  # every vertex on the surface
        assert np.all((rho <= r + 1e-9) & (np.abs(s) <= length / 2 + 1e-9))
        # outward: normals of the end triangles point along +-axis, away from the middle
        s_c, _ = _axial_radial(mesh.centroids)
        ends = np.abs(s_c) > length / 2 - 1e-9
        assert np.allclose(mesh.normals[ends] @ AXIS, np.sign(s_c[ends]), atol=1e-9)
        # the rims are mesh lines: many vertices on each rim circle, spaced finer than h
        for side in (-1, 1):
            rim = on_mantle & np.isclose(s, side * length / 2, atol=1e-9)
            assert rim.sum() >= 2 * math.pi * r / h
        assert stats["edge_length_max"] <= 1.5 * h
        volume, area = math.pi * r**2 * length, 2 * math.pi * r * (r + length)
        errors.append((1 - stats["enclosed_volume"] / volume, 1 - stats["area"] / area))
    (v1, a1), (v2, a2) = errors
    assert 0 < v2 < v1 < 0.02 and 0 < a2 < a1 < 0.02  # inscribed polygons on the circles
    assert math.log2(v1 / v2) > 1.5 and math.log2(a1 / a2) > 1.5


def test_cylinder_rims_are_refined():
    h = 0.2
    mesh, _ = mesh_case(Case.from_dict(_case(h), MEDIUM))
    s, rho = _axial_radial(mesh.vertices)
    rim = np.isclose(rho, 0.5, atol=1e-9) & np.isclose(np.abs(s), 1.0, atol=1e-9)
    n_rim = rim.sum()
    # rim vertices are spaced about EDGE_FACTOR h, not h
    assert n_rim / 2 > 1.5 * 2 * math.pi * 0.5 / h


def _config(geometry):
    return {"run": ["can"], "cases": {"can": {"geometry": geometry, "frequencies_hz": [100.0]}}}


def test_cylinder_config_normalises_the_axis_and_names_bad_keys():
    cfg = prepare_config(_config({"kind": "cylinder", "radius": 1.0, "length": 3.0,
                                  "axis": [0.0, 2.0, 0.0]}))
    geo = cfg["cases"]["can"]["geometry"]
    assert geo["axis"] == pytest.approx([0.0, 1.0, 0.0]) and geo["center"] == [0.0, 0.0, 0.0]
    default = prepare_config(_config({"kind": "cylinder", "radius": 1.0, "length": 3.0}))
    assert default["cases"]["can"]["geometry"]["axis"] == pytest.approx([0.0, 0.0, 1.0])
    with pytest.raises(ConfigError, match=r"cases.can.geometry: kind 'cylinder' needs key 'length'"):
        prepare_config(_config({"kind": "cylinder", "radius": 1.0}))
    with pytest.raises(ConfigError, match=r"cases.can.geometry.axis"):
        prepare_config(_config({"kind": "cylinder", "radius": 1.0, "length": 1.0,
                                "axis": [0.0, 0.0, 0.0]}))
    with pytest.raises(ConfigError, match=r"cases.can.geometry.size = .*not a key of geometry "
                                          r"kind 'cylinder'"):
        prepare_config(_config({"kind": "cylinder", "radius": 1.0, "length": 1.0,
                                "size": [1, 1, 1]}))
