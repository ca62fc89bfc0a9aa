"""Exact scattering of a plane wave by a homogeneous fluid sphere (Anderson 1950): the
partial-wave series.

The body |x - c| < a has density rho_1 = g rho and sound speed c_1 = h c (g = density
ratio, h = sound-speed ratio to the medium), so inside k_1 = k / h. Across the surface the
pressure and the normal particle velocity, (1/rho) dp/dn, are continuous. Conventions and
exterior series as in rigid_sphere.py; with x = ka, x_1 = k_1 a and j_1 = j_l(x_1),
j_1' = j_l'(x_1), the reflection coefficient is
    c_l = (g h j_1 j_l'(x) - j_l(x) j_1') / (g h j_1 h_l'(x) - h_l(x) j_1'),
the rigid one j_l'/h_l' as g -> infinity and the pressure-release one j_l/h_l as g -> 0.
Inside, p = e^{ik d.c} sum_l (2l+1) i^l b_l j_l(k_1 r) P_l(cos gamma). By the Wronskian
j_l h_l' - j_l' h_l = i/x^2, with D_l = g h j_1 h_l'(x) - h_l(x) j_1',
    p_tot(r = a)     = e^{ik d.c} (i/x^2) sum_l (2l+1) i^l P_l(cos gamma) g h j_1 / D_l,
    dp_tot/dn (r = a) = e^{ik d.c} (i k/x^2) sum_l (2l+1) i^l P_l(cos gamma) j_1' / D_l,
    b_l = (i/x^2) g h / D_l,
each evaluated independently of the far-field series (the tests check them against it).
Without losses (real g, h) the optical theorem reads (4 pi / k) Im F(d) = sigma_s.
An absorbing body has a complex h (Re h > 0, Im h <= 0, so that Im k_1 >= 0 under
exp(-i w t); absorption.complex_sound_speed_ratio makes one from dB per wavelength): every
series here accepts it, and then (4 pi / k) Im F(d) = sigma_s + sigma_a > sigma_s.
A gas bubble (g << 1) has the monopole (Minnaert) resonance near ka = sqrt(3 g) / h.
"""
from __future__ import annotations

import numpy as np
from numpy.polynomial import legendre
from scipy.special import spherical_jn, spherical_yn

from ..errors import InputError
from . import rigid_sphere as _series


def _contrasts(density_ratio, sound_speed_ratio):
    return (_series._validate.positive("density_ratio", density_ratio),
            _series._validate.sound_speed_ratio("sound_speed_ratio", sound_speed_ratio))


def _bessel(l, ka, g, h):
    """j_1, j_1' (inside) and j, j', y, y' (outside) at order(s) l."""
    x1 = ka / h
    with np.errstate(all="ignore"):
        return (spherical_jn(l, x1), spherical_jn(l, x1, True), spherical_jn(l, ka),
                spherical_jn(l, ka, True), spherical_yn(l, ka), spherical_yn(l, ka, True))


def _trace_weights(numerator_of, g, h):
    """w_l = numerator / D_l with D_l = g h j_1 h_l'(x) - h_l(x) j_1' (kept finite)."""
    def weights(l, ka):
        j1, j1p, j, jp, y, yp = _bessel(l, ka, g, h)
        with np.errstate(all="ignore"):
            return _series.hankel_ratio(numerator_of(j1, j1p), g * h * j1 * jp - j * j1p,
                                        g * h * j1 * yp - y * j1p)

    return weights


def _fluid_coefficients(g, h):
    def coefficients(l, ka):
        j1, j1p, j, jp, y, yp = _bessel(l, ka, g, h)
        with np.errstate(all="ignore"):
            numerator = g * h * j1 * jp - j * j1p
            return _series.hankel_ratio(numerator, numerator, g * h * j1 * yp - y * j1p)

    return coefficients


def far_field(k, radius, incident_direction, directions, center=(0.0, 0.0, 0.0),
              tol: float = 1e-15, density_ratio=1.0, sound_speed_ratio=1.0) -> np.ndarray:
    """Far-field amplitude F(xhat) in metres of the fluid sphere, (n,) complex; arguments
    and conventions as rigid_sphere.far_field, contrasts g = `density_ratio`,
    h = `sound_speed_ratio`."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    xhat = _series._validate.unit_vectors("directions", directions)
    return _series.series_far_field(_fluid_coefficients(*_contrasts(density_ratio,
                                                                    sound_speed_ratio)),
                                    k, a, d, xhat, c, tol)


def monostatic_far_field(k, radius, incident_directions, center=(0.0, 0.0, 0.0),
                         tol: float = 1e-15, density_ratio=1.0,
                         sound_speed_ratio=1.0) -> np.ndarray:
    """Backscatter F(-d) for each incident direction d of (n, 3), (n,) complex."""
    return _series.series_monostatic(far_field, k, radius, incident_directions, center, tol,
                                     density_ratio=density_ratio,
                                     sound_speed_ratio=sound_speed_ratio)


def scattered_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                    tol: float = 1e-15, density_ratio=1.0, sound_speed_ratio=1.0) -> np.ndarray:
    """Scattered pressure at points (n, 3) on or outside the sphere, (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    return _series.series_scattered_field(
        _fluid_coefficients(*_contrasts(density_ratio, sound_speed_ratio)), k, a, d, points, c,
        tol)


def total_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                tol: float = 1e-15, density_ratio=1.0, sound_speed_ratio=1.0) -> np.ndarray:
    """Total pressure p_inc + p_scat at points (n, 3) on or outside the sphere, (n,) complex."""
    return (_series.incident_field(k, incident_direction, points)
            + scattered_field(k, radius, incident_direction, points, center, tol,
                              density_ratio, sound_speed_ratio))


def interior_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                   tol: float = 1e-15, density_ratio=1.0, sound_speed_ratio=1.0) -> np.ndarray:
    """Pressure inside the sphere (points with |x - c| <= a), (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    g, h = _contrasts(density_ratio, sound_speed_ratio)
    offset = _series._validate.points3("points", points) - c
    r = np.linalg.norm(offset, axis=1)
    outside = np.flatnonzero(r > a * (1.0 + 1e-9))
    if outside.size:
        raise InputError(f"points[{outside[0]}] lies outside the sphere (distance "
                          f"{r[outside[0]]:.6g} > radius {a:.6g}); the interior series holds "
                          "for r <= a")
    ka = k * a
    b = _trace_weights(lambda j1, j1p: g * h * np.ones_like(j1), g, h)
    order = _series.truncation_order(max(ka, abs(ka / h)), lambda l: (2 * l + 1) * np.abs(
        b(l, ka) * spherical_jn(l, ka / h)), tol)
    l = np.arange(order + 1)
    coeff = (2 * l + 1) * (1j ** l) * (1j / ka**2) * b(l, ka)
    coeff[~np.isfinite(coeff)] = 0.0
    cos_gamma = np.where(r > 0, (offset @ d) / np.where(r > 0, r, 1.0), 1.0)
    radial = spherical_jn(l[:, None], (k / h) * r[None, :])  # (order + 1, n)
    terms = coeff[:, None] * radial
    return np.exp(1j * k * (d @ c)) * legendre.legval(np.clip(cos_gamma, -1.0, 1.0), terms,
                                                      tensor=False)


def surface_pressure(k, radius, incident_direction, points_on_surface, center=(0.0, 0.0, 0.0),
                     tol: float = 1e-15, density_ratio=1.0, sound_speed_ratio=1.0) -> np.ndarray:
    """Total pressure on the sphere (points projected radially onto it), (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    g, h = _contrasts(density_ratio, sound_speed_ratio)
    return _series.series_surface_trace(1j / (k * a) ** 2,
                                        _trace_weights(lambda j1, j1p: g * h * j1, g, h),
                                        k, a, d, points_on_surface, c, tol)


def surface_normal_derivative(k, radius, incident_direction, points_on_surface,
                              center=(0.0, 0.0, 0.0), tol: float = 1e-15, density_ratio=1.0,
                              sound_speed_ratio=1.0) -> np.ndarray:
    """Exterior dp_tot/dn on the sphere (n outward; points projected radially), (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    g, h = _contrasts(density_ratio, sound_speed_ratio)
    return _series.series_surface_trace(1j / (k * a * a),
                                        _trace_weights(lambda j1, j1p: j1p, g, h),
                                        k, a, d, points_on_surface, c, tol)
