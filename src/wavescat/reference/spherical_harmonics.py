"""Real spherical harmonics, orthonormal on the unit sphere (test densities for BEM checks)."""
from __future__ import annotations

import numpy as np
from scipy.special import sph_harm_y

from ..errors import InputError
from . import _validate


def spherical_harmonic_real(l: int, m: int, points) -> np.ndarray:
    """Real spherical harmonic Y_lm at the directions of points (n, 3), shape (n,) float64.

    Orthonormal over the unit sphere: int Y_lm Y_l'm' dOmega = delta_ll' delta_mm'.
    Without the Condon-Shortley phase: m > 0 ~ P_l^m(cos theta) cos(m phi), m < 0 ~
    P_l^|m|(cos theta) sin(|m| phi), m = 0 zonal, so Y_1,(1,-1,0) = sqrt(3/(4 pi)) (x, y, z)/|x|.
    Only the direction of each point matters (theta from +z, phi from +x); points != 0.
    On a sphere of radius a, Y_lm / a is orthonormal in L2 of the surface.
    """
    if int(l) != l or l < 0:
        raise InputError(f"l = {l!r}: must be an integer >= 0")
    if int(m) != m or abs(m) > l:
        raise InputError(f"m = {m!r}: must be an integer with |m| <= l = {l}")
    l, m = int(l), int(m)
    xhat = _validate.unit_vectors("points", points)
    theta = np.arccos(np.clip(xhat[:, 2], -1.0, 1.0))
    phi = np.arctan2(xhat[:, 1], xhat[:, 0])
    y = sph_harm_y(l, abs(m), theta, phi)  # complex, with the Condon-Shortley phase (-1)^m
    if m == 0:
        return np.real(y).astype(np.float64)
    sign = (-1.0) ** m
    part = np.real(y) if m > 0 else np.imag(y)
    return np.sqrt(2.0) * sign * part
