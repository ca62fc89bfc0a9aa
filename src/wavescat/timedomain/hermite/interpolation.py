"""Hermite interpolation on a cell: the 1D operator and its tensor product.

A cell of width h has vertices at z = -1/2 and z = +1/2 in the local variable
z = (x - x_centre) / h. Each vertex carries the *scaled* derivatives
h^k/k! d^k u/dx^k = 1/k! d^k u/dz^k for k = 0..m, so the interpolant
p(z) = sum_j b_j z^j of degree 2m+1 does not depend on h, and its coefficients
b_j are the scaled derivatives at the cell centre. The 1D operator H maps the
2(m+1) vertex data [left k=0..m, right k=0..m] to b_0..b_{2m+1}; in 3D it is
applied along each dimension in turn (Vargas et al., Algorithm 2).
"""
from __future__ import annotations

import functools
from fractions import Fraction
from math import comb

import numpy as np

from ...errors import InputError


def check_degree(m) -> int:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise InputError(f"hermite degree m = {m!r}: must be an integer >= 1")
    return int(m)


def _solve_exact(a: list[list[Fraction]]) -> list[list[Fraction]]:
    """Inverse of a small rational matrix by Gauss-Jordan elimination (exact)."""
    n = len(a)
    aug = [row[:] + [Fraction(int(i == j)) for j in range(n)] for i, row in enumerate(a)]
    for col in range(n):
        piv = next(r for r in range(col, n) if aug[r][col] != 0)
        aug[col], aug[piv] = aug[piv], aug[col]
        inv = 1 / aug[col][col]
        aug[col] = [v * inv for v in aug[col]]
        for r in range(n):
            if r != col and aug[r][col] != 0:
                f = aug[r][col]
                aug[r] = [v - f * w for v, w in zip(aug[r], aug[col])]
    return [row[n:] for row in aug]


@functools.lru_cache(maxsize=None)
def hermite_matrix_1d(m: int) -> np.ndarray:
    """The (2m+2, 2m+2) operator H with b = H @ [left_0..left_m, right_0..right_m].

    Built exactly in rational arithmetic from the confluent Vandermonde matrix
    (row (vertex z0, k): scaled k-th derivative of z^j at z0 = C(j,k) z0^(j-k)).
    """
    m = check_degree(m)
    n = 2 * m + 2
    rows = []
    for z0 in (Fraction(-1, 2), Fraction(1, 2)):
        for k in range(m + 1):
            rows.append([Fraction(comb(j, k)) * z0 ** (j - k) if j >= k else Fraction(0)
                         for j in range(n)])
    h = np.array(_solve_exact(rows), dtype=np.float64)
    h.setflags(write=False)
    return h


def interpolate_1d(left: np.ndarray, right: np.ndarray, m: int) -> np.ndarray:
    """Monomial coefficients (axis 0, length 2m+2) from vertex data (axis 0, length m+1)."""
    return np.tensordot(hermite_matrix_1d(m), np.concatenate([left, right]), axes=1)


def interpolate_3d(corners: np.ndarray, m: int) -> np.ndarray:
    """Tensor-product interpolant of one or many cells, dimension by dimension.

    corners: (2, 2, 2, m+1, m+1, m+1, ...) = (vertex a0, a1, a2, derivative k0, k1, k2, cells...).
    Returns b: (2m+2, 2m+2, 2m+2, ...) coefficients of z0^j0 z1^j1 z2^j2.
    """
    h = hermite_matrix_1d(m)
    n1 = m + 1
    rest = corners.shape[6:]
    # group (vertex, derivative) per dimension: index a*(m+1)+k matches H's columns
    loc = np.moveaxis(corners, (0, 1, 2), (0, 2, 4)).reshape((2 * n1,) * 3 + rest)
    for axis in range(3):
        loc = np.moveaxis(np.tensordot(h, loc, axes=([1], [axis])), 0, axis)
    return loc


def evaluate_scaled_derivatives(coeffs: np.ndarray, z: float, m: int) -> np.ndarray:
    """Scaled derivatives 1/k! d^k p/dz^k (k = 0..m) at z of p = sum_j coeffs[j] z^j (axis 0)."""
    n = coeffs.shape[0]
    shift = np.array([[comb(j, k) * z ** (j - k) if j >= k else 0.0 for j in range(n)]
                      for k in range(m + 1)])
    return np.tensordot(shift, coeffs, axes=1)
