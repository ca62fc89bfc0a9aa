"""Reference-element operators of order N are exact on polynomials of degree N."""
from math import factorial

import numpy as np
import pytest

from wavescat.errors import InputError
from wavescat.timedomain.dg.reference import MAX_ORDER, reference_tetrahedron

ORDERS = range(1, MAX_ORDER + 1)


def monomials(n):
    return [(a, b, c) for a in range(n + 1) for b in range(n + 1 - a) for c in range(n + 1 - a - b)]


@pytest.mark.parametrize("order", ORDERS)
def test_differentiation_is_exact_on_degree_n(order):
    ref = reference_tetrahedron(order)
    r, s, t = ref.r, ref.s, ref.t
    for a, b, c in monomials(order):
        u = r**a * s**b * t**c
        exact = [a * r ** max(a - 1, 0) * s**b * t**c, b * r**a * s ** max(b - 1, 0) * t**c,
                 c * r**a * s**b * t ** max(c - 1, 0)]
        for d_mat, du in zip((ref.Dr, ref.Ds, ref.Dt), exact):
            np.testing.assert_allclose(d_mat @ u, du, atol=1e-10 * (1 + np.abs(du).max()))


@pytest.mark.parametrize("order", ORDERS)
def test_mass_matrix_integrates_products_exactly(order):
    """int L1^a L2^b L3^c L4^d over the reference tet = (4/3) 3! a! b! c! d! / (a+b+c+d+3)!."""
    ref = reference_tetrahedron(order)
    lam = np.stack([-(1 + ref.r + ref.s + ref.t), 1 + ref.r, 1 + ref.s, 1 + ref.t]) / 2
    rng = np.random.default_rng(order)
    for _ in range(10):
        e1 = rng.multinomial(order, [0.25] * 4)  # two degree-N factors: degree 2N product
        e2 = rng.multinomial(order, [0.25] * 4)
        f = np.prod(lam ** e1[:, None], axis=0)
        g = np.prod(lam ** e2[:, None], axis=0)
        e = e1 + e2
        exact = 4 / 3 * 6 * np.prod([factorial(int(x)) for x in e]) / factorial(int(e.sum()) + 3)
        assert f @ ref.mass @ g == pytest.approx(exact, rel=1e-11)


@pytest.mark.parametrize("order", ORDERS)
def test_lift_is_inverse_mass_times_face_mass(order):
    """M LIFT = E, and E holds the face mass matrices: integration by parts on the reference
    tet, M Dr + Dr^T M = E_2 - E_3 (faces r+s+t=-1 and r=-1), likewise for s and t."""
    ref = reference_tetrahedron(order)
    np.testing.assert_allclose(ref.mass @ ref.lift, ref.face_mass, atol=1e-11)
    nfp = ref.n_face_nodes
    eye = np.eye(ref.n_nodes)
    e = [ref.face_mass[:, f * nfp:(f + 1) * nfp] @ eye[ref.face_mask[f]] for f in range(4)]
    m = ref.mass
    for d_mat, opposite in ((ref.Dr, 3), (ref.Ds, 1), (ref.Dt, 0)):
        np.testing.assert_allclose(m @ d_mat + d_mat.T @ m, e[2] - e[opposite], atol=1e-11)
    # a face mass matrix integrates 1 over the face: reference areas 2, 2, 2 (sqrt 3 scaled), 2
    for f in range(4):
        assert e[f].sum() == pytest.approx(2.0, rel=1e-12)


def test_nodes_are_well_conditioned():
    """Warp-and-blend nodes: the Vandermonde matrix stays as well conditioned as equispaced."""
    assert np.linalg.cond(reference_tetrahedron(6).V) < 40


@pytest.mark.parametrize("order", [0, 7, 2.5, "3"])
def test_order_out_of_range(order):
    with pytest.raises(InputError, match="order"):
        reference_tetrahedron(order)
