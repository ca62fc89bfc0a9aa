"""Tensor Chebyshev interpolation on a cluster's box: nodes, and the Lagrange polynomials'
values and derivatives at any points (for the bases of the directional far field)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

# A box side shorter than this share of the longest is widened to it: a flat cluster's
# nodes must not collapse onto one plane (the interpolant is built in the box's
# coordinates), and a thin side amplifies rounding (a point's coordinate over the side, and
# the normal derivative across it): at 1e-3 the single-precision double layer between two
# flat sheets was 1.3e-3 from the double-precision one, at 0.2 8.5e-6.
MIN_ASPECT = 0.2


@lru_cache(maxsize=None)
def nodes(p: int) -> np.ndarray:
    """The p Chebyshev points of the first kind on [-1, 1]."""
    return np.cos((2 * np.arange(p) + 1) * np.pi / (2 * p))[::-1].copy()


@lru_cache(maxsize=None)
def _coefficients(p: int) -> np.ndarray:
    """C with L_j(t) = sum_m T_m(t) C[m, j]: the inverse of T_m at the nodes (exact
    discrete orthogonality, so well conditioned for any p)."""
    return np.linalg.inv(_chebyshev_t(nodes(p), p))


def _chebyshev_t(t, p, xp=np):
    """T_0 .. T_{p-1} at t (..., p); `derivative`: U_0 .. U_{p-1} (T_m' = m U_{m-1})."""
    out = [xp.ones_like(t), t]
    for _ in range(2, p):
        out.append(2 * t * out[-1] - out[-2])
    return xp.stack(out[:p], axis=-1)


def _chebyshev_u(t, p, xp=np):
    out = [xp.ones_like(t), 2 * t]
    for _ in range(2, p):
        out.append(2 * t * out[-1] - out[-2])
    return xp.stack(out[:p], axis=-1)


def lagrange(t, p: int, derivative: bool = False, xp=np):
    """Values (..., p) of the p Lagrange polynomials of the nodes at t (in [-1, 1]), or of
    their derivatives in t, in t's array module and precision."""
    c = xp.asarray(_coefficients(p), dtype=t.dtype)
    if not derivative:
        return _chebyshev_t(t, p, xp) @ c
    u = _chebyshev_u(t, p - 1, xp) * xp.arange(1, p, dtype=t.dtype)  # T_m', m >= 1
    return u @ c[1:]


def boxes(lo: np.ndarray, hi: np.ndarray):
    """(centre, half-widths) of boxes [lo, hi] (n, 3), thin sides widened (MIN_ASPECT)."""
    centre = 0.5 * (lo + hi)
    half = 0.5 * (hi - lo)
    floor = np.maximum(MIN_ASPECT * half.max(axis=1, keepdims=True), 1e-300)
    return centre, np.maximum(half, floor)
