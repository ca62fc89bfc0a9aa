"""Eigenvalues of the boundary integral operators on a sphere of radius a.

Every spherical harmonic Y_lm of degree l is an eigenfunction of V, K, K' and W on the
sphere, with an eigenvalue that depends on l only. Conventions of docs/conventions.md:
G(x, y) = e^{ik|x-y|} / (4 pi |x-y|), V u = int G u, K u = int dG/dn_y u,
K' u = int dG/dn_x u, W u = -d/dn_x int dG/dn_y u, n the outward normal; K and K' are
principal values (the exterior limit of the double-layer potential is (K + 1/2) u).

Derivation: G = ik sum_l j_l(k r<) h_l(k r>) sum_m Y_lm(xhat) conj(Y_lm(yhat)), so for the
density Y_lm on |y| = a the single-layer potential is i k a^2 j_l(k r<) h_l(k r>) Y_lm(xhat)
and the double-layer potential i k^2 a^2 {j_l'(ka) h_l(kr) outside, j_l(kr) h_l'(ka) inside}.
K and K' are the means of the two one-sided limits (they coincide on the sphere):
    V  = i k a^2 j_l(ka) h_l(ka)
    K  = K' = (i k^2 a^2 / 2) (j_l'(ka) h_l(ka) + j_l(ka) h_l'(ka))
            = i k^2 a^2 j_l(ka) h_l'(ka) + 1/2          (Wronskian j h' - j' h = i / x^2)
    W  = -i k^3 a^2 j_l'(ka) h_l'(ka)
and as k -> 0 (Laplace):
    V = a/(2l+1),  K = K' = -1/(2(2l+1)),  W = l(l+1)/(a(2l+1)).
Both sets satisfy the Calderon identity V W = 1/4 - K^2 exactly.
"""
from __future__ import annotations

import numpy as np
from scipy.special import spherical_jn, spherical_yn

from ..errors import InputError
from . import _validate

OPERATORS = ("single_layer", "double_layer", "adjoint_double_layer", "hypersingular")


def _degrees(l):
    arr = np.asarray(l)
    if arr.dtype.kind not in "iu" and not (arr.dtype.kind == "f" and np.all(arr == np.round(arr))):
        raise InputError(f"l = {l!r}: must be an integer >= 0")
    arr = arr.astype(np.int64)
    if np.any(arr < 0):
        raise InputError(f"l = {l!r}: must be an integer >= 0")
    return arr


def _as_output(values: dict, scalar: bool) -> dict:
    if scalar:
        return {name: v.item() for name, v in values.items()}
    return values


def laplace_eigenvalues(l, radius=1.0) -> dict:
    """Eigenvalues of the Laplace (k = 0) operators V, K, K', W for degree l on a sphere.

    l: integer >= 0 or an integer array; radius: a > 0. Returns
    {"single_layer": a/(2l+1), "double_layer": -1/(2(2l+1)),
     "adjoint_double_layer": -1/(2(2l+1)), "hypersingular": l(l+1)/(a(2l+1))}
    as floats (or float arrays shaped like l), conventions of docs/conventions.md.
    """
    a = _validate.positive("radius", radius)
    deg = _degrees(l).astype(np.float64)
    k_half = -1.0 / (2.0 * (2.0 * deg + 1.0))
    values = {"single_layer": a / (2.0 * deg + 1.0),
              "double_layer": k_half,
              "adjoint_double_layer": k_half.copy(),
              "hypersingular": deg * (deg + 1.0) / (a * (2.0 * deg + 1.0))}
    return _as_output(values, np.ndim(l) == 0)


def helmholtz_eigenvalues(l, k, radius=1.0) -> dict:
    """Eigenvalues of the Helmholtz operators V, K, K', W for degree l on a sphere.

    l: integer >= 0 or an integer array; k: wavenumber, real or complex (k = 0 gives the
    Laplace values); radius: a > 0. With h_l = j_l + i y_l (outgoing, exp(-i w t)), x = ka:
    V = i k a^2 j_l(x) h_l(x);  K = K' = (i k^2 a^2/2)(j_l'(x) h_l(x) + j_l(x) h_l'(x));
    W = -i k^3 a^2 j_l'(x) h_l'(x). Returns complex values (arrays shaped like l).
    """
    a = _validate.positive("radius", radius)
    deg = _degrees(l)
    try:
        k = complex(k)
    except (TypeError, ValueError):
        raise InputError(f"k = {k!r}: must be a number") from None
    if not np.isfinite(k):
        raise InputError(f"k = {k!r}: must be finite")
    if k == 0:
        lap = laplace_eigenvalues(deg, a)
        values = {name: np.asarray(v, dtype=np.complex128) for name, v in lap.items()}
        return _as_output(values, np.ndim(l) == 0)
    x = k * a if k.imag != 0 else k.real * a  # scipy's real path is the more accurate one
    j, jp = spherical_jn(deg, x), spherical_jn(deg, x, True)
    h = j + 1j * spherical_yn(deg, x)
    hp = jp + 1j * spherical_yn(deg, x, True)
    k_mean = 0.5j * k**2 * a**2 * (jp * h + j * hp)
    values = {"single_layer": np.asarray(1j * k * a**2 * j * h, dtype=np.complex128),
              "double_layer": np.asarray(k_mean, dtype=np.complex128),
              "adjoint_double_layer": np.array(k_mean, dtype=np.complex128),
              "hypersingular": np.asarray(-1j * k**3 * a**2 * jp * hp, dtype=np.complex128)}
    return _as_output(values, np.ndim(l) == 0)
