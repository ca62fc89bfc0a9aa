"""Symmetric triangle rules: exact on monomials, symmetric, inside, positive; QuadratureOrders."""
from math import factorial

import numpy as np
import pytest

from wavescat.bem.discretisation.quadrature import (MAX_SYMMETRIC_ORDER, QuadratureOrders,
                                                    triangle_rule)
from wavescat.errors import InputError


def monomial_integral(a, b):
    """int over {u, v >= 0, u + v <= 1} of u^a v^b."""
    return factorial(a) * factorial(b) / factorial(a + b + 2)


def monomial_errors(points, weights, degree):
    """Relative errors of the rule on all u^a v^b with a + b <= degree."""
    errs = []
    for a in range(degree + 1):
        for b in range(degree + 1 - a):
            exact = monomial_integral(a, b)
            errs.append(abs(weights @ (points[:, 0] ** a * points[:, 1] ** b) - exact) / exact)
    return np.array(errs)


@pytest.mark.parametrize("order", range(1, 21))
def test_exact_for_monomials_up_to_order(order):
    points, weights = triangle_rule(order)
    assert points.shape == (len(weights), 2)
    assert weights.sum() == pytest.approx(0.5, rel=1e-14)
    assert monomial_errors(points, weights, order).max() < 1e-12


@pytest.mark.parametrize("order", range(1, 14))
def test_not_exact_one_degree_higher(order):
    """The order is the true degree: some monomial of degree order + 1 is missed."""
    points, weights = triangle_rule(order)
    assert monomial_errors(points, weights, order + 1).max() > 1e-10


@pytest.mark.parametrize("order", range(1, MAX_SYMMETRIC_ORDER + 1))
def test_symmetric_rules_are_symmetric_positive_and_inside(order):
    points, weights = triangle_rule(order)
    assert np.all(weights > 0)
    bary = np.column_stack([1 - points.sum(axis=1), points])
    assert bary.min() > 0
    key = np.round(np.column_stack([weights, bary]), 12)
    for perm in ([1, 0, 2], [0, 2, 1], [2, 1, 0], [1, 2, 0]):  # generators and a rotation
        permuted = np.column_stack([weights, bary[:, perm]])
        assert {tuple(r) for r in np.round(permuted, 12)} == {tuple(r) for r in key}


def test_point_counts_are_the_economical_ones():
    counts = [len(triangle_rule(o)[1]) for o in range(1, 11)]
    assert counts == [1, 3, 6, 6, 7, 12, 15, 16, 19, 25]


def test_physical_triangle_integral():
    """int_T f = 2|T| sum w f(x(p)): a cubic on a skewed triangle in 3D against a fine rule."""
    A = np.array([[0.3, -0.2, 1.0], [2.0, 0.5, 0.7], [0.1, 1.7, -0.4]])
    area = 0.5 * np.linalg.norm(np.cross(A[1] - A[0], A[2] - A[0]))

    def integral(order):
        p, w = triangle_rule(order)
        x = A[0] + p[:, :1] * (A[1] - A[0]) + p[:, 1:] * (A[2] - A[0])
        f = x[:, 0] ** 2 * x[:, 1] - 3 * x[:, 2] + x[:, 0] * x[:, 1] * x[:, 2]
        return 2 * area * w @ f

    assert integral(3) == pytest.approx(integral(20), rel=1e-13)


def test_rule_is_cached_but_returned_arrays_are_private():
    p, w = triangle_rule(5)
    p[:] = 0.0
    w[:] = 0.0
    p2, w2 = triangle_rule(5)
    assert w2.sum() == pytest.approx(0.5)


@pytest.mark.parametrize("bad", [0, -1, 2.5, "4", True, None])
def test_bad_order_is_a_config_error(bad):
    with pytest.raises(InputError, match="order"):
        triangle_rule(bad)


def test_quadrature_orders_validates():
    q = QuadratureOrders()
    assert q.regular >= 1 and min(q.singular) >= 1 and q.near >= q.regular
    with pytest.raises(InputError, match="singular"):
        QuadratureOrders(singular=0)
    with pytest.raises(InputError, match="near_factor"):
        QuadratureOrders(near_factor=-1.0)


def test_mapped_rule_integrates_on_every_element():
    """The one mapping of a reference rule onto the elements (operators, potentials, the
    H-matrix clouds and the plane waves' data all use it): exact for x^2 on flat triangles,
    A/6 (x1^2 + x2^2 + x3^2 + x1 x2 + x1 x3 + x2 x3)."""
    from wavescat.bem.discretisation.quadrature import mapped_rule
    from wavescat.geometry.icosphere import icosphere

    mesh = icosphere(1, radius=2.0, center=(0.3, -0.2, 0.1))
    pts, wts = mapped_rule(mesh, *triangle_rule(2))
    assert pts.shape == (mesh.n_triangles, len(wts[0]), 3)
    assert np.allclose(wts.sum(axis=1), mesh.areas, rtol=1e-14)
    x = mesh.corners[:, :, 0]
    exact = mesh.areas / 6 * ((x**2).sum(axis=1) + x[:, 0] * x[:, 1] + x[:, 0] * x[:, 2]
                              + x[:, 1] * x[:, 2])
    assert np.allclose((wts * pts[..., 0] ** 2).sum(axis=1), exact, rtol=1e-13)
