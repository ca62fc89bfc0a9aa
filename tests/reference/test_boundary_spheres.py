"""The pressure-release and impedance sphere series against physics they must obey: optical
theorem (with the absorbed power of an impedance surface), low-frequency and limiting
boundary conditions, the boundary condition itself on the surface, near -> far field."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from wavescat.bem.formulations import boundary_from
from wavescat.errors import InputError
from wavescat.reference import fluid_sphere as fluid
from wavescat.reference import impedance_sphere as imp
from wavescat.reference import pressure_release_sphere as soft
from wavescat.reference import rigid_sphere as rs
from wavescat.reference.sphere import sphere_series

_spec = importlib.util.spec_from_file_location(
    "rigid_sphere_tests", Path(__file__).with_name("test_rigid_sphere.py"))
_rigid_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rigid_tests)
angle_directions, sphere_quadrature = _rigid_tests.angle_directions, _rigid_tests.sphere_quadrature

A, D, C = 1.3, np.array([1.0, -2.0, 0.5]), np.array([0.4, 0.1, -0.7])


def _cross_section(far_field, k, ka):
    order = int(ka + 4 * np.cbrt(ka) + 25)  # |F|^2 is a polynomial of degree 2*order
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    return np.sum(w * np.abs(far_field(dirs)) ** 2)


@pytest.mark.parametrize("ka", [0.3, 2.0, 25.0, 150.0])
def test_pressure_release_optical_theorem(ka):
    k = ka / A
    sigma = _cross_section(lambda x: soft.far_field(k, A, D, x, center=C), k, ka)
    forward = soft.far_field(k, A, D, [D], center=C)[0]
    assert sigma == pytest.approx(4 * np.pi / k * forward.imag, rel=1e-10)


@pytest.mark.parametrize("ka", [0.3, 2.0, 25.0])
@pytest.mark.parametrize("beta", [0.7 + 0.4j, 2.5 - 1.0j, 0.2j, -1.5j])
def test_impedance_optical_theorem_with_absorption(ka, beta):
    """Extinction = scattering + absorption, absorption = Re(beta) int |p_tot|^2 dS computed
    from the surface pressure by quadrature: >= 0 for Re beta > 0, zero for imaginary beta."""
    k = ka / A
    sigma_s = _cross_section(lambda x: imp.far_field(k, A, D, x, center=C, admittance=beta),
                             k, ka)
    extinction = 4 * np.pi / k * imp.far_field(k, A, D, [D], center=C, admittance=beta)[0].imag
    order = int(ka + 4 * np.cbrt(ka) + 25)
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    p = imp.surface_pressure(k, A, D, C + dirs, center=C, admittance=beta)
    sigma_a = beta.real * A**2 * np.sum(w * np.abs(p) ** 2)
    assert extinction == pytest.approx(sigma_s + sigma_a, rel=1e-9)
    if beta.real > 0:
        assert sigma_a > 1e-3 * sigma_s
    else:
        assert extinction == pytest.approx(sigma_s, rel=1e-10)


def test_pressure_release_low_frequency_monopole():
    """ka << 1: F -> -a (isotropic), with the next term of relative order ka."""
    a, ka = 2.0, 1e-4
    k = ka / a
    gamma = np.linspace(0, np.pi, 13)
    f = soft.far_field(k, a, [1.0, 1.0, 0.0], angle_directions([1.0, 1.0, 0.0], gamma))
    assert np.allclose(f, -a, rtol=0, atol=3 * ka * a)


def test_impedance_limits_are_rigid_and_pressure_release():
    k, d = 3.1, np.array([0.0, 0.6, 0.8])
    xhat = angle_directions(d, np.linspace(0, np.pi, 19))
    rigid = rs.far_field(k, A, d, xhat, center=C)
    assert np.allclose(imp.far_field(k, A, d, xhat, center=C, admittance=[0.0, 0.0]), rigid,
                       rtol=1e-13, atol=1e-15)
    small = imp.far_field(k, A, d, xhat, center=C, admittance=1e-6 * (1 + 1j))
    assert 0 < np.max(np.abs(small - rigid)) < 1e-4 * np.max(np.abs(rigid))
    softf = soft.far_field(k, A, d, xhat, center=C)
    errors = [np.max(np.abs(imp.far_field(k, A, d, xhat, center=C, admittance=b) - softf))
              for b in (1e3, 1e5)]
    assert errors[1] < 1e-3 * np.max(np.abs(softf)) and errors[1] < 0.05 * errors[0]


H = 1e-5  # difference step / radius: truncation h^2 k^3 |p| below the tolerances up to ka = 40


def _radial_derivative(total, k, a, d, c, n, h):
    p0, p1, p2 = (total(k, a, d, c + (a + j * h) * n, center=c) for j in range(3))
    return p0, (-3 * p0 + 4 * p1 - p2) / (2 * h)


@pytest.mark.parametrize("ka", [0.5, 6.0, 40.0])
def test_pressure_release_boundary_condition(ka):
    """p_tot = 0 on r = a, and dp_tot/dr there equals the Wronskian formula of
    `surface_normal_derivative` (one-sided second-order difference)."""
    a, d, c = 1.5, np.array([0.3, -0.2, 1.0]), np.array([-1.0, 0.5, 2.0])
    k = ka / a
    n = np.random.default_rng(1).normal(size=(50, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    p0, dp_dr = _radial_derivative(soft.total_field, k, a, d / np.linalg.norm(d), c, n, H * a)
    assert np.max(np.abs(p0)) < 1e-11 * max(1.0, ka)
    exact = soft.surface_normal_derivative(k, a, d, c + 3.0 * n, center=c)
    assert np.max(np.abs(dp_dr - exact)) < 1e-6 * k * max(1.0, np.max(np.abs(exact)) / k)


@pytest.mark.parametrize("ka", [0.5, 6.0, 40.0])
@pytest.mark.parametrize("beta", [0.8 + 0.3j, -0.5j])
def test_impedance_boundary_condition(ka, beta):
    """dp_tot/dr = -i k beta p_tot on r = a, and p_tot there equals `surface_pressure`."""
    a, d, c = 1.5, np.array([0.3, -0.2, 1.0]), np.array([-1.0, 0.5, 2.0])
    k = ka / a
    n = np.random.default_rng(2).normal(size=(50, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]

    def total(k, a, d, x, center):
        return imp.total_field(k, a, d, x, center=center, admittance=beta)

    p0, dp_dr = _radial_derivative(total, k, a, d, c, n, H * a)
    assert np.max(np.abs(dp_dr + 1j * k * beta * p0)) < 1e-6 * k * max(1.0, abs(beta))
    surface = imp.surface_pressure(k, a, d, c + 3.0 * n, center=c, admittance=beta)
    assert np.allclose(p0, surface, rtol=0, atol=1e-11 * max(1.0, ka))


@pytest.mark.parametrize("module, params", [
    (soft, {}), (imp, {"admittance": 0.6 + 0.9j}),
    (fluid, {"density_ratio": 1.5, "sound_speed_ratio": 1.2})])
def test_near_field_tends_to_far_field(module, params):
    k, a, d, c = 3.0, 1.0, [0.0, 0.0, 1.0], np.array([0.5, -0.3, 0.2])
    xhat = angle_directions([0.2, 0.1, 1.0], np.linspace(0, np.pi, 7))
    f = module.far_field(k, a, d, xhat, center=c, **params)
    r = 1e4
    p = module.scattered_field(k, a, d, r * xhat, center=c, **params)
    assert np.max(np.abs(r * np.exp(-1j * k * r) * p - f)) < 1e-3 * np.max(np.abs(f))


def test_monostatic_matches_bistatic():
    k, a, c = 7.0, 0.6, np.array([0.2, -0.4, 1.0])
    dirs = angle_directions([1.0, 0.0, 0.0], np.linspace(0, 2 * np.pi, 11))
    for module, params in ((soft, {}), (imp, {"admittance": [0.3, -0.2]})):
        expected = [module.far_field(k, a, d, [-d], center=c, **params)[0] for d in dirs]
        assert np.allclose(module.monostatic_far_field(k, a, dirs, center=c, **params), expected,
                           rtol=1e-13)


def test_sphere_series_of_each_boundary_and_errors():
    k, d, x = 2.0, [0.0, 0.0, 1.0], [[1.0, 0.0, 0.0]]

    def series(block):
        return sphere_series(boundary_from(block))

    assert series(None).far_field(k, 1.0, d, x) == rs.far_field(k, 1.0, d, x)
    assert (series({"kind": "pressure_release"}).far_field(k, 1.0, d, x)
            == soft.far_field(k, 1.0, d, x))
    beta = series({"kind": "impedance", "admittance": [1.0, 0.5]})
    assert beta.far_field(k, 1.0, d, x) == imp.far_field(k, 1.0, d, x, admittance=1 + 0.5j)
    with pytest.raises(InputError, match="^kind = 'foam': must be one of"):
        boundary_from({"kind": "foam"})
    with pytest.raises(InputError, match="^density_ratio / density"):
        boundary_from({"kind": "fluid", "sound_speed_ratio": 1.1})
    with pytest.raises(InputError, match="admittance = 'x'"):
        imp.far_field(k, 1.0, d, x, admittance="x")
