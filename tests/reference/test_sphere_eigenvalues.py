"""Closed-form sphere eigenvalues against direct quadrature of the layer potentials.

A zonal density P_l(cos theta') on |y| = a, observed at x = r z, reduces every potential to
2 pi a^2 int_{-1}^{1} kernel(x, y(t)) P_l(t) dt (t = cos theta'), and the eigen-relation gives
potential(r z) = lambda(r) P_l(1) = lambda(r). The substitution t = 1 - s^2 removes the 1/R
singularity at x = y on the surface, leaving a smooth integrand for Gauss-Legendre.
"""
import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import eval_legendre, spherical_jn, spherical_yn

from wavescat.errors import InputError
from wavescat.reference import (helmholtz_eigenvalues, laplace_eigenvalues,
                                spherical_harmonic_real)

CASES = [(0, 0.0), (1, 0.0), (4, 0.0), (0, 1.5), (2, 1.5), (5, 3.7), (3, 2.0 + 0.5j)]


def kernels(k, a, r, s):
    """SL, DL (d/dn_y), ADL (d/dn_x) and -d/dr DL kernels between x = r z and y on |y| = a
    at cos(theta_y) = t = 1 - s^2; written in s so that R stays accurate as x -> y."""
    t = 1 - s * s
    R = np.sqrt((r - a) ** 2 + 2 * a * r * s * s)
    e = np.exp(1j * k * R) / (4 * np.pi)
    g = e / R
    f = (1j * k * R - 1) * e / R**3                   # G'(R) / R
    df = (3 - 3j * k * R - (k * R) ** 2) * e / R**4   # d/dR of G'(R)/R
    a_rt = a - r + r * s * s                          # (y - x).n_y = a - r t
    r_at = r - a + a * s * s                          # (x - y).n_x = r - a t
    return {"single_layer": g, "double_layer": f * a_rt, "adjoint_double_layer": f * r_at,
            "minus_dr_double_layer": -(df * r_at / R * a_rt - t * f)}


def zonal_potentials_on_surface(l, k, a, n=120):
    """V, K, K' of P_l at the north pole by Gauss-Legendre in s, t = 1 - s^2."""
    x, w = np.polynomial.legendre.leggauss(n)
    s = np.sqrt(2) * (x + 1) / 2
    w = w * np.sqrt(2) / 2
    t = 1 - s * s
    weight = 2 * np.pi * a * a * w * 2 * s * eval_legendre(l, t)
    return {name: np.sum(weight * ker) for name, ker in kernels(k, a, a, s).items()
            if name != "minus_dr_double_layer"}


def zonal_potentials_off_surface(l, k, a, r):
    """All four potentials of P_l at r z by adaptive quadrature in s (nearly singular near s=0)."""
    out = {}
    for name in ("single_layer", "double_layer", "adjoint_double_layer", "minus_dr_double_layer"):
        def integrand(s):
            t = 1 - s * s
            return 2 * np.pi * a * a * 2 * s * eval_legendre(l, t) * kernels(k, a, r, s)[name]
        width = abs(r - a) / a
        # the W kernel cancels O(1/width) contributions: its attainable accuracy is lower
        epsabs = 1e-10 if name == "minus_dr_double_layer" else 1e-12
        out[name] = quad(integrand, 0, np.sqrt(2), complex_func=True, points=[width, 10 * width],
                         epsabs=epsabs, epsrel=1e-12, limit=400)[0]
    return out


def separated(l, k, a, r):
    """The potentials of Y_l from the addition theorem, r != a (what the eigenvalues are limits of)."""
    jl = lambda x, p=False: spherical_jn(l, x, p)
    hl = lambda x, p=False: spherical_jn(l, x, p) + 1j * spherical_yn(l, x, p)
    inner, outer = (jl, hl) if r > a else (hl, jl)  # the radial factor of x, of y = a
    outer_y, inner_x = (jl, hl) if r > a else (hl, jl)
    return {"single_layer": 1j * k * a * a * outer_y(k * a) * inner_x(k * r),
            "double_layer": 1j * k**2 * a * a * outer_y(k * a, True) * inner_x(k * r),
            "adjoint_double_layer": 1j * k**2 * a * a * outer_y(k * a) * inner_x(k * r, True),
            "minus_dr_double_layer": -1j * k**3 * a * a * outer_y(k * a, True) * inner_x(k * r, True)}


def eigenvalues(l, k, a):
    return laplace_eigenvalues(l, a) if k == 0 else helmholtz_eigenvalues(l, k, a)


@pytest.mark.parametrize("l, k", CASES)
def test_surface_quadrature_matches_eigenvalues(l, k):
    a = 1.4
    numeric = zonal_potentials_on_surface(l, k, a)
    exact = eigenvalues(l, k, a)
    for name, value in numeric.items():
        assert value == pytest.approx(exact[name], rel=1e-10, abs=1e-12), name


@pytest.mark.parametrize("l, k", [(0, 1.5), (2, 1.5), (5, 3.7), (3, 2.0 + 0.5j)])
@pytest.mark.parametrize("r_over_a", [0.6, 1.7])
def test_off_surface_quadrature_matches_addition_theorem(l, k, r_over_a):
    a = 1.4
    numeric = zonal_potentials_off_surface(l, k, a, r_over_a * a)
    exact = separated(l, k, a, r_over_a * a)
    for name, value in numeric.items():
        assert value == pytest.approx(exact[name], rel=1e-9, abs=1e-12), name


def one_sided_limit(l, k, a, side):
    """Limits r -> a from one side (side = +1 outside, -1 inside) by Richardson extrapolation
    of the quadrature at r = a(1 + side eps), eps = h, 2h: error O(h^2)."""
    h = 1e-3
    near = zonal_potentials_off_surface(l, k, a, a * (1 + side * h))
    far = zonal_potentials_off_surface(l, k, a, a * (1 + 2 * side * h))
    return {name: 2 * near[name] - far[name] for name in near}


@pytest.mark.parametrize("l, k", CASES)
def test_jump_relations(l, k):
    """Quadrature limits from outside/inside: DL jumps by 1 around (K + 1/2, K - 1/2), dSL/dn
    by -1 around K' (K' - 1/2 outside), SL is continuous (V) and -d/dn DL is continuous (W)."""
    a = 1.0
    out, inn = one_sided_limit(l, k, a, +1), one_sided_limit(l, k, a, -1)
    ev = eigenvalues(l, k, a)
    tol = 1e-4 * max(1.0, abs(ev["hypersingular"]))
    assert abs(out["single_layer"] - ev["single_layer"]) < tol
    assert abs(inn["single_layer"] - ev["single_layer"]) < tol
    assert abs(out["double_layer"] - (ev["double_layer"] + 0.5)) < tol
    assert abs(inn["double_layer"] - (ev["double_layer"] - 0.5)) < tol
    assert abs(out["adjoint_double_layer"] - (ev["adjoint_double_layer"] - 0.5)) < tol
    assert abs(inn["adjoint_double_layer"] - (ev["adjoint_double_layer"] + 0.5)) < tol
    assert abs(out["minus_dr_double_layer"] - ev["hypersingular"]) < tol
    assert abs(inn["minus_dr_double_layer"] - ev["hypersingular"]) < tol


@pytest.mark.parametrize("k", [0.0, 0.7, 5.0, 12.0 + 0.3j, 2.0j])
def test_calderon_identity(k):
    """V W = 1/4 - K^2 and K V = V K' hold eigenvalue by eigenvalue."""
    l = np.arange(25)
    ev = eigenvalues(l, k, 1.3)
    lhs = ev["single_layer"] * ev["hypersingular"]
    rhs = 0.25 - ev["double_layer"] ** 2
    assert np.allclose(lhs, rhs, rtol=1e-10, atol=1e-12)
    assert np.allclose(ev["double_layer"], ev["adjoint_double_layer"])


def test_laplace_closed_forms():
    a = 2.0
    ev = laplace_eigenvalues([0, 1, 3], a)
    assert np.allclose(ev["single_layer"], [a, a / 3, a / 7])
    assert np.allclose(ev["double_layer"], [-0.5, -1 / 6, -1 / 14])  # K 1 = -1/2: DL of 1 is 0 outside
    assert np.allclose(ev["hypersingular"], [0.0, 2 / (3 * a), 12 / (7 * a)])
    assert isinstance(laplace_eigenvalues(2)["single_layer"], float)


@pytest.mark.parametrize("k", [1e-3, 1e-5])
def test_helmholtz_tends_to_laplace(k):
    l = np.arange(8)
    hel, lap = helmholtz_eigenvalues(l, k, 0.9), laplace_eigenvalues(l, 0.9)
    for name in lap:
        assert np.allclose(hel[name], lap[name], rtol=0, atol=5 * k), name
    assert helmholtz_eigenvalues(3, 0.0)["hypersingular"] == pytest.approx(12 / 7)


@pytest.mark.parametrize("l, m", [(2, 1), (3, -2), (4, 4)])
@pytest.mark.parametrize("r_over_a", [0.5, 1.6])
def test_real_harmonics_are_eigenfunctions_off_axis(l, m, r_over_a):
    """SL of a non-zonal Y_lm at a generic point = i k a^2 j_l(k r<) h_l(k r>) Y_lm(xhat)."""
    k, a = 2.3, 1.1
    x = r_over_a * a * np.array([0.48, -0.6, 0.64])
    t, w = np.polynomial.legendre.leggauss(60)
    phi = 2 * np.pi * np.arange(120) / 120
    t, phi = np.meshgrid(t, phi, indexing="ij")
    yhat = np.stack([np.sqrt(1 - t**2) * np.cos(phi), np.sqrt(1 - t**2) * np.sin(phi), t],
                    -1).reshape(-1, 3)
    weights = np.repeat(w, 120) * (2 * np.pi / 120) * a * a
    R = np.linalg.norm(x - a * yhat, axis=1)
    value = np.sum(weights * np.exp(1j * k * R) / (4 * np.pi * R)
                   * spherical_harmonic_real(l, m, yhat))
    expected = separated(l, k, a, np.linalg.norm(x))["single_layer"] * \
        spherical_harmonic_real(l, m, x[None])[0]
    assert value == pytest.approx(expected, rel=1e-9)


def test_real_harmonics_orthonormal_and_degree_one():
    t, w = np.polynomial.legendre.leggauss(12)
    phi = 2 * np.pi * np.arange(24) / 24
    t, phi = np.meshgrid(t, phi, indexing="ij")
    pts = np.stack([np.sqrt(1 - t**2) * np.cos(phi), np.sqrt(1 - t**2) * np.sin(phi), t],
                   -1).reshape(-1, 3)
    weights = np.repeat(w, 24) * (2 * np.pi / 24)
    Y = np.array([spherical_harmonic_real(l, m, pts) for l in range(5) for m in range(-l, l + 1)])
    assert np.allclose((Y * weights) @ Y.T, np.eye(len(Y)), atol=1e-13)
    c = np.sqrt(3 / (4 * np.pi))
    p = np.array([[0.36, 0.48, 0.8], [-2.0, 1.0, 2.0]])
    xhat = p / np.linalg.norm(p, axis=1)[:, None]
    for m, axis in ((1, 0), (-1, 1), (0, 2)):
        assert np.allclose(spherical_harmonic_real(1, m, p), c * xhat[:, axis])


def test_bad_arguments():
    with pytest.raises(InputError, match="l = -1"):
        laplace_eigenvalues(-1)
    with pytest.raises(InputError, match="l = 1.5"):
        helmholtz_eigenvalues(1.5, 1.0)
    with pytest.raises(InputError, match="radius"):
        helmholtz_eigenvalues(1, 1.0, radius=-2)
    with pytest.raises(InputError, match="m = 3"):
        spherical_harmonic_real(2, 3, [[0, 0, 1]])
