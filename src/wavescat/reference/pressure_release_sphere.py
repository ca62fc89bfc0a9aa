"""Exact scattering of a plane wave by a pressure-release (sound-soft) sphere, p_tot = 0 on
|x - c| = a: the partial-wave series.

Conventions and series as in rigid_sphere.py, with the sound-soft reflection coefficient
c_l = j_l(ka) / h_l(ka):
    p_scat = -e^{ik d.c} sum_l (2l+1) i^l c_l h_l(kr) P_l(cos gamma)
    F      = (i/k) e^{ik (d - xhat).c} sum_l (2l+1) c_l P_l(cos gamma)
    dp_tot/dn (r = a) = e^{ik d.c} (-i/(k a^2)) sum_l (2l+1) i^l P_l(cos gamma) / h_l(ka)
The last line (the Neumann trace a BEM for this body solves for) follows from the Wronskian
j_l h_l' - j_l' h_l = i/x^2 and is evaluated independently of the other series. For ka -> 0
only l = 0 survives: F -> -a, a monopole (the body cancels the pressure on its surface).
"""
from __future__ import annotations

import numpy as np
from scipy.special import spherical_jn, spherical_yn

from . import rigid_sphere as _series


def _soft_coefficients(l, ka):
    """c_l = j_l(ka) / h_l(ka), the sound-soft reflection coefficient of order l."""
    j = spherical_jn(l, ka)
    return _series.hankel_ratio(j, j, spherical_yn(l, ka))


def far_field(k, radius, incident_direction, directions, center=(0.0, 0.0, 0.0),
              tol: float = 1e-15) -> np.ndarray:
    """Far-field amplitude F(xhat) in metres of the pressure-release sphere, (n,) complex;
    arguments and conventions as rigid_sphere.far_field."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    xhat = _series._validate.unit_vectors("directions", directions)
    return _series.series_far_field(_soft_coefficients, k, a, d, xhat, c, tol)


def monostatic_far_field(k, radius, incident_directions, center=(0.0, 0.0, 0.0),
                         tol: float = 1e-15) -> np.ndarray:
    """Backscatter F(-d) for each incident direction d of (n, 3), (n,) complex."""
    return _series.series_monostatic(far_field, k, radius, incident_directions, center, tol)


def scattered_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                    tol: float = 1e-15) -> np.ndarray:
    """Scattered pressure at points (n, 3) on or outside the sphere, (n,) complex."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    return _series.series_scattered_field(_soft_coefficients, k, a, d, points, c, tol)


def total_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                tol: float = 1e-15) -> np.ndarray:
    """Total pressure p_inc + p_scat at points (n, 3) on or outside the sphere, (n,) complex."""
    return (_series.incident_field(k, incident_direction, points)
            + scattered_field(k, radius, incident_direction, points, center, tol))


def surface_normal_derivative(k, radius, incident_direction, points_on_surface,
                              center=(0.0, 0.0, 0.0), tol: float = 1e-15) -> np.ndarray:
    """dp_tot/dn on the sphere (n outward), (n,) complex: the Neumann trace a BEM solves for.
    Points are projected radially onto the sphere, as in rigid_sphere.surface_pressure."""
    k, a, d, c = _series._arguments(k, radius, incident_direction, center)
    return _series.series_surface_trace(
        -1j / (k * a * a), lambda l, ka: _series.hankel_ratio(1.0, spherical_jn(l, ka),
                                                              spherical_yn(l, ka)),
        k, a, d, points_on_surface, c, tol)
