"""The sound-soft and impedance Burton-Miller algebra with dense stand-in operators (on each
backend), and the OSRC DtN map against its symbol and the exact DtN map on a sphere."""
import numpy as np
import pytest
import scipy.special as ss

from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations.burton_miller import (OsrcDirichletBurtonMiller,
                                                     OsrcImpedanceBurtonMiller)
from wavescat.bem.formulations.osrc import OsrcDtN, OsrcNtD, mass_and_stiffness
from wavescat.geometry.icosphere import icosphere

K, BETA = 3.0, 0.7 + 0.4j


@pytest.fixture(scope="module")
def small():
    space = spaces.p1(icosphere(2))
    mass, stiff = mass_and_stiffness(space)
    ntd = OsrcNtD(space, K, mass=mass, stiffness=stiff)
    dtn = OsrcDtN(space, K, mass=mass, stiffness=stiff)
    rng = np.random.default_rng(1)
    n = space.n_dofs
    ops = [(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) * s
           for s in (1e-3, 1e-2, 1e-3, 1e-3)]  # K, W, V, K' stand-ins
    return space, mass, ntd, dtn, ops


def test_dirichlet_system_matches_dense_formula(small, backend):
    space, mass, _, dtn, (_, _, v, kp) = small
    xp = backend.xp
    system = OsrcDirichletBurtonMiller(xp.asarray(v), xp.asarray(kp), mass, dtn, xp=xp)
    n = space.n_dofs
    m = mass.toarray()
    dtn_strong = dtn.apply(np.eye(n) + 0j)  # M^{-1} Λ_weak
    a = 0.5 * np.eye(n) + np.linalg.solve(m, kp) - dtn_strong @ np.linalg.solve(m, v)
    x = np.random.default_rng(2).standard_normal((n, 3)) + 0j
    assert np.allclose(backend.asnumpy(system.matvec(xp.asarray(x))), a @ x, atol=1e-12)


def test_impedance_system_matches_dense_formula(small, backend):
    space, mass, ntd, _, (k, w, v, kp) = small
    xp = backend.xp
    system = OsrcImpedanceBurtonMiller(*(xp.asarray(o) for o in (k, w, v, kp)), mass, ntd, K,
                                       BETA, xp=xp)
    n = space.n_dofs
    m = mass.toarray()
    ikb = 1j * K * BETA
    a = (0.5 * np.eye(n) - np.linalg.solve(m, k + ikb * v)
         - ntd.apply(np.eye(n)) @ np.linalg.solve(m, w - ikb * (0.5 * m + kp)))
    x = np.random.default_rng(2).standard_normal((n, 3)) + 0j
    assert np.allclose(backend.asnumpy(system.matvec(xp.asarray(x))), a @ x, atol=1e-12)


def test_exact_traces_solve_the_systems(small):
    """A trace that satisfies both exterior equations solves the combined system."""
    space, mass, ntd, dtn, (k, w, v, kp) = small
    x = np.random.default_rng(3).standard_normal((space.n_dofs, 2)) + 1j
    soft = OsrcDirichletBurtonMiller(v, kp, mass, dtn)  # V λ = g, (M/2 + K') λ = h
    assert np.allclose(soft.matvec(x), soft.rhs(v @ x, 0.5 * (mass @ x) + kp @ x), atol=1e-12)
    imp = OsrcImpedanceBurtonMiller(k, w, v, kp, mass, ntd, K, BETA)
    ikb = 1j * K * BETA
    g = 0.5 * (mass @ x) - k @ x - ikb * (v @ x)
    h = w @ x - ikb * (0.5 * (mass @ x) + kp @ x)
    assert np.allclose(imp.matvec(x), imp.rhs(g, h), atol=1e-12)


def _exact_dtn(l, k):
    h = ss.spherical_jn(l, k) + 1j * ss.spherical_yn(l, k)
    dh = ss.spherical_jn(l, k, True) + 1j * ss.spherical_yn(l, k, True)
    return k * dh / h


@pytest.mark.parametrize("k", [20.0, 40.0])
def test_dtn_of_spherical_harmonics_on_unit_sphere(k):
    space = spaces.p1(icosphere(4))
    dtn = OsrcDtN(space, k, radius=1.0)
    ntd = OsrcNtD(space, k, radius=1.0)
    mass = dtn.mass
    z = space.mesh.vertices[:, 2]
    for l in range(5):
        y = ss.eval_legendre(l, z)
        ly = dtn.apply(y)
        lam = (ly @ mass @ y) / (y @ mass @ y)
        symbol = 1j * k * np.sqrt(1 - l * (l + 1) / dtn.k_eps**2)
        assert np.linalg.norm(ly - lam * y) < 1e-3 * np.linalg.norm(lam * y)
        assert abs(lam - symbol) < 1e-3 * abs(symbol)
        assert abs(lam - _exact_dtn(l, k)) < 1.1 / k * abs(_exact_dtn(l, k))
        # the DtN and NtD approximations are inverse to each other
        assert np.allclose(ntd.apply(ly), y, rtol=0, atol=2e-3 * np.abs(y).max())
