"""`mesh.match_volume`: a fluid body's mesh encloses the body's exact volume (vertices offset
along their normals), still closed, outward and as well shaped; the other bodies keep the
inscribed mesh, vertex for vertex."""
import math

import numpy as np
import pytest

from wavescat.configuration.case import Case
from wavescat.errors import ConfigError
from wavescat.geometry import mesh_case
from wavescat.geometry.checks import check_surface
from wavescat.geometry.statistics import min_angle_deg

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}
FLUID = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.03}
KA5 = 5 * 1500.0 / (2 * math.pi)


def case(geometry, f, boundary=None, **mesh):
    c = {"geometry": geometry, "frequencies_hz": [f], "mesh": mesh}
    if boundary is not None:
        c["boundary"] = boundary
    return Case.from_dict(c, MEDIUM)


@pytest.mark.parametrize("geometry, f, exact", [
    ({"kind": "sphere", "radius": 1.0}, KA5, 4 / 3 * math.pi),
    ({"kind": "spheroid", "semi_axes": [1.5, 0.6, 0.4]}, 600.0, 4 / 3 * math.pi * 0.36),
    ({"kind": "cylinder", "radius": 0.01, "length": 0.07, "axis": [1, 0, 0]}, 38e3,
     math.pi * 0.01**2 * 0.07),
])
def test_fluid_body_mesh_encloses_the_exact_volume(geometry, f, exact):
    """The inscribed mesh is 0.1-1% short; the matched one within 1e-5 (the offset's second
    step leaves a third-order term), same triangles, checks passing, angles within 1%."""
    plain, ps = mesh_case(case(geometry, f))
    mesh, s = mesh_case(case(geometry, f, FLUID))
    assert 1e-3 < 1 - plain.enclosed_volume / exact < 0.011
    assert abs(1 - mesh.enclosed_volume / exact) < 1e-5, s
    assert ps["volume_offset"] is None and 0 < s["volume_offset"] < 0.02 * s["edge_length_mean"]
    assert np.array_equal(mesh.triangles, plain.triangles)
    checked = check_surface(mesh, merge=False)
    assert np.array_equal(checked.triangles, mesh.triangles)  # closed, oriented, outward
    assert min_angle_deg(mesh) == pytest.approx(min_angle_deg(plain), rel=0.01)


@pytest.mark.parametrize("boundary, setting, matched", [
    ({"kind": "rigid"}, "auto", False), ({"kind": "pressure_release"}, "auto", False),
    ({"kind": "impedance", "admittance": [1.0, 0.0]}, "auto", False), (None, "auto", False),
    (FLUID, False, False), ({"kind": "rigid"}, True, True),
])
def test_setting_decides_which_meshes_are_offset(boundary, setting, matched):
    """`auto` leaves rigid, pressure-release and impedance meshes inscribed (every vertex on the
    sphere, results as before); `true` and `false` override it either way."""
    geometry = {"kind": "sphere", "radius": 1.0}
    mesh, _ = mesh_case(case(geometry, 300.0, boundary, match_volume=setting))
    r = np.linalg.norm(mesh.vertices, axis=1)
    if matched:
        assert r.min() > 1 and mesh.enclosed_volume == pytest.approx(4 / 3 * math.pi, rel=1e-5)
    else:
        assert np.allclose(r, 1.0)  # inscribed: no vertex off the surface


def test_bad_setting_is_named():
    with pytest.raises(ConfigError, match="mesh.match_volume = 'yes': must be one of auto, "
                                          "True, False"):
        mesh_case(case({"kind": "sphere", "radius": 1.0}, 300.0, match_volume="yes"))


def test_volume_warning_has_the_sign_of_the_deviation():
    """An inscribed mesh is smaller than its body: the warning says -x% and "smaller" (it
    said +x%), a mesh offset outward +x% and "larger"."""
    from wavescat.geometry.icosphere import icosphere
    from wavescat.geometry.resolution import resolution_warnings
    from wavescat.geometry.shape import Geometry
    from wavescat.surface import SurfaceMesh

    ball = icosphere(1)
    exact = 4 / 3 * math.pi
    small = SurfaceMesh(ball.vertices, ball.triangles, {"exact_volume": exact})
    large = SurfaceMesh(1.2 * ball.vertices, ball.triangles, {"exact_volume": exact})
    for mesh, sign, word in ((small, "-", "smaller"), (large, "+", "larger")):
        (text,) = resolution_warnings(mesh, Geometry(), "ball", 0.01)
        dev = 100 * (mesh.enclosed_volume / exact - 1)
        assert f"is {sign}{abs(dev):.2f}% off the body's" in text and f"{word} than the body" \
            in text, text
