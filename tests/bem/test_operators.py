"""Galerkin operators on the unit sphere against exact answers.

Spherical harmonics are eigenfunctions of V, K, K', W on the sphere; the Galerkin
Rayleigh quotients q = u.A u / u.M u of Y_lm (P1 interpolant, P0 centroid values) converge
to the exact eigenvalues at O(h^2) (flat triangles and interpolation are both second order),
h halving with each icosphere subdivision. Also: K 1 = -1/2, the Calderon identity
V W = 1/4 - K^2, entry evaluation against the dense matrix, and bad input.
"""
import functools

import numpy as np
import pytest
import scipy.sparse as sparse
import scipy.sparse.linalg as spla

from wavescat.backend import get_backend
from wavescat.bem.assembly import operators
from wavescat.bem.discretisation import spaces
from wavescat.errors import WavescatError
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import helmholtz_eigenvalues, spherical_harmonic_real

LEVELS = (1, 2, 3)


@functools.lru_cache(maxsize=None)
def _mesh(s):
    return icosphere(s)


@functools.lru_cache(maxsize=None)
def _space(s, kind):
    return spaces.function_space(_mesh(s), kind)


@functools.lru_cache(maxsize=None)
def _matrix(name, s, kind, k, backend="cpu"):
    sp_ = _space(s, kind)
    return get_backend(backend).asnumpy(operators.assemble(name, sp_, sp_, k, backend=backend))


def _rayleigh(name, s, kind, k, l, m, backend):
    sp_ = _space(s, kind)
    u = sp_.interpolate(lambda p: spherical_harmonic_real(l, m, p))
    a = _matrix(name, s, kind, k, backend)
    mass = operators.mass_matrix(sp_, sp_)
    return (u @ a @ u) / (u @ (mass @ u))


CASES = [  # name, kind, k, l, m, minimal observed order
    ("single_layer", "P1", 0.0, 1, 0, 1.7),
    ("single_layer", "P1", 0.0, 2, 1, 1.7),
    ("double_layer", "P1", 0.0, 1, 1, 1.7),
    ("adjoint_double_layer", "P1", 0.0, 2, -2, 1.7),
    ("hypersingular", "P1", 0.0, 1, 0, 1.7),
    ("hypersingular", "P1", 0.0, 2, 0, 1.7),
    ("single_layer", "P0", 0.0, 1, 0, 1.7),
    ("double_layer", "P0", 0.0, 1, 0, 1.7),
    ("single_layer", "P1", 2.0, 1, 0, 1.7),
    ("double_layer", "P1", 2.0, 2, 1, 1.7),
    ("adjoint_double_layer", "P1", 2.0, 1, -1, 1.7),
    ("hypersingular", "P1", 2.0, 1, 0, 1.7),
    ("single_layer", "P1", 1.5 + 0.5j, 1, 1, 1.7),
    ("hypersingular", "P1", 1.5 + 0.5j, 2, 0, 1.7),
]


@pytest.mark.parametrize("name,kind,k,l,m,order", CASES)
def test_sphere_eigenvalues(name, kind, k, l, m, order, backend):
    exact = helmholtz_eigenvalues(l, k)[name]
    errors = np.array([abs(_rayleigh(name, s, kind, k, l, m, backend.name) - exact) for s in LEVELS])
    observed = np.log2(errors[:-1] / errors[1:])
    assert observed[-1] >= order, (errors, observed)
    assert errors[-1] < 0.1 * abs(exact), errors


def test_double_layer_of_constant():
    """On a closed polyhedron int dG/dn_y ds_y = -1/2 on the faces, so K 1 = -1/2 M 1
    up to quadrature error only (a sharp check of the kernel sign and the singular rules)."""
    for kind in ("P1", "P0"):
        sp_ = _space(2, kind)
        one = np.ones(sp_.n_dofs)
        lhs = _matrix("double_layer", 2, kind, 0.0) @ one
        rhs = -0.5 * (operators.mass_matrix(sp_, sp_) @ one)
        assert np.abs(lhs - rhs).max() < 1e-5 * np.abs(rhs).max()
        # and the adjoint tested against constants: 1.K' = -1/2 1.M
        lhs = one @ _matrix("adjoint_double_layer", 2, kind, 0.0)
        assert np.abs(lhs - rhs).max() < 1e-5 * np.abs(rhs).max()


def test_laplace_hypersingular_is_psd_with_constant_kernel():
    w = _matrix("hypersingular", 2, "P1", 0.0)
    assert np.allclose(w, w.T, atol=1e-14 * np.abs(w).max())
    ev = np.linalg.eigvalsh(w)
    assert ev[0] > -1e-9 * ev[-1]
    assert np.abs(w @ np.ones(len(w))).max() < 1e-12 * np.abs(w).max()


def test_calderon_laplace_p1():
    """V M^-1 W = 1/4 M - K M^-1 K applied to smooth densities; residual falls with h."""
    res = []
    for s in LEVELS:
        sp_ = _space(s, "P1")
        mass = operators.mass_matrix(sp_, sp_).tocsc()
        solve = spla.factorized(mass)
        v, k, w = (_matrix(n, s, "P1", 0.0) for n in ("single_layer", "double_layer", "hypersingular"))
        u = sp_.interpolate(lambda p: spherical_harmonic_real(2, 1, p) + 0.5 * spherical_harmonic_real(3, -2, p)
                            + 0.3 * spherical_harmonic_real(1, 0, p))
        lhs = v @ solve(w @ u)
        rhs = 0.25 * (mass @ u) - k @ solve(k @ u)
        r = solve(lhs - rhs)
        res.append(np.sqrt(r @ (mass @ r) / (u @ (mass @ u))))
    res = np.array(res)
    assert np.all(res[1:] < 0.5 * res[:-1]), res
    assert res[-1] < 0.01, res


def test_block_and_element_pairs_match_dense():
    # test spaces are distinct objects: dense takes the general pair path, as block does
    sp1, sp0, sp1t, sp0t = _space(2, "P1"), _space(2, "P0"), spaces.p1(_mesh(2)), spaces.p0(_mesh(2))
    rng = np.random.default_rng(1)
    for name, trial, test, k in [("double_layer", sp1, sp1t, 2.0), ("hypersingular", sp1, sp1t, 1.0 + 0.2j),
                                 ("adjoint_double_layer", sp0, sp1t, 0.0), ("single_layer", sp1, sp0t, 3.0)]:
        ev = operators.EntryEvaluator(name, trial, test, k)
        dense = ev.dense()
        rows = rng.choice(test.n_dofs, 17, replace=False)
        cols = rng.choice(trial.n_dofs, 23, replace=False)
        blk = ev.block(rows, cols)
        assert blk.dtype == dense.dtype == (np.float64 if k == 0 else np.complex128)
        assert np.abs(blk - dense[np.ix_(rows, cols)]).max() < 1e-14 * np.abs(dense).max()
        # element pairs: a coincident, a regular pair and their scatter reproduce dense entries
        loc = ev.element_pairs(np.array([5, 5]), np.array([5, 200]))
        assert loc.shape == (2, test.n_local, trial.n_local)
        reg = ev.element_pairs(np.array([5]), np.array([200]), regular_only=True)
        assert np.allclose(reg[0], loc[1], rtol=0, atol=0)


def test_single_precision_close_to_double():
    sp_ = _space(2, "P1")
    a64 = operators.assemble("double_layer", sp_, sp_, 2.0)
    a32 = operators.assemble("double_layer", sp_, sp_, 2.0, precision="single")
    assert a32.dtype == np.complex64
    assert np.abs(a32 - a64).max() < 1e-6 * np.abs(a64).max()


def test_bad_input():
    p1, p0, other = _space(1, "P1"), _space(1, "P0"), _space(2, "P1")
    with pytest.raises(WavescatError, match="hypersingular needs P1"):
        operators.assemble("hypersingular", p0, p1, 1.0)
    with pytest.raises(WavescatError, match="different meshes"):
        operators.assemble("single_layer", p1, other, 1.0)
    with pytest.raises(WavescatError, match="different meshes"):
        operators.EntryEvaluator("double_layer", other, p0, 0.0)
    with pytest.raises(WavescatError, match="operator name = 'slp'"):
        operators.assemble("slp", p1, p1, 1.0)
    with pytest.raises(WavescatError, match="wavenumber k"):
        operators.assemble("single_layer", p1, p1, 1.0 - 1.0j)
    with pytest.raises(WavescatError, match="precision"):
        operators.assemble("single_layer", p1, p1, 1.0, precision="half")


@pytest.mark.parametrize("name,k", [("single_layer", 2.0), ("double_layer", 1.0 + 0.5j),
                                    ("adjoint_double_layer", 0.0), ("hypersingular", 3.0)])
def test_symmetric_pair_path_matches_general_path(name, k):
    """A space paired with itself takes each unordered element pair once (V, W symmetric,
    K <-> K' swapped); a distinct but equal space object takes the general path. They agree
    to rounding on regular pairs and to the Sauter-Schwab quadrature error (which is not
    symmetric under swapping the triangles) on touching ones."""
    mesh = _mesh(2)
    same, other = spaces.p1(mesh), spaces.p1(mesh)
    a, b = operators.assemble(name, same, same, k), operators.assemble(name, same, other, k)
    assert np.abs(a - b).max() < 1e-5 * np.abs(b).max()
    d = same.dof_to_elements  # entries that no touching element pair reaches agree to rounding
    ta, tb = operators.touching_pairs(mesh)
    touch = sparse.csr_matrix((np.ones(len(ta)), (ta, tb)), shape=(mesh.n_triangles,) * 2)
    reached = (d @ touch @ d.T).toarray() > 0
    assert np.abs(a - b)[~reached].max() < 1e-13 * np.abs(b).max()
    if name in ("single_layer", "hypersingular"):
        assert np.abs(a - a.T).max() < 1e-5 * np.abs(a).max()  # coincident rules: not exactly


def test_operators_on_one_mesh_share_their_element_data():
    """Each operator on a mesh reads the same element data (made once per mesh, kind and rule),
    equal to what element_data makes afresh."""
    mesh = icosphere(1)
    a = operators.EntryEvaluator("double_layer", spaces.p1(mesh), spaces.p1(mesh), 2.0)
    b = operators.EntryEvaluator("hypersingular", spaces.p1(mesh), spaces.p1(mesh), 2.0)
    c = operators.EntryEvaluator("single_layer", spaces.p0(mesh), spaces.p0(mesh), 2.0)
    assert a.data_a is b.data_a and a.near_b is b.near_b
    assert c.data_a is not a.data_a and c.data_a.phi.shape[1] == 1
    fresh = operators.element_data(spaces.p1(mesh), *operators.rules.triangle_rule(a.orders.regular))
    for name in ("pts", "wts", "phi", "curl", "dofs"):
        np.testing.assert_array_equal(getattr(a.data_a, name), getattr(fresh, name))
