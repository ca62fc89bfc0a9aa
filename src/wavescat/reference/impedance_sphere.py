"""Exact scattering of a plane wave by an impedance sphere, dp_tot/dn = -i k beta p_tot on
|x - c| = a (n outward, beta the normalised admittance; Re beta > 0 absorbs): the
partial-wave series.

Conventions and series as in rigid_sphere.py, with the reflection coefficient
    c_l = (j_l'(ka) + i beta j_l(ka)) / (h_l'(ka) + i beta h_l(ka)),
which is the rigid one for beta = 0 and tends to the pressure-release one j_l / h_l as
|beta| -> infinity. By the Wronskian j_l h_l' - j_l' h_l = i/x^2 the surface pressure is
    p_tot(r = a) = e^{ik d.c} (i/(ka)^2) sum_l (2l+1) i^l P_l(cos gamma) / (h_l' + i beta h_l),
evaluated independently of the other series. The power the surface absorbs, per unit
incident intensity, is sigma_a = Re(beta) int |p_tot|^2 dS >= 0, and the optical theorem
reads (4 pi / k) Im F(d) = sigma_s + sigma_a.
"""
from __future__ import annotations

import numpy as np
from scipy.special import spherical_jn, spherical_yn

from ..errors import InputError
from . import rigid_sphere as _series


def admittance_value(admittance) -> complex:
    """beta from a complex number or a config pair [re, im]; finite."""
    try:
        beta = complex(*admittance) if isinstance(admittance, (list, tuple)) else complex(admittance)
    except (TypeError, ValueError):
        raise InputError(f"admittance = {admittance!r}: must be [re, im] or a complex "
                          "number") from None
    if not np.isfinite(beta):
        raise InputError(f"admittance = {admittance!r}: must be finite")
    return beta


def _impedance_coefficients(beta):
    def coefficients(l, ka):
        j, jp = spherical_jn(l, ka), spherical_jn(l, ka, True)
        with np.errstate(all="ignore"):
            y_part = spherical_yn(l, ka, True) + 1j * beta * spherical_yn(l, ka)
        return _series.hankel_ratio(jp + 1j * beta * j, jp + 1j * beta * j, y_part)

    return coefficients


def far_field(k, radius, incident_direction, directions, center=(0.0, 0.0, 0.0),
              tol: float = 1e-15, admittance=0.0) -> np.ndarray:
    """Far-field amplitude F(xhat) in metres of the impedance sphere, (n,) complex;
    arguments and conventions as rigid_sphere.far_field, `admittance` beta."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    xhat = _series._validate.unit_vectors("directions", directions)
    return _series.series_far_field(_impedance_coefficients(admittance_value(admittance)),
                                    k, a, d, xhat, c, tol)


def monostatic_far_field(k, radius, incident_directions, center=(0.0, 0.0, 0.0),
                         tol: float = 1e-15, admittance=0.0) -> np.ndarray:
    """Backscatter F(-d) for each incident direction d of (n, 3), (n,) complex."""
    return _series.series_monostatic(far_field, k, radius, incident_directions, center, tol,
                                     admittance=admittance)


def scattered_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                    tol: float = 1e-15, admittance=0.0) -> np.ndarray:
    """Scattered pressure at points (n, 3) on or outside the sphere, (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    return _series.series_scattered_field(_impedance_coefficients(admittance_value(admittance)),
                                          k, a, d, points, c, tol)


def total_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                tol: float = 1e-15, admittance=0.0) -> np.ndarray:
    """Total pressure p_inc + p_scat at points (n, 3) on or outside the sphere, (n,) complex."""
    return (_series.incident_field(k, incident_direction, points)
            + scattered_field(k, radius, incident_direction, points, center, tol, admittance))


def surface_pressure(k, radius, incident_direction, points_on_surface, center=(0.0, 0.0, 0.0),
                     tol: float = 1e-15, admittance=0.0) -> np.ndarray:
    """Total pressure on the sphere (points projected radially onto it), (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    beta = admittance_value(admittance)

    def weights(l, ka):
        with np.errstate(all="ignore"):
            y_part = spherical_yn(l, ka, True) + 1j * beta * spherical_yn(l, ka)
        return _series.hankel_ratio(1.0, spherical_jn(l, ka, True) + 1j * beta * spherical_jn(
            l, ka), y_part)

    return _series.series_surface_trace(1j / (k * a) ** 2, weights, k, a, d, points_on_surface,
                                        c, tol)
