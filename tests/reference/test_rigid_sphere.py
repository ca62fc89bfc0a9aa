"""The rigid-sphere series against physics it must obey: optical theorem, Rayleigh and
high-frequency limits, near field -> far field, the sound-hard boundary condition, symmetry."""
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from wavescat.errors import InputError, WavescatError
from wavescat.reference import rigid_sphere as rs


def sphere_quadrature(n_theta, n_phi):
    """Gauss-Legendre in cos(theta) x trapezoid in phi: exact for polynomials of degree
    < min(2 n_theta, n_phi) on the unit sphere. Returns directions (n, 3) and weights."""
    t, w = np.polynomial.legendre.leggauss(n_theta)
    phi = 2 * np.pi * np.arange(n_phi) / n_phi
    t, phi = np.meshgrid(t, phi, indexing="ij")
    s = np.sqrt(1 - t**2)
    dirs = np.stack([s * np.cos(phi), s * np.sin(phi), t], axis=-1).reshape(-1, 3)
    weights = np.repeat(w, n_phi) * (2 * np.pi / n_phi)
    return dirs, weights


def angle_directions(d, theta):
    """Unit vectors at angles theta from d, in a plane containing d."""
    d = np.asarray(d, float) / np.linalg.norm(d)
    e = np.cross(d, [0.3, -0.5, 0.8])
    e /= np.linalg.norm(e)
    return np.cos(theta)[:, None] * d + np.sin(theta)[:, None] * e


@pytest.mark.parametrize("ka", [0.3, 2.0, 25.0, 150.0])
def test_optical_theorem(ka):
    """sigma = int |F|^2 dOmega = (4 pi / k) Im F(d) (no absorption in a rigid body)."""
    a, d, c = 1.3, np.array([1.0, -2.0, 0.5]), np.array([0.4, 0.1, -0.7])
    k = ka / a
    order = int(ka + 4 * np.cbrt(ka) + 25)  # |F|^2 is a polynomial of degree 2*order
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    sigma = np.sum(w * np.abs(rs.far_field(k, a, d, dirs, center=c)) ** 2)
    forward = rs.far_field(k, a, d, [d], center=c)[0]
    assert sigma == pytest.approx(4 * np.pi / k * forward.imag, rel=1e-10)


@pytest.mark.parametrize("k, a", [(200.0, 1.0), (50.0, 4.0)])
def test_high_frequency_backscatter(k, a):
    """Geometric optics: |F(-d)| -> a/2, TS -> 20 log10(a/2)."""
    d = np.array([0.0, 0.6, 0.8])
    f = rs.far_field(k, a, d, [-d], center=[1.0, 2.0, 3.0])[0]
    assert abs(20 * np.log10(abs(f)) - 20 * np.log10(a / 2)) < 0.1


def test_rayleigh_limit():
    """ka << 1: F = -(k^2 a^3 / 3) (1 - (3/2) cos(gamma)), gamma the angle from d
    (monopole from the excluded compressibility, dipole from the immovable mass)."""
    a, ka = 2.0, 1e-3
    k = ka / a
    d = np.array([1.0, 1.0, 0.0])
    gamma = np.linspace(0, np.pi, 13)
    f = rs.far_field(k, a, d, angle_directions(d, gamma))
    rayleigh = -(k**2 * a**3 / 3) * (1 - 1.5 * np.cos(gamma))
    assert np.allclose(f, rayleigh, rtol=0, atol=1e-5 * k**2 * a**3)
    assert f[-1].real < 0  # backscatter is in antiphase with the incident wave


def test_near_field_tends_to_far_field():
    """r e^{-ikr} p_scat(r xhat) = F(xhat) + O(1/r), also for a displaced sphere."""
    k, a, d, c = 3.0, 1.0, [0.0, 0.0, 1.0], np.array([0.5, -0.3, 0.2])
    xhat = angle_directions([0.2, 0.1, 1.0], np.linspace(0, np.pi, 7))
    f = rs.far_field(k, a, d, xhat, center=c)
    errors = []
    for r in (1e3, 1e4):
        p = rs.scattered_field(k, a, d, r * xhat, center=c)
        errors.append(np.max(np.abs(r * np.exp(-1j * k * r) * p - f)))
    assert errors[1] < 1e-3 * np.max(np.abs(f))
    assert 7 < errors[0] / errors[1] < 13  # first order in 1/r


@pytest.mark.parametrize("ka", [0.5, 6.0, 40.0])
def test_sound_hard_boundary_condition(ka):
    """dp_tot/dr = 0 on r = a (one-sided second-order difference), and the total field on
    the surface equals the independent Wronskian formula of `surface_pressure`."""
    a, d, c = 1.5, np.array([0.3, -0.2, 1.0]), np.array([-1.0, 0.5, 2.0])
    k = ka / a
    rng = np.random.default_rng(1)
    n = rng.normal(size=(50, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    h = 1e-4 * a
    p0, p1, p2 = (rs.total_field(k, a, d, c + (a + j * h) * n, center=c) for j in range(3))
    dp_dr = (-3 * p0 + 4 * p1 - p2) / (2 * h)
    assert np.max(np.abs(dp_dr)) < 1e-6 * k
    surface = rs.surface_pressure(k, a, d, c + 3.0 * n, center=c)  # projected onto r = a
    assert np.allclose(p0, surface, rtol=0, atol=1e-11 * max(1.0, ka))


def test_surface_pressure_matches_total_field_at_high_frequency():
    """Two independent series for the surface trace agree at ka = 150 (order ~ 200)."""
    k, a, d = 100.0, 1.5, np.array([1.0, 1.0, 1.0])
    n = angle_directions(d, np.linspace(0, np.pi, 40))
    assert np.allclose(rs.total_field(k, a, d, a * n), rs.surface_pressure(k, a, d, n),
                       rtol=0, atol=1e-10)


def test_monostatic_matches_bistatic():
    k, a, c = 7.0, 0.6, np.array([0.2, -0.4, 1.0])
    dirs = angle_directions([1.0, 0.0, 0.0], np.linspace(0, 2 * np.pi, 11))
    expected = [rs.far_field(k, a, d, [-d], center=c)[0] for d in dirs]
    assert np.allclose(rs.monostatic_far_field(k, a, dirs, center=c), expected, rtol=1e-13)


def test_rotation_invariance():
    """Rotating d, xhat and the centre together leaves F and p_scat unchanged."""
    k, a = 4.0, 0.8
    d, c = np.array([0.0, 0.0, 1.0]), np.array([0.3, 0.2, -0.1])
    rng = np.random.default_rng(7)
    xhat = rng.normal(size=(20, 3))
    pts = c + 2.0 * a * xhat / np.linalg.norm(xhat, axis=1)[:, None]
    rot = Rotation.from_rotvec([0.4, -1.1, 0.7]).as_matrix()
    assert np.allclose(rs.far_field(k, a, rot @ d, xhat @ rot.T, center=rot @ c),
                       rs.far_field(k, a, d, xhat, center=c), rtol=1e-12, atol=1e-14)
    assert np.allclose(rs.scattered_field(k, a, rot @ d, pts @ rot.T, center=rot @ c),
                       rs.scattered_field(k, a, d, pts, center=c), rtol=1e-12, atol=1e-14)


def test_centre_shift_is_a_phase():
    """A displaced sphere: F_c(xhat) = exp(ik (d - xhat).c) F_0(xhat)."""
    k, a, d, c = 2.5, 1.0, np.array([1.0, 0.0, 0.0]), np.array([0.0, 3.0, -1.0])
    xhat = angle_directions([0.0, 1.0, 1.0], np.linspace(0, np.pi, 9))
    dn = d / np.linalg.norm(d)
    assert np.allclose(rs.far_field(k, a, d, xhat, center=c),
                       np.exp(1j * k * ((dn - xhat) @ c)) * rs.far_field(k, a, d, xhat),
                       rtol=1e-12)


def test_bad_arguments_name_the_parameter():
    with pytest.raises(InputError, match="k = -1"):
        rs.far_field(-1.0, 1.0, [0, 0, 1], [[1, 0, 0]])
    with pytest.raises(InputError, match="radius = 0"):
        rs.far_field(1.0, 0.0, [0, 0, 1], [[1, 0, 0]])
    with pytest.raises(InputError, match="incident_direction"):
        rs.far_field(1.0, 1.0, [0, 0, 0], [[1, 0, 0]])
    with pytest.raises(WavescatError, match=r"points\[1\].*inside the sphere"):
        rs.scattered_field(1.0, 1.0, [0, 0, 1], [[2, 0, 0], [0.5, 0, 0]])
