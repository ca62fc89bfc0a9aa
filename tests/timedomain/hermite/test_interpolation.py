"""The Hermite interpolants reproduce polynomials of degree 2m+1 exactly, and no more."""
import numpy as np
import pytest

from wavescat.errors import InputError
from wavescat.timedomain.hermite.interpolation import (
    evaluate_scaled_derivatives, hermite_matrix_1d, interpolate_1d, interpolate_3d)


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_1d_interpolant_reproduces_degree_2m_plus_1(m):
    rng = np.random.default_rng(m)
    coeffs = rng.standard_normal((2 * m + 2, 5))  # five polynomials at once
    left = evaluate_scaled_derivatives(coeffs, -0.5, m)
    right = evaluate_scaled_derivatives(coeffs, 0.5, m)
    np.testing.assert_allclose(interpolate_1d(left, right, m), coeffs, atol=1e-12)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_1d_interpolant_is_not_exact_beyond_2m_plus_1(m):
    coeffs = np.zeros(2 * m + 3)
    coeffs[-1] = 1.0  # z^(2m+2)
    left = evaluate_scaled_derivatives(coeffs, -0.5, m)
    right = evaluate_scaled_derivatives(coeffs, 0.5, m)
    b = interpolate_1d(left, right, m)
    # interpolation error z^(2m+2) - p(z) = (z^2 - 1/4)^(m+1), so p(0) = -(-1/4)^(m+1)
    assert b[0] == pytest.approx(-(-0.25) ** (m + 1), abs=1e-13)


def test_1d_operator_is_the_known_cubic_for_m1():
    # p(z) on [-1/2, 1/2] from u, u' (scaled) at both ends: the classical cubic Hermite
    h = hermite_matrix_1d(1)
    np.testing.assert_allclose(h, [[0.5, 0.125, 0.5, -0.125], [-1.5, -0.25, 1.5, -0.25],
                                   [0.0, -0.5, 0.0, 0.5], [2.0, 1.0, -2.0, 1.0]], atol=1e-15)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_tensor_interpolant_reproduces_tensor_polynomials(m):
    n = 2 * m + 2
    rng = np.random.default_rng(10 + m)
    coeffs = rng.standard_normal((n, n, n, 3))  # three cells
    # corner data: scaled derivatives in each axis at z = -1/2 or +1/2
    corners = np.empty((2, 2, 2) + (m + 1,) * 3 + (3,))
    for a0, z0 in enumerate((-0.5, 0.5)):
        c0 = evaluate_scaled_derivatives(coeffs, z0, m)
        for a1, z1 in enumerate((-0.5, 0.5)):
            c1 = np.moveaxis(evaluate_scaled_derivatives(np.moveaxis(c0, 1, 0), z1, m), 0, 1)
            for a2, z2 in enumerate((-0.5, 0.5)):
                corners[a0, a1, a2] = np.moveaxis(
                    evaluate_scaled_derivatives(np.moveaxis(c1, 2, 0), z2, m), 0, 2)
    np.testing.assert_allclose(interpolate_3d(corners, m), coeffs, atol=1e-11)


@pytest.mark.parametrize("m", [0, -1, 1.5, "2", True])
def test_bad_degree_is_refused(m):
    with pytest.raises(InputError, match="degree m"):
        hermite_matrix_1d(m)
