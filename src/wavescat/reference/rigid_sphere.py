"""Exact scattering of a plane wave by a sound-hard (rigid) sphere: the partial-wave series.

Conventions (docs/conventions.md): time dependence exp(-i w t); incident wave
p_inc(x) = exp(i k d.x) with unit amplitude and d the direction of travel;
dp_tot/dn = 0 on the sphere |x - c| = a; p_scat(r xhat) = F(xhat) exp(i k r)/r + O(1/r^2).

With gamma the angle between d and (x - c), and c_l = j_l'(ka) / h_l'(ka)
(h_l = h_l^(1) = j_l + i y_l, the outgoing spherical Hankel function):
    p_inc  = e^{ik d.c} sum_l (2l+1) i^l j_l(kr) P_l(cos gamma)
    p_scat = -e^{ik d.c} sum_l (2l+1) i^l c_l h_l(kr) P_l(cos gamma)
    F      = (i/k) e^{ik (d - xhat).c} sum_l (2l+1) c_l P_l(cos gamma)
    p_tot(r = a) = e^{ik d.c} (i/(ka)^2) sum_l (2l+1) i^l P_l(cos gamma) / h_l'(ka)
The last line follows from the Wronskian j_l h_l' - j_l' h_l = i/x^2; it is evaluated
independently of the other series, which the tests use as a cross-check.

Truncation is adaptive: the order starts at ka + 4 (ka)^(1/3) + 10 and grows until the last
terms fall below `tol` times the largest term (beyond l ~ ka the terms decay faster than
geometrically, so a few extra orders gain many digits).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.polynomial import legendre
from scipy.special import spherical_jn, spherical_yn

from ..errors import SolverError, WavescatError
from . import _validate

_CHUNK = 4096  # points per block of the near-field series: bounds memory at (order x chunk)


def _hankel(l, x, derivative=False):
    """Outgoing spherical Hankel function h_l^(1)(x) (or its derivative); y_l may overflow to
    -inf at orders far above x, which callers treat as a negligible term."""
    with np.errstate(all="ignore"):
        return spherical_jn(l, x, derivative) + 1j * spherical_yn(l, x, derivative)


def _hankel_orders(order, x):
    """h_l^(1)(x) for l = 0..order at many arguments x >= ka, shape (order + 1, n).

    Upward recurrence h_{l+1} = (2l+1)/x h_l - h_{l-1}: stable for h_l as a whole since y_l
    grows with l (much cheaper than per-entry evaluation); overflow gives inf, treated as 0.
    """
    h = np.empty((order + 1, len(x)), dtype=np.complex128)
    e = np.exp(1j * x)
    h[0] = -1j * e / x
    if order >= 1:
        h[1] = -e * (x + 1j) / x**2
    with np.errstate(all="ignore"):
        for l in range(1, order):
            h[l + 1] = (2 * l + 1) / x * h[l] - h[l - 1]
    return h


def _scaled_by_hankel_derivative(numerator, l, ka):
    """numerator / h_l'(ka), kept finite (-> 0) where y_l'(ka) overflows at high order."""
    return hankel_ratio(numerator, spherical_jn(l, ka, True), spherical_yn(l, ka, True))


def hankel_ratio(numerator, j_part, y_part):
    """numerator / (j_part + i y_part), kept finite (-> 0) where y_part overflows at high
    order: divide through by y_part where it dominates, 1/h = (1/y) / (j/y + i)."""
    with np.errstate(all="ignore"):
        scaled = (numerator / y_part) / (j_part / y_part + 1j)
        direct = numerator / (j_part + 1j * y_part)
    return np.where(np.abs(y_part) >= np.abs(j_part), scaled, direct)


def _hard_coefficients(l, ka):
    """c_l = j_l'(ka) / h_l'(ka), the sound-hard reflection coefficient of order l."""
    return _scaled_by_hankel_derivative(spherical_jn(l, ka, True), l, ka)


def truncation_order(ka: float, term_size: Callable[[np.ndarray], np.ndarray],
                     tol: float = 1e-15) -> int:
    """Smallest series order L whose neglected terms are below `tol` x the largest term.

    `term_size(l)` returns the magnitude of term l (an upper bound over the evaluation
    points). Starts at ka + 4 (ka)^(1/3) + 10 and grows until the last terms are negligible.
    """
    step = int(np.ceil(4.0 * np.cbrt(ka) + 10.0))  # the width of the transition zone l ~ ka
    order = int(np.ceil(ka)) + step
    cap = int(np.ceil(ka)) + 20 * step
    while True:
        size = np.asarray(term_size(np.arange(order + 1)), dtype=np.float64)
        size = np.where(np.isfinite(size), size, 0.0)  # overflowed y_l: the term is ~0
        largest = size.max()
        if largest == 0.0 or size[-3:].max() <= tol * largest:
            above = np.flatnonzero(size > tol * largest)
            return min(order, int(above[-1]) + 2) if above.size else 0
        if order >= cap:
            raise SolverError(
                f"sphere series did not converge to tol = {tol} by order {order} (ka = {ka})")
        order = min(cap, order + step)


def _arguments(k, radius, incident_direction, center):
    return (_validate.positive("k", k), _validate.positive("radius", radius),
            _validate.unit_vector("incident_direction", incident_direction),
            _validate.vector3("center", center))


def _outside_points(points, center, a):
    """Offsets x - c and distances r for points that must lie on or outside the sphere."""
    offset = _validate.points3("points", points) - center
    r = np.linalg.norm(offset, axis=1)
    inside = np.flatnonzero(r < a * (1.0 - 1e-9))
    if inside.size:
        i = inside[0]
        raise WavescatError(
            f"points[{i}] = {(offset[i] + center).tolist()} lies inside the sphere "
            f"(distance {r[i]:.6g} from the centre < radius {a:.6g}); the series holds for r >= a")
    return offset, r


def series_far_field(coefficients, k, a, d, xhat, c, tol):
    """F(xhat) = (i/k) e^{ik (d - xhat).c} sum_l (2l+1) c_l P_l(cos gamma) for the reflection
    coefficients `coefficients(l, ka)` of a boundary condition (checked arguments)."""
    ka = k * a
    order = truncation_order(ka, lambda l: (2 * l + 1) * np.abs(coefficients(l, ka)), tol)
    l = np.arange(order + 1)
    coeff = (2 * l + 1) * coefficients(l, ka)
    coeff[~np.isfinite(coeff)] = 0.0
    cos_gamma = np.clip(xhat @ d, -1.0, 1.0)
    phase = np.exp(1j * k * ((d - xhat) @ c))
    return (1j / k) * phase * legendre.legval(cos_gamma, coeff)


def series_scattered_field(coefficients, k, a, d, points, c, tol):
    """p_scat = -e^{ik d.c} sum_l (2l+1) i^l c_l h_l(kr) P_l(cos gamma) at points on or
    outside the sphere, for the reflection coefficients `coefficients(l, ka)`."""
    offset, r = _outside_points(points, c, a)
    ka = k * a
    kr_min = k * r.min()
    order = truncation_order(
        ka, lambda l: (2 * l + 1) * np.abs(coefficients(l, ka) * _hankel(l, kr_min)), tol)
    l = np.arange(order + 1)
    base = -(2 * l + 1) * (1j ** l) * coefficients(l, ka)
    cos_gamma = np.clip((offset @ d) / r, -1.0, 1.0)
    out = np.empty(len(r), dtype=np.complex128)
    for start in range(0, len(r), _CHUNK):
        block = slice(start, start + _CHUNK)
        with np.errstate(all="ignore"):
            coeff = base[:, None] * _hankel_orders(order, k * r[block])
        coeff[~np.isfinite(coeff)] = 0.0  # tiny c_l times overflowed h_l(kr) at high order
        out[block] = legendre.legval(cos_gamma[block], coeff, tensor=False)
    return np.exp(1j * k * (d @ c)) * out


def series_surface_trace(scale, weights, k, a, d, points_on_surface, c, tol):
    """scale e^{ik d.c} sum_l (2l+1) i^l w_l P_l(cos gamma) at the directions of
    `points_on_surface` from the centre (a surface trace from a Wronskian formula)."""
    xhat = _validate.unit_vectors("points_on_surface", _validate.points3(
        "points_on_surface", points_on_surface) - c)
    ka = k * a
    order = truncation_order(ka, lambda l: (2 * l + 1) * np.abs(weights(l, ka)), tol)
    l = np.arange(order + 1)
    coeff = (2 * l + 1) * (1j ** l) * weights(l, ka)
    coeff[~np.isfinite(coeff)] = 0.0
    cos_gamma = np.clip(xhat @ d, -1.0, 1.0)
    return np.exp(1j * k * (d @ c)) * scale * legendre.legval(cos_gamma, coeff)


def far_field(k, radius, incident_direction, directions, center=(0.0, 0.0, 0.0),
              tol: float = 1e-15) -> np.ndarray:
    """Far-field amplitude F(xhat) in metres of the rigid sphere, shape (n,) complex.

    k: wavenumber (rad/m, > 0); radius: a (m); incident_direction: d (normalised here);
    directions: (n, 3) observation directions xhat (normalised here); center: c (m).
    p_scat(r xhat) = F(xhat) e^{ikr}/r + O(1/r^2) for a unit-amplitude incident wave
    exp(i k d.x), time dependence exp(-i w t). Monostatic (backscatter) is xhat = -d;
    TS = 20 log10|F|. The centre enters only through the phase exp(i k (d - xhat).c).
    """
    k, a, d, c = _arguments(k, radius, incident_direction, center)
    xhat = _validate.unit_vectors("directions", directions)
    return series_far_field(_hard_coefficients, k, a, d, xhat, c, tol)


def monostatic_far_field(k, radius, incident_directions, center=(0.0, 0.0, 0.0),
                         tol: float = 1e-15) -> np.ndarray:
    """Backscatter F(-d) for each incident direction d of (n, 3) (normalised here), (n,) complex.

    Same conventions as `far_field`; on a sphere only the phase exp(2ik d.c) depends on d.
    """
    return series_monostatic(far_field, k, radius, incident_directions, center, tol)


def series_monostatic(far_field_of, k, radius, incident_directions, center, tol, **params):
    """Backscatter of a sphere from its `far_field_of(k, a, d, xhat, center, tol, **params)`:
    F(-d) = F_0(-z; z) exp(2ik d.c)."""
    k, a, _, c = _arguments(k, radius, (0.0, 0.0, 1.0), center)
    d = _validate.unit_vectors("incident_directions", incident_directions)
    f0 = far_field_of(k, a, (0.0, 0.0, 1.0), [(0.0, 0.0, -1.0)], tol=tol, **params)[0]
    return f0 * np.exp(2j * k * (d @ c))


def incident_field(k, incident_direction, points) -> np.ndarray:
    """The unit plane wave exp(i k d.x) at points (n, 3), shape (n,) complex."""
    k = _validate.positive("k", k)
    d = _validate.unit_vector("incident_direction", incident_direction)
    return np.exp(1j * k * (_validate.points3("points", points) @ d))


def scattered_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                    tol: float = 1e-15) -> np.ndarray:
    """Scattered pressure p_scat at points (n, 3) on or outside the sphere, shape (n,) complex.

    Same conventions as `far_field`: unit incident wave exp(i k d.x), exp(-i w t),
    p_scat ~ F e^{ikr}/r. Raises WavescatError for a point inside the sphere.
    """
    k, a, d, c = _arguments(k, radius, incident_direction, center)
    return series_scattered_field(_hard_coefficients, k, a, d, points, c, tol)


def total_field(k, radius, incident_direction, points, center=(0.0, 0.0, 0.0),
                tol: float = 1e-15) -> np.ndarray:
    """Total pressure p_inc + p_scat at points (n, 3) on or outside the sphere, (n,) complex."""
    return (incident_field(k, incident_direction, points)
            + scattered_field(k, radius, incident_direction, points, center, tol))


def surface_pressure(k, radius, incident_direction, points_on_surface, center=(0.0, 0.0, 0.0),
                     tol: float = 1e-15) -> np.ndarray:
    """Total pressure on the sphere surface, (n,) complex: the Dirichlet trace a BEM solves for.

    Points are projected radially onto |x - c| = a (only their direction from the centre
    matters), so mesh vertices of a polyhedral sphere can be passed as they are.
    Uses p_tot(a) = e^{ik d.c} (i/(ka)^2) sum (2l+1) i^l P_l(cos gamma) / h_l'(ka).
    """
    k, a, d, c = _arguments(k, radius, incident_direction, center)
    return series_surface_trace(1j / (k * a) ** 2, lambda l, ka: _scaled_by_hankel_derivative(
        1.0, l, ka), k, a, d, points_on_surface, c, tol)
