"""Absorption as a complex sound-speed ratio: the dB-per-wavelength conversion, its checks,
and the fluid series with complex h (absorbing bodies: extinction > scattering, the
transmission conditions still hold, `boundary.absorption_db_per_wavelength` reaches it)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from wavescat.bem.formulations import boundary_from
from wavescat.errors import InputError
from wavescat.reference import fluid_sphere as fluid
from wavescat.reference.absorption import complex_sound_speed_ratio, loss_factor
from wavescat.reference.sphere import sphere_series

_spec = importlib.util.spec_from_file_location(
    "rigid_sphere_tests", Path(__file__).with_name("test_rigid_sphere.py"))
_rigid_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rigid_tests)
sphere_quadrature = _rigid_tests.sphere_quadrature


def test_db_per_wavelength():
    """k_1 = k / h_c loses alpha dB of amplitude per wavelength; Q = 1 / (2 delta) = 27.29 /
    alpha (alpha 1.364 gives Q = 20); alpha = 0 leaves h."""
    for alpha in (0.1, 1.364, 10.0):
        h = complex_sound_speed_ratio(0.25, alpha)
        assert h.imag < 0 and abs(h * (1 + 1j * loss_factor(alpha)) - 0.25) < 1e-15
        k1 = 3.0 / h
        wavelength = 2 * np.pi / k1.real
        assert 20 * np.log10(np.exp(k1.imag * wavelength)) == pytest.approx(alpha, rel=1e-12)
    assert 1 / (2 * loss_factor(1.364)) == pytest.approx(20.0, rel=1e-3)
    assert 27.29 / 2.0 == pytest.approx(1 / (2 * loss_factor(2.0)), rel=1e-3)
    assert complex_sound_speed_ratio(1.2, 0.0) == 1.2


@pytest.mark.parametrize("alpha", [-0.1, float("nan"), float("inf"), "x", None])
def test_bad_absorption(alpha):
    with pytest.raises(InputError, match=r"absorption_db_per_wavelength = .*: must be a real "
                                          r"number >= 0"):
        complex_sound_speed_ratio(1.0, alpha)


def test_bad_sound_speed_ratios():
    with pytest.raises(InputError, match=r"sound_speed_ratio = -1.0: must be a real number > 0"):
        complex_sound_speed_ratio(-1.0, 1.0)
    with pytest.raises(InputError, match=r"sound_speed_ratio = \(1\+0.1j\): .* imaginary part "
                                          r"<= 0"):  # a gain, not a loss
        fluid.far_field(1.0, 1.0, [0, 0, 1.0], [[1.0, 0, 0]], sound_speed_ratio=1 + 0.1j)
    with pytest.raises(InputError, match=r"sound_speed_ratio = \(-1\+0j\)"):
        fluid.far_field(1.0, 1.0, [0, 0, 1.0], [[1.0, 0, 0]], sound_speed_ratio=-1 + 0j)


@pytest.mark.parametrize("g, h0", [(0.0012, 0.23), (1.04, 1.03), (3.0, 0.6)],
                         ids=["gas", "weak", "dense_slow"])
def test_lossy_fluid_sphere(g, h0):
    """Extinction exceeds scattering by more the more the body absorbs (and equals it without
    loss); p and (1/rho) dp/dn stay continuous across the surface with complex k_1."""
    a, ka = 1.0, 4.0
    k, d = ka / a, np.array([0.0, 0.6, 0.8])
    order = int(ka / min(1.0, h0) + 4 * np.cbrt(ka) + 25)
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    gaps = []
    for alpha in (0.0, 0.3, 3.0):
        h = complex_sound_speed_ratio(h0, alpha)
        sigma = np.sum(w * np.abs(fluid.far_field(k, a, d, dirs, density_ratio=g,
                                                  sound_speed_ratio=h)) ** 2)
        ext = 4 * np.pi / k * fluid.far_field(k, a, d, [d], density_ratio=g,
                                              sound_speed_ratio=h)[0].imag
        gaps.append((ext - sigma) / ext)
    assert abs(gaps[0]) < 1e-9 and 0 < gaps[1] < gaps[2] < 1
    h = complex_sound_speed_ratio(h0, 2.0)
    n = np.random.default_rng(5).normal(size=(12, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    step = 1e-5 * a
    params = {"density_ratio": g, "sound_speed_ratio": h}

    def side(field, sign):
        p = [field(k, a, d, (a + sign * j * step) * n, **params) for j in range(3)]
        return p[0], sign * (-3 * p[0] + 4 * p[1] - p[2]) / (2 * step)

    p_out, dp_out = side(fluid.total_field, 1)
    p_in, dp_in = side(fluid.interior_field, -1)
    scale = max(1.0, np.max(np.abs(p_out)))
    assert np.max(np.abs(p_out - p_in)) < 1e-10 * scale * ka
    assert np.max(np.abs(dp_out - dp_in / g)) < 1e-6 * scale * abs(k / h) ** 3 * a**2


def test_boundary_block_absorption():
    """`absorption_db_per_wavelength` in a fluid boundary block makes its formulation's
    sphere series absorb; a bad value names the key."""
    boundary = {"kind": "fluid", "density_ratio": 1.5, "sound_speed_ratio": 1.2,
                "absorption_db_per_wavelength": 2.0}
    k, d, x = 2.0, [0.0, 0.0, 1.0], [[1.0, 0.0, 0.0]]
    expected = fluid.far_field(k, 1.0, d, x, density_ratio=1.5,
                               sound_speed_ratio=complex_sound_speed_ratio(1.2, 2.0))
    series = sphere_series(boundary_from(boundary))
    assert series.far_field(k, 1.0, d, x) == expected
    lossless = fluid.far_field(k, 1.0, d, x, density_ratio=1.5, sound_speed_ratio=1.2)
    assert abs(expected - lossless) > 1e-3 * abs(lossless)
    with pytest.raises(InputError, match=r"^absorption_db_per_wavelength = -1"):
        boundary_from({**boundary, "absorption_db_per_wavelength": -1})
