"""OSRC Burton-Miller algebra with dense stand-in operators, and the plane-wave data."""
import numpy as np
import pytest

from wavescat.bem.assembly import operators
from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations.burton_miller import OsrcBurtonMiller, plane_wave_data
from wavescat.bem.formulations.osrc import OsrcNtD, mass_and_stiffness
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import rigid_sphere


@pytest.fixture(scope="module")
def small():
    space = spaces.p1(icosphere(2))
    mass, stiff = mass_and_stiffness(space)
    ntd = OsrcNtD(space, 3.0, mass=mass, stiffness=stiff)
    rng = np.random.default_rng(1)
    n = space.n_dofs
    k_weak = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) * 1e-3
    w_weak = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) * 1e-2
    return space, mass, ntd, k_weak, w_weak


@pytest.mark.parametrize("width", [3, 30])  # 30: a GPU solves the sparse parts on the device
def test_system_matches_dense_formula(small, backend, width):
    space, mass, ntd, k_weak, w_weak = small
    xp = backend.xp
    system = OsrcBurtonMiller(xp.asarray(k_weak), xp.asarray(w_weak), mass, ntd, xp=xp)
    n = space.n_dofs
    m_dense = mass.toarray()
    ntd_dense = ntd.apply(np.eye(n))  # strong form M^{-1} N_weak
    a_dense = 0.5 * np.eye(n) - np.linalg.solve(m_dense, k_weak) \
        - ntd_dense @ np.linalg.solve(m_dense, w_weak)
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, width)) + 0j
    assert np.allclose(backend.asnumpy(system.matvec(xp.asarray(x))), a_dense @ x, atol=1e-12)
    g, h = (rng.standard_normal((n, width)) + 1j * rng.standard_normal((n, width)) for _ in "gh")
    f_dense = np.linalg.solve(m_dense, g) - ntd_dense @ np.linalg.solve(m_dense, h)
    assert np.allclose(backend.asnumpy(system.rhs(g, h)), f_dense, atol=1e-12)


@pytest.fixture(scope="module")
def rigid_sphere_case():
    """The dense K and W on a unit sphere at k = 2, and the exact surface pressure of a plane
    wave scattered by it (the series of wavescat.reference, independent of the BEM)."""
    k, d = 2.0, np.array([0.0, 0.6, 0.8])
    space = spaces.p1(icosphere(3))
    k_weak, w_weak = (operators.assemble(name, space, space, k) for name in ("double_layer", "hypersingular"))
    mass, stiff = mass_and_stiffness(space)
    ntd = OsrcNtD(space, k, mass=mass, stiffness=stiff)
    p = rigid_sphere.surface_pressure(k, 1.0, d, space.mesh.vertices)
    return space, k, d, np.asarray(k_weak), np.asarray(w_weak), mass, ntd, p


def test_exact_traces_solve_the_system(rigid_sphere_case):
    """The exact surface pressure of a rigid sphere (the series, not the BEM) solves A p = f up
    to the discretisation error: the signs and scalings of K, W, M and Ñ in the matvec agree
    with those of the plane-wave data in the right-hand side and with the physics."""
    space, k, d, k_weak, w_weak, mass, ntd, p = rigid_sphere_case
    system = OsrcBurtonMiller(k_weak, w_weak, mass, ntd)
    g, h = plane_wave_data(space, k, d)
    f = system.rhs(g, h)[:, 0]
    residual = np.linalg.norm(system.matvec(p[:, None])[:, 0] - f) / np.linalg.norm(f)
    assert residual < 0.02, residual
    # each trace equation separately, in the weak form: (M/2 - K) p = g and W p = h
    assert np.linalg.norm(0.5 * (mass @ p) - k_weak @ p - g[:, 0]) < 0.02 * np.linalg.norm(g)
    assert np.linalg.norm(w_weak @ p - h[:, 0]) < 0.02 * np.linalg.norm(h)


def test_right_hand_side_matches_dense_formula(small):
    """f = M^{-1} g - Ñ M^{-1} h with dense inverses, Ñ the strong-form NtD (OsrcNtD.apply)."""
    space, mass, ntd, _, _ = small
    system = OsrcBurtonMiller(None, None, mass, ntd)
    rng = np.random.default_rng(3)
    g, h = (rng.standard_normal((space.n_dofs, 2)) + 1j * rng.standard_normal((space.n_dofs, 2)) for _ in "gh")
    m_dense = mass.toarray()
    ntd_dense = ntd.apply(np.eye(space.n_dofs))
    want = np.linalg.solve(m_dense, g) - ntd_dense @ np.linalg.solve(m_dense, h)
    assert np.allclose(system.rhs(g, h), want, atol=1e-12 * np.abs(want).max())


def test_plane_wave_data_integrates_exactly_on_sphere():
    space = spaces.p1(icosphere(4))
    k = 2.0
    d = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8]])
    g, h = plane_wave_data(space, k, d)
    # Σ_i φ_i = 1: ∫ exp(ik d.x) over the unit sphere, and ∫ dp/dn = ∫_ball Δp = -k^2 ∫_ball p
    assert np.allclose(g.sum(axis=0), 4 * np.pi * np.sin(k) / k, rtol=2e-3)
    ball = 4 * np.pi * (np.sin(k) - k * np.cos(k)) / k**3
    assert np.allclose(h.sum(axis=0), -k**2 * ball, rtol=5e-3)
    # and against each vertex coordinate: ∫ z exp(ikz) = 4π i j_1(k)
    z = space.mesh.vertices[:, 2]
    j1 = np.sin(k) / k**2 - np.cos(k) / k
    assert z @ g[:, 0] == pytest.approx(4j * np.pi * j1, rel=3e-3)
