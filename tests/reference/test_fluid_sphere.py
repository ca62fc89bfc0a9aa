"""The fluid sphere series against physics it must obey: optical theorem, the rigid and
pressure-release limits, the transmission conditions on the surface (from the exterior and
interior series), the Wronskian trace formulas, the gas bubble's Minnaert
resonance, and the contrasts of a `boundary` block."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from wavescat.bem.formulations import boundary_from
from wavescat.errors import InputError
from wavescat.problem.medium import Medium
from wavescat.reference import fluid_sphere as fluid
from wavescat.reference import pressure_release_sphere as soft
from wavescat.reference import rigid_sphere as rs
from wavescat.reference.sphere import sphere_series

_spec = importlib.util.spec_from_file_location(
    "rigid_sphere_tests", Path(__file__).with_name("test_rigid_sphere.py"))
_rigid_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rigid_tests)
angle_directions, sphere_quadrature = _rigid_tests.angle_directions, _rigid_tests.sphere_quadrature

A, D, C = 1.3, np.array([1.0, -2.0, 0.5]), np.array([0.4, 0.1, -0.7])
GAS = {"density_ratio": 0.0012, "sound_speed_ratio": 0.22}  # an air bubble in water
WEAK = {"density_ratio": 1.04, "sound_speed_ratio": 1.03}  # zooplankton-like
FLESH = {"density_ratio": 1.5, "sound_speed_ratio": 1.2}
DENSE_SLOW = {"density_ratio": 3.0, "sound_speed_ratio": 0.6}  # interior wavelength shorter
CONTRASTS = [GAS, WEAK, FLESH, DENSE_SLOW]
IDS = ["gas", "weak", "flesh", "dense_slow"]


@pytest.mark.parametrize("ka", [0.3, 2.0, 25.0])
@pytest.mark.parametrize("params", CONTRASTS, ids=IDS)
def test_optical_theorem(ka, params):
    """Lossless body: extinction (4 pi / k) Im F(d) equals the scattering cross-section."""
    k = ka / A
    order = int(ka / min(1.0, params["sound_speed_ratio"]) + 4 * np.cbrt(ka) + 25)
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    sigma = np.sum(w * np.abs(fluid.far_field(k, A, D, dirs, center=C, **params)) ** 2)
    forward = fluid.far_field(k, A, D, [D], center=C, **params)[0]
    assert sigma == pytest.approx(4 * np.pi / k * forward.imag, rel=1e-9)


def test_limits_are_rigid_and_pressure_release():
    """g -> infinity: the rigid sphere; g -> 0: the pressure-release sphere (any h): both
    at the rate g^(+-1)."""
    k, d = 3.1, np.array([0.0, 0.6, 0.8])
    xhat = angle_directions(d, np.linspace(0, np.pi, 19))
    rigid = rs.far_field(k, A, d, xhat, center=C)
    errors = [np.max(np.abs(fluid.far_field(k, A, d, xhat, center=C, density_ratio=g,
                                            sound_speed_ratio=1.5) - rigid)) for g in (1e3, 1e6)]
    assert errors[1] < 1e-5 * np.max(np.abs(rigid)) and errors[1] < 0.01 * errors[0]
    softf = soft.far_field(k, A, d, xhat, center=C)
    errors = [np.max(np.abs(fluid.far_field(k, A, d, xhat, center=C, density_ratio=g,
                                            sound_speed_ratio=0.7) - softf)) for g in (1e-3, 1e-6)]
    assert errors[1] < 1e-5 * np.max(np.abs(softf)) and errors[1] < 0.01 * errors[0]
    same = fluid.far_field(k, A, d, xhat, center=C, density_ratio=1.0, sound_speed_ratio=1.0)
    assert np.max(np.abs(same)) < 1e-14  # no contrast, no scattering


H = 1e-5  # difference step / radius


@pytest.mark.parametrize("ka", [0.5, 6.0, 30.0])
@pytest.mark.parametrize("params", CONTRASTS, ids=IDS)
def test_transmission_conditions_on_the_surface(ka, params):
    """p and (1/rho) dp/dn continuous across r = a, the exterior side from total_field and
    the interior side from interior_field (one-sided second-order differences), and the
    Wronskian trace formulas equal to both."""
    a, d, c = 1.5, np.array([0.3, -0.2, 1.0]), np.array([-1.0, 0.5, 2.0])
    d = d / np.linalg.norm(d)
    k, g = ka / a, params["density_ratio"]
    n = np.random.default_rng(3).normal(size=(40, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    h = H * a

    def side(field, sign):
        p = [field(k, a, d, c + (a + sign * j * h) * n, center=c, **params) for j in range(3)]
        return p[0], sign * (-3 * p[0] + 4 * p[1] - p[2]) / (2 * h)

    p_out, dp_out = side(fluid.total_field, 1)
    p_in, dp_in = side(fluid.interior_field, -1)
    scale = max(1.0, np.max(np.abs(p_out)))
    assert np.max(np.abs(p_out - p_in)) < 1e-10 * scale * max(1.0, ka)
    k_in = k / params["sound_speed_ratio"]
    assert np.max(np.abs(dp_out - dp_in / g)) < 1e-6 * scale * max(k, k_in) ** 3 * a**2
    surface = fluid.surface_pressure(k, a, d, c + 3.0 * n, center=c, **params)
    assert np.allclose(p_out, surface, rtol=0, atol=1e-10 * scale * max(1.0, ka))
    normal = fluid.surface_normal_derivative(k, a, d, c + 3.0 * n, center=c, **params)
    assert np.max(np.abs(dp_out - normal)) < 1e-6 * scale * max(k, k_in) ** 3 * a**2


def test_gas_bubble_minnaert_resonance():
    """The monopole of a gas bubble resonates at ka = h sqrt(3 g) (Minnaert: omega a =
    sqrt(3 gamma P / rho) with gamma P = rho_1 c_1^2), where the l = 0 reflection
    coefficient reaches the unitarity bound |c_0| = 1, i.e. |F| = 1/k; the backscatter there
    is far above the pressure-release sphere's (|F| = a)."""
    g, h = GAS["density_ratio"], GAS["sound_speed_ratio"]
    minnaert = h * np.sqrt(3 * g)
    kas = np.geomspace(0.4 * minnaert, 2.5 * minnaert, 1201)
    back = np.array([abs(fluid.far_field(ka, 1.0, [0.0, 0.0, 1.0], [[0.0, 0.0, -1.0]], **GAS)[0])
                     for ka in kas])
    peak = np.argmax(back)
    assert 0 < peak < len(kas) - 1
    assert kas[peak] == pytest.approx(minnaert, rel=0.01)
    assert back[peak] * kas[peak] == pytest.approx(1.0, abs=2e-3)
    assert back[peak] > 50 * abs(soft.far_field(kas[peak], 1.0, [0, 0, 1.0], [[0, 0, -1.0]])[0])


def test_monostatic_matches_bistatic():
    k, a, c = 7.0, 0.6, np.array([0.2, -0.4, 1.0])
    dirs = angle_directions([1.0, 0.0, 0.0], np.linspace(0, 2 * np.pi, 11))
    expected = [fluid.far_field(k, a, d, [-d], center=c, **FLESH)[0] for d in dirs]
    assert np.allclose(fluid.monostatic_far_field(k, a, dirs, center=c, **FLESH), expected,
                       rtol=1e-13)


def test_contrasts_of_a_boundary_block():
    """Ratios directly, or absolute values over the medium's; exactly one of each pair."""
    medium = Medium(density=1025.0, sound_speed=1500.0)

    def contrasts(block, medium=None):
        b = boundary_from(block, medium)
        return b.density_ratio, b.sound_speed_ratio

    assert contrasts({"kind": "fluid", "density_ratio": 1.04,
                      "sound_speed_ratio": 1.03}) == (1.04, 1.03)
    g, h = contrasts({"kind": "fluid", "density": 1.23, "sound_speed": 343.0}, medium)
    assert g == pytest.approx(1.23 / 1025.0) and h == pytest.approx(343.0 / 1500.0)
    k, d, x = 2.0, [0.0, 0.0, 1.0], [[1.0, 0.0, 0.0]]
    series = sphere_series(boundary_from({"kind": "fluid", "density": 1537.5,
                                       "sound_speed_ratio": 1.2}, medium))
    assert series.far_field(k, 1.0, d, x) == fluid.far_field(k, 1.0, d, x, **FLESH)
    with pytest.raises(InputError, match=r"^density_ratio / density: .* exactly one .*both"):
        contrasts({"kind": "fluid", "density_ratio": 1.0, "density": 1000.0,
                   "sound_speed_ratio": 1.0})
    with pytest.raises(InputError, match=r"^sound_speed_ratio / sound_speed: .*neither"):
        contrasts({"kind": "fluid", "density_ratio": 1.0})
    with pytest.raises(InputError, match=r"^density_ratio = -1"):
        contrasts({"kind": "fluid", "density_ratio": -1, "sound_speed_ratio": 1.0})


def test_interior_field_refuses_outside_points():
    with pytest.raises(InputError, match=r"points\[1\] lies outside the sphere"):
        fluid.interior_field(1.0, 1.0, [0, 0, 1.0], [[0, 0, 0.5], [0, 0, 2.0]], **FLESH)
