"""Sauter-Schwab rules: structure, exactness on polynomials, pair classification, and geometric
convergence to independent high-accuracy references for 1/r and exp(ikr)/r.

The references integrate the analytic inner potential of the trial triangle,
    Phi(x) = int_T exp(ik|x - y|)/|x - y| dy,
(polar coordinates about the projection x' of x: the radial integral is closed-form,
int_0^R exp(ik sqrt(rho^2 + h^2)) / sqrt(rho^2 + h^2) rho drho = int_h^sqrt(R^2+h^2) exp(ikr) dr,
and the angle is integrated along each edge after l = |p| sinh(s), which smooths the 1/(p^2+l^2)
peak; for k = 0 in the plane the integrand is constant, i.e. Wilton's closed form) over the test
triangle with a tanh-sinh rule in Duffy coordinates, which puts the edges and the shared
vertex, where Phi has its log-type derivative singularities, at the ends of the intervals.
"""
import itertools

import numpy as np
import pytest

from wavescat.bem.discretisation.quadrature import (COINCIDENT, EDGE, REGULAR, VERTEX,
                                                    QuadratureOrders, canonical_to_element,
                                                    classify_pairs, singular_rule,
                                                    stacked_singular_rules)
from wavescat.errors import InputError, MeshError

from .test_quadrature import monomial_integral


# --- independent reference ----------------------------------------------------------------

def _gauss01(n):
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1) / 2, w / 2


def _tanh_sinh01(step):
    """Nodes x, 1 - x (without cancellation) and weights of tanh-sinh on (0, 1)."""
    tau = np.arange(-np.ceil(3.3 / step), np.ceil(3.3 / step) + 1) * step
    z = np.pi * np.sinh(tau)
    x, xc = 1 / (1 + np.exp(-z)), 1 / (1 + np.exp(z))
    w = step * np.pi * np.cosh(tau) * x * xc
    keep = (x > 0) & (xc > 0)
    return x[keep], xc[keep], w[keep]


def triangle_potential(x, T, k, panels=16, npts=16):
    """int_T exp(ik|x - y|)/|x - y| dy at points x (m, 3), T (3, 3) vertices."""
    n = np.cross(T[1] - T[0], T[2] - T[0])
    n /= np.linalg.norm(n)
    hs = (x - T[0]) @ n
    h, xp = np.abs(hs), x - np.outer(hs, n)
    g, gw = _gauss01(npts)
    frac = ((np.arange(panels)[:, None] + g) / panels).ravel()
    fw = np.tile(gw / panels, panels)
    total = np.zeros(len(x), complex)
    for i in range(3):
        P, Q = T[i], T[(i + 1) % 3]
        L = np.linalg.norm(Q - P)
        e = (Q - P) / L
        p = (P - xp) @ np.cross(e, n)  # signed distance to the edge line, > 0 inside
        lp = (P - xp) @ e
        ap = np.abs(p)
        ok = ap > 1e-14 * L  # x' on the edge line: a zero-area sector, no contribution
        ap = np.where(ok, ap, 1.0)
        s0, s1 = np.arcsinh(lp / ap), np.arcsinh((lp + L) / ap)
        s = s0[:, None] + (s1 - s0)[:, None] * frac
        ch = np.cosh(s)
        R = ap[:, None] * ch
        d = R**2 / (np.sqrt(R**2 + h[:, None] ** 2) + h[:, None])  # sqrt(R^2+h^2) - h
        G = d if k == 0 else np.exp(1j * k * h)[:, None] * np.expm1(1j * k * d) / (1j * k)
        total += np.where(ok, np.sign(p) * (s1 - s0) * ((G / ch) @ fw), 0)
    return total


def pair_reference(A, B, k, step=1 / 8):
    """int_{T_A} int_{T_B} exp(ik|x - y|)/|x - y| dy dx."""
    x, xc, w = _tanh_sinh01(step)
    S, T = np.meshgrid(x, x, indexing="ij")
    Tc = np.meshgrid(xc, xc, indexing="ij")[1]
    u, v = (S * Tc).ravel(), (S * T).ravel()  # Duffy: edges at t = 0, 1 and s = 1, A0 at s = 0
    X = A[0] + u[:, None] * (A[1] - A[0]) + v[:, None] * (A[2] - A[0])
    area_a = 0.5 * np.linalg.norm(np.cross(A[1] - A[0], A[2] - A[0]))
    return 2 * area_a * ((np.outer(w, w) * S).ravel() @ triangle_potential(X, B, k))


def sauter_schwab(A, B, kind, order, k):
    """The rule under test, triangles given in canonical vertex order."""
    x, y, w = singular_rule(kind, order)
    X = A[0] + x[:, :1] * (A[1] - A[0]) + x[:, 1:] * (A[2] - A[0])
    Y = B[0] + y[:, :1] * (B[1] - B[0]) + y[:, 1:] * (B[2] - B[0])
    r = np.linalg.norm(X - Y, axis=1)
    area = lambda T: 0.5 * np.linalg.norm(np.cross(T[1] - T[0], T[2] - T[0]))  # noqa: E731
    return 4 * area(A) * area(B) * (w @ (np.exp(1j * k * r) / r))


# Physical pairs, canonical order (shared vertices first, in the same order).
RIGHT = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
SKINNY = np.array([[0, 0, 0], [1, 0, 0], [0.1, 0.3, 0.0]])
PAIRS = {
    "coincident-right": (COINCIDENT, RIGHT, RIGHT),
    "coincident-skinny": (COINCIDENT, SKINNY, SKINNY),
    "edge-bent": (EDGE, np.array([[0, 0, 0], [1, 0, 0], [0.3, 0.8, 0.0]]),
                  np.array([[0, 0, 0], [1, 0, 0], [0.6, -0.5, 0.6]])),
    "edge-flat": (EDGE, np.array([[0, 0, 0], [1, 0, 0], [0.3, 0.8, 0.0]]),
                  np.array([[0, 0, 0], [1, 0, 0], [0.4, -0.6, 0.0]])),
    "vertex-bent": (VERTEX, np.array([[0, 0, 0], [1, 0, 0], [0.2, 0.9, 0.0]]),
                    np.array([[0, 0, 0], [-0.7, 0.3, 0.5], [-0.4, -0.8, 0.2]])),
    "vertex-flat": (VERTEX, np.array([[0, 0, 0], [1, 0, 0], [0.2, 0.9, 0.0]]),
                    np.array([[0, 0, 0], [-0.7, 0.3, 0.0], [-0.4, -0.8, 0.0]])),
}
# (pair, k, bound on the relative error at the default order of the kind, at order 10);
# the triangles have diameters ~1, so k = 5 is a coarse ~1.3 elements per wavelength.
CONVERGENCE = [
    ("coincident-right", 0, 1e-6, 1e-8), ("coincident-right", 5, 2e-6, 1e-8),
    ("coincident-skinny", 2, 1e-5, 1e-7),
    ("edge-bent", 0, 1e-6, 1e-11), ("edge-bent", 2, 1e-6, 1e-11), ("edge-bent", 5, 1e-4, 1e-10),
    ("edge-flat", 2, 1e-6, 1e-10),
    ("vertex-bent", 0, 1e-6, 1e-11), ("vertex-bent", 5, 1e-3, 1e-10),
    ("vertex-flat", 2, 1e-6, 1e-10),
]


def test_reference_agrees_with_closed_form_of_a_coplanar_potential():
    """The in-plane Laplace potential of the unit right triangle at its centroid-free point
    x = (1/4, 1/4, 0) against Wilton's closed form sum_i p_i ln((l_Q + R_Q)/(l_P + R_P)),
    and the k -> 0 limit of the Helmholtz branch."""
    x = np.array([[0.25, 0.25, 0.0], [0.3, 0.2, 0.4]])
    T = RIGHT
    exact = 0.0
    for i in range(3):
        P, Q = T[i], T[(i + 1) % 3]
        e = (Q - P) / np.linalg.norm(Q - P)
        p = np.cross(e, [0, 0, 1]) @ (P - x[0])
        lp, lq = e @ (P - x[0]), e @ (Q - x[0])
        exact += p * np.log((lq + np.linalg.norm(Q - x[0])) / (lp + np.linalg.norm(P - x[0])))
    phi = triangle_potential(x, T, 0)
    assert phi[0].real == pytest.approx(exact, rel=1e-14)
    assert triangle_potential(x, T, 1e-7) == pytest.approx(phi, rel=1e-7)


@pytest.fixture(scope="module")
def references():
    cache = {}

    def get(name, k):
        if (name, k) not in cache:
            _, A, B = PAIRS[name]
            cache[name, k] = pair_reference(A, B, k)
        return cache[name, k]

    return get


@pytest.mark.parametrize("name,k,tol_default,tol_10", CONVERGENCE)
def test_singular_rules_converge_geometrically_to_reference(references, name, k, tol_default,
                                                            tol_10):
    kind, A, B = PAIRS[name]
    ref = references(name, k)
    default = QuadratureOrders().singular_order(kind)
    err = {n: abs(sauter_schwab(A, B, kind, n, k) - ref) / abs(ref) for n in (2, 6, 10, default)}
    assert err[default] < tol_default
    assert err[10] < tol_10
    # geometric decay (not monotone point by point for the skinny triangle)
    assert err[6] < 0.1 * err[2] and err[10] < 0.03 * err[6]


def test_reference_is_converged():
    _, A, B = PAIRS["coincident-skinny"]
    fine, coarse = pair_reference(A, B, 2, step=1 / 12), pair_reference(A, B, 2)
    assert abs(fine - coarse) < 1e-13 * abs(fine)


# --- structure and smooth integrands -----------------------------------------------------

@pytest.mark.parametrize("kind,regions", [(VERTEX, 2), (EDGE, 5), (COINCIDENT, 6)])
@pytest.mark.parametrize("order", [2, 4, 7])
def test_rule_sizes_weights_and_points(kind, regions, order):
    x, y, w = singular_rule(kind, order)
    assert x.shape == y.shape == (regions * order**4, 2) and w.shape == (regions * order**4,)
    assert w.sum() == pytest.approx(0.25, rel=1e-13)
    assert np.all(w > 0)
    for p in (x, y):
        assert p.min() > 0 and (1 - p.sum(axis=1)).min() > 0  # strictly inside
    assert np.abs(x - y).sum(axis=1).min() > 0  # never on the singularity


def test_names_and_codes_give_the_same_rule():
    for name, code in (("vertex", VERTEX), ("edge", EDGE), ("coincident", COINCIDENT)):
        for a, b in zip(singular_rule(name, 3), singular_rule(code, 3)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("kind", [VERTEX, EDGE, COINCIDENT])
def test_exact_for_polynomials_in_both_triangles(kind):
    """The maps are polynomial: order n integrates x^a y^b products of total degree <= 2n - 4
    exactly (int over T x T of u^a v^b u'^c v'^d = product of the two triangle moments)."""
    order = 5
    x, y, w = singular_rule(kind, order)
    for a, b, c, d in np.ndindex(4, 4, 4, 4):
        if a + b + c + d <= 2 * order - 4:
            f = x[:, 0] ** a * x[:, 1] ** b * y[:, 0] ** c * y[:, 1] ** d
            exact = monomial_integral(a, b) * monomial_integral(c, d)
            assert w @ f == pytest.approx(exact, rel=1e-12), (a, b, c, d)


@pytest.mark.parametrize("order", [3, (2, 3, 4)])
def test_stacked_rules_index_by_kind_code(order):
    offsets, x, y, w = stacked_singular_rules(order)
    assert offsets[REGULAR] == offsets[REGULAR + 1] == 0
    for kind in (VERTEX, EDGE, COINCIDENT):
        xs, ys, ws = singular_rule(kind, order if isinstance(order, int) else order[kind - 1])
        sl = slice(offsets[kind], offsets[kind + 1])
        np.testing.assert_array_equal(x[sl], xs)
        np.testing.assert_array_equal(y[sl], ys)
        np.testing.assert_array_equal(w[sl], ws)


@pytest.mark.parametrize("bad", [("edge", 0), ("face", 3), (0, 3), (4, 3), ("vertex", 2.0)])
def test_bad_kind_or_order_is_a_config_error(bad):
    with pytest.raises(InputError, match="kind|order"):
        singular_rule(*bad)


@pytest.mark.parametrize("bad", [(4, 4), (4, 0, 4), 0])
def test_bad_per_kind_orders_are_config_errors(bad):
    with pytest.raises(InputError, match="singular"):
        stacked_singular_rules(bad)
    with pytest.raises(InputError, match="singular"):
        QuadratureOrders(singular=bad)


def test_quadrature_orders_per_kind():
    q = QuadratureOrders(singular=[4, 5, 6])
    assert q.singular == (4, 5, 6)
    assert [q.singular_order(c) for c in (VERTEX, EDGE, COINCIDENT)] == [4, 5, 6]
    assert QuadratureOrders(singular=3).singular_order(EDGE) == 3


# --- classification ------------------------------------------------------------------------

def _octahedron_pairs():
    """All ordered triangle pairs of an octahedron, each triangle in a random vertex rotation
    or reflection: every kind appears, and local orders are arbitrary."""
    tri = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4],
                    [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    rng = np.random.default_rng(7)
    perms = np.array([[0, 1, 2], [1, 2, 0], [2, 0, 1], [1, 0, 2], [0, 2, 1], [2, 1, 0]])
    ia, ib = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    ta = np.take_along_axis(tri[ia.ravel()], perms[rng.integers(0, 6, 64)], axis=1)
    tb = np.take_along_axis(tri[ib.ravel()], perms[rng.integers(0, 6, 64)], axis=1)
    return ta, tb


def _every_pair_over_six_vertices():
    """Every ordered pair of triangles, each in every vertex order, on 6 vertices: all kinds,
    every way two triangles can share their vertices."""
    tris = np.array(list(itertools.permutations(range(6), 3)))
    return np.repeat(tris, len(tris), axis=0), np.tile(tris, (len(tris), 1))


@pytest.mark.parametrize("pairs", [_octahedron_pairs, _every_pair_over_six_vertices])
def test_classify_pairs_kinds_and_canonical_orders(pairs):
    ta, tb = pairs()
    kind, pa, pb = classify_pairs(ta, tb)
    shared = np.array([len(set(a) & set(b)) for a, b in zip(ta, tb)])
    np.testing.assert_array_equal(kind, shared)
    assert set(kind) == {REGULAR, VERTEX, EDGE, COINCIDENT}
    ca = np.take_along_axis(ta, pa, axis=1)
    cb = np.take_along_axis(tb, pb, axis=1)
    for c in range(3):  # canonical vertices 0..kind-1 are the shared ones, in the same order
        assert np.all((ca[:, c] == cb[:, c]) == (c < kind))
    for p in (pa, pb):  # permutations
        np.testing.assert_array_equal(np.sort(p, axis=1), np.tile([0, 1, 2], (len(p), 1)))
    rotations = {(0, 1, 2), (1, 2, 0), (2, 0, 1)}
    assert {tuple(p) for p in pa} <= rotations
    assert {tuple(p) for p, k in zip(pb, kind) if k <= VERTEX} <= rotations
    regular = kind == REGULAR
    assert np.all(pa[regular] == [0, 1, 2]) and np.all(pb[regular] == [0, 1, 2])


def test_classified_pairs_integrate_like_the_canonical_ones():
    """Shared vertices of a physical edge pair given in arbitrary local orders: classify,
    permute, integrate, and match the reference of the pair."""
    _, A, B = PAIRS["edge-bent"]
    verts = np.vstack([A, B[2:]])  # 0, 1 shared; 2 = A's apex, 3 = B's apex
    ta, tb = np.array([[2, 0, 1]]), np.array([[1, 3, 0]])
    kind, pa, pb = classify_pairs(ta, tb)
    assert kind[0] == EDGE
    Ac, Bc = verts[ta[0, pa[0]]], verts[tb[0, pb[0]]]
    value = sauter_schwab(Ac, Bc, kind[0], 8, 2.0)
    assert abs(value - pair_reference(A, B, 2.0)) < 1e-9 * abs(value)


def test_canonical_to_element_maps_to_the_same_physical_points():
    rng = np.random.default_rng(3)
    T = rng.normal(size=(3, 3))
    x, _, _ = singular_rule(EDGE, 2)
    perms = np.array([[1, 2, 0], [2, 1, 0], [0, 1, 2]])
    local = canonical_to_element(x, perms)
    assert local.shape == (3, len(x), 2)
    for p, loc in zip(perms, local):
        Tc = T[p]
        canon = Tc[0] + x[:, :1] * (Tc[1] - Tc[0]) + x[:, 1:] * (Tc[2] - Tc[0])
        own = T[0] + loc[:, :1] * (T[1] - T[0]) + loc[:, 1:] * (T[2] - T[0])
        np.testing.assert_allclose(own, canon, atol=1e-14)
        np.testing.assert_allclose(canonical_to_element(x, p), loc)


@pytest.mark.parametrize("ta,tb,match", [
    (np.zeros((2, 2), int), np.zeros((2, 2), int), "tri_a"),
    (np.array([[0, 1, 2]]), np.array([[0.0, 1, 2]]), "tri_b"),
    (np.array([[0, 1, 1]]), np.array([[0, 1, 2]]), "degenerate"),
    (np.array([[0, 1, 2]]), np.array([[0, 1, 2], [3, 4, 5]]), "same shape"),
])
def test_classify_pairs_rejects_bad_input(ta, tb, match):
    with pytest.raises(MeshError, match=match):
        classify_pairs(ta, tb)


def test_regular_product_rule_on_a_near_disjoint_pair():
    """Disjoint pairs use triangle_rule on both triangles: at a centroid distance of 2
    diameters the default regular order gives ~2e-5, the near order ~1e-10, and the error
    keeps falling with the order (reference: the same analytic-inner/tanh-sinh integral)."""
    from wavescat.bem.discretisation.quadrature import triangle_rule

    A = np.array([[0, 0, 0], [1, 0, 0], [0.5, np.sqrt(3) / 2, 0.0]])
    B = 2 * A.mean(axis=0) - A + [2.0, 0, 0]  # point reflection, shifted by 2 diameters
    ref = pair_reference(A, B, 2.0)

    def product(order):
        p, w = triangle_rule(order)
        X = A[0] + p[:, :1] * (A[1] - A[0]) + p[:, 1:] * (A[2] - A[0])
        Y = B[0] + p[:, :1] * (B[1] - B[0]) + p[:, 1:] * (B[2] - B[0])
        r = np.linalg.norm(X[:, None] - Y[None], axis=2)
        area = np.sqrt(3) / 4
        return 4 * area * area * (w @ (np.exp(2j * r) / r) @ w)

    orders = QuadratureOrders()
    err = {o: abs(product(o) - ref) / abs(ref) for o in (orders.regular, orders.near, 13)}
    assert err[orders.regular] < 5e-5
    assert err[orders.near] < 1e-9
    assert err[13] < 1e-11


def solid_angle(x, T):
    """Signed solid angle of triangle T (normal from its vertex order) seen from points x:
    Van Oosterom-Strackee, tan(Omega/2) = R1.(R2 x R3) / (r1 r2 r3 + (R1.R2) r3 + ...)."""
    R = T[None] - x[:, None]
    r = np.linalg.norm(R, axis=2)
    dot = lambda i, j: np.einsum("ij,ij->i", R[:, i], R[:, j])  # noqa: E731
    num = np.einsum("ij,ij->i", R[:, 0], np.cross(R[:, 1], R[:, 2]))
    den = r[:, 0] * r[:, 1] * r[:, 2] + dot(0, 1) * r[:, 2] + dot(0, 2) * r[:, 1] \
        + dot(1, 2) * r[:, 0]
    return 2 * np.arctan2(num, den)


@pytest.mark.parametrize("name,tol_5", [("edge-bent", 1e-5), ("vertex-bent", 2e-5)])
def test_double_layer_kernel_converges_on_touching_pairs(name, tol_5):
    """The double-layer kernel (x - y).n_y / r^3, whose inner integral over T_y is minus the
    solid angle of T_y seen from x (closed form), integrated over T_x by tanh-sinh."""
    kind, A, B = PAIRS[name]
    x, xc, w = _tanh_sinh01(1 / 8)
    S, T = np.meshgrid(x, x, indexing="ij")
    Tc = np.meshgrid(xc, xc, indexing="ij")[1]
    u, v = (S * Tc).ravel(), (S * T).ravel()
    X = A[0] + u[:, None] * (A[1] - A[0]) + v[:, None] * (A[2] - A[0])
    nA, nB = np.cross(A[1] - A[0], A[2] - A[0]), np.cross(B[1] - B[0], B[2] - B[0])
    area_a, area_b = np.linalg.norm(nA) / 2, np.linalg.norm(nB) / 2
    ref = 2 * area_a * ((np.outer(w, w) * S).ravel() @ -solid_angle(X, B))

    def rule(order):
        xr, yr, wr = singular_rule(kind, order)
        d = (A[0] + xr[:, :1] * (A[1] - A[0]) + xr[:, 1:] * (A[2] - A[0])
             - B[0] - yr[:, :1] * (B[1] - B[0]) - yr[:, 1:] * (B[2] - B[0]))
        kernel = d @ (nB / (2 * area_b)) / np.linalg.norm(d, axis=1) ** 3
        return 4 * area_a * area_b * (wr @ kernel)

    err = {n: abs(rule(n) - ref) / abs(ref) for n in (2, 5, 10)}
    assert err[5] < tol_5 and err[10] < 1e-9
    assert err[5] < 1e-2 * err[2] and err[10] < 1e-3 * err[5]
