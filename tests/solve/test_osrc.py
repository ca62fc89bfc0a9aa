"""OSRC NtD: Padé square root, P1 mass/stiffness, and the NtD symbol on the unit sphere."""
import numpy as np
import pytest
import scipy.special as ss

from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations import osrc
from wavescat.bem.formulations.burton_miller import solve_real_spd
from wavescat.bem.formulations.osrc import (OsrcNtD, characteristic_radius, mass_and_stiffness,
                                            pade_coefficients, pade_sqrt)
from wavescat.errors import InputError
from wavescat.geometry.icosphere import icosphere


@pytest.fixture(scope="module")
def sphere_space():
    return spaces.p1(icosphere(4))


def test_pade_sqrt_matches_principal_branch_in_upper_half_plane():
    # with k_eps = k + i delta, the symbol 1 - l(l+1)/k_eps^2 lies in the upper half plane,
    # away from the rotated cut (arg(1 + z) = theta - pi)
    x, y = np.meshgrid(np.linspace(-4, 3, 29), np.linspace(0, 1, 6))
    z = (x + 1j * y).ravel()
    z = z[np.abs(1 + z) > 0.3]
    assert np.abs(pade_sqrt(z, 8, np.pi / 3) - np.sqrt(1 + z)).max() < 2e-3
    # evanescent modes (1 + z < 0 real) get +i sqrt(|1+z|), the outgoing branch
    assert np.allclose(pade_sqrt(-3.0), np.sqrt(2) * 1j, atol=2e-3)


def test_pade_rejects_bad_parameters():
    with pytest.raises(InputError, match="pade_terms"):
        pade_coefficients(0, 1.0)
    with pytest.raises(InputError, match="branch_angle"):
        pade_coefficients(4, 4.0)


def test_mass_and_stiffness_identities(sphere_space):
    mass, stiff = mass_and_stiffness(sphere_space)
    v = sphere_space.mesh.vertices
    assert mass.sum() == pytest.approx(sphere_space.mesh.total_area, rel=1e-12)
    assert np.abs(stiff @ np.ones(sphere_space.n_dofs)).max() < 1e-12
    # ∫ |grad_Γ x|^2 = ∫ (1 - n_x^2) = 8π/3 on the unit sphere
    assert v[:, 0] @ stiff @ v[:, 0] == pytest.approx(8 * np.pi / 3, rel=3e-3)
    assert abs(stiff - stiff.T).max() < 1e-12


def _exact_ntd(l, k):
    h = ss.spherical_jn(l, k) + 1j * ss.spherical_yn(l, k)
    dh = ss.spherical_jn(l, k, True) + 1j * ss.spherical_yn(l, k, True)
    return h / (k * dh)


def _osrc_symbol(l, k, radius):
    """Antoine & Darbas' OSRC NtD symbol on a sphere of radius R for the degree-l harmonics:
    (1/ik) (1 - l(l+1) / (k_eps R)^2)^(-1/2) with the damped wavenumber
    k_eps = k + i eps, eps = 0.4 k^(1/3) R^(-2/3) (their choice, written here from the paper)."""
    eps = 0.4 * k ** (1 / 3) * radius ** (-2 / 3)
    k_eps = k + 1j * eps
    return 1 / (1j * k) / np.sqrt(1 - l * (l + 1) / (k_eps * radius) ** 2)


@pytest.mark.parametrize("k", [20.0, 40.0])
def test_ntd_of_spherical_harmonics_on_unit_sphere(sphere_space, k):
    op = OsrcNtD(sphere_space, k, radius=1.0)
    mass = op.mass
    z = sphere_space.mesh.vertices[:, 2]
    for l in range(5):
        y = ss.eval_legendre(l, z)
        ny = op.apply(y)
        lam = (ny @ mass @ y) / (y @ mass @ y)
        symbol = _osrc_symbol(l, k, 1.0)
        # Y_l is an eigenvector of the discrete operator up to discretisation error ...
        assert np.linalg.norm(ny - lam * y) < 1e-3 * np.linalg.norm(lam * y)
        assert abs(lam - symbol) < 1e-3 * abs(symbol)
        # ... and its eigenvalue approximates the exact NtD one to O(1/k) for l << k
        assert abs(lam - _exact_ntd(l, k)) < 1.1 / k * abs(_exact_ntd(l, k))
    assert np.allclose(op.weak(y), mass @ op.apply(y))


def test_characteristic_radius_is_half_box_diagonal():
    assert characteristic_radius(icosphere(2, radius=2.0)) == pytest.approx(2 * np.sqrt(3), rel=1e-12)


@pytest.mark.parametrize("radius", [0.5, 2.0])
def test_damping_scales_with_the_given_radius(radius):
    """On a sphere of radius R the harmonics' eigenvalues follow the symbol with R's damping
    (not the unit sphere's): l(l+1) / (k_eps R)^2 with eps ∝ R^(-2/3)."""
    space = spaces.p1(icosphere(4, radius=radius))
    k = 10.0 / radius  # l(l+1) / (kR)^2 up to 0.2: the damping matters at the 1% level
    op = OsrcNtD(space, k, radius=radius)
    z = space.mesh.vertices[:, 2] / radius
    for l in (2, 4):
        y = ss.eval_legendre(l, z)
        lam = (op.apply(y) @ op.mass @ y) / (y @ op.mass @ y)
        assert abs(lam - _osrc_symbol(l, k, radius)) < 1e-3 * abs(_osrc_symbol(l, k, radius))



class _Ranks:
    """R ranks of one solve played in one process, twice: in the first pass each rank's
    `sum` records its partial sum, in the second it returns the sum of the recorded ones
    (what MPI's allreduce gives every rank)."""

    def __init__(self, size):
        self.size, self.partials, self.reducing = size, {}, False

    def rank(self, r):
        ranks = self

        class Rank:
            rank, size = r, ranks.size

            @staticmethod
            def sum(partial):
                if ranks.reducing:
                    return sum(ranks.partials.values())
                ranks.partials[r] = partial
                return partial
        return Rank()


def _shared_maps(space, ranks, terms):
    group = _Ranks(ranks)
    maps = [OsrcNtD(space, 3.0, pade_terms=terms, group=group.rank(r)) for r in range(ranks)]
    # the Padé terms and the inverse's resolvent, dealt round
    assert sorted(len(m._terms) for m in maps) == sorted(len(range(r, terms + 1, ranks))
                                                         for r in range(ranks))
    assert [m.solves_plus for m in maps] == [r == (terms + 1) % ranks for r in range(ranks)]
    return group, maps


@pytest.mark.parametrize("ranks, terms, columns", [(2, 8, 1), (3, 8, 5), (3, 2, 2)])
def test_ranks_sharing_the_pade_terms_give_the_whole_map(ranks, terms, columns):
    """Each rank factorises its own Padé terms (none where there are more ranks than
    terms), and with the sum over the ranks of their partial series every rank applies the
    one-process NtD map, to narrow and wide blocks."""
    space = spaces.p1(icosphere(2))
    want_map = OsrcNtD(space, 3.0, pade_terms=terms)
    group, maps = _shared_maps(space, ranks, terms)
    y = np.random.default_rng(3).standard_normal((space.n_dofs, columns)) + 0j
    for m in maps:
        m.apply_to_weak(y)
    group.reducing = True
    want = want_map.apply_to_weak(y)
    for m in maps:
        assert np.abs(m.apply_to_weak(y) - want).max() <= 1e-12 * np.abs(want).max()


@pytest.mark.parametrize("ranks, terms", [(3, 2), (2, 3), (6, 2)])
def test_ranks_sharing_the_pade_terms_on_the_device(emulated_gpu, monkeypatch, ranks, terms):
    """The device's one-launch solve of a rank's own resolvents (and of the mass matrix with
    them, on the rank whose turn it is), summed over the ranks, is the one-process map."""
    space = spaces.p1(icosphere(2))
    want_map = OsrcNtD(space, 3.0, pade_terms=terms)
    mass_lu = osrc.factorise(want_map.mass)
    rng = np.random.default_rng(5)
    y, b = (rng.standard_normal((space.n_dofs, 4)) + 1j * rng.standard_normal((space.n_dofs, 4))
            for _ in range(2))
    want = want_map.apply_to_weak(y) + solve_real_spd(mass_lu, b)
    group, maps = _shared_maps(space, ranks, terms)
    monkeypatch.setattr(osrc, "array_module", lambda a: emulated_gpu.xp)
    for m in maps:
        m.apply_to_weak_plus(y, mass_lu, b)
    group.reducing = True
    for m in maps:
        got = m.apply_to_weak_plus(y, mass_lu, b)
        assert np.abs(got - want).max() <= 1e-11 * np.abs(want).max()


@pytest.mark.parametrize("terms, angle", [(8, np.pi / 3), (3, 0.0), (12, 1.2)])
def test_ntd_resolvents_are_the_inverse_after_the_square_root(terms, angle):
    """The partial fractions: Σ_t w_t (M - s_t S')^{-1} y equals (M - S')^{-1} applied after
    the Padé square root c0 y - S' Σ_j a_j (M - b_j S')^{-1} y, divided by ik (the map as
    the paper writes it), by dense solves."""
    space = spaces.p1(icosphere(2))
    k = 4.0
    ntd = OsrcNtD(space, k, pade_terms=terms, branch_angle=angle)
    c0, a, b = pade_coefficients(terms, angle)
    mass, s = ntd.mass.toarray().astype(complex), ntd._scaled_stiffness.toarray()
    y = np.random.default_rng(1).standard_normal((space.n_dofs, 2)) + 0j
    sqrt = c0 * y - s @ sum(a_j * np.linalg.solve(mass - b_j * s, y) for a_j, b_j in zip(a, b))
    want = np.linalg.solve(mass - s, sqrt) / (1j * k)
    for got in (ntd.apply_to_weak(y), np.stack([ntd.apply_to_weak(c) for c in y.T], axis=1)):
        assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()


def test_mass_solve_rides_with_the_map_on_the_threads(monkeypatch):
    """On the host the strong form's mass solve is one more job beside the resolvents' (one
    column: all on the threads at once), and the sum is the two apart."""
    space = spaces.p1(icosphere(2))
    ntd = OsrcNtD(space, 3.0, pade_terms=4)
    mass_lu = osrc.factorise(ntd.mass)
    rng = np.random.default_rng(2)
    y, b = (rng.standard_normal(space.n_dofs) + 1j * rng.standard_normal(space.n_dofs)
            for _ in range(2))
    jobs = []
    real_map = osrc.threaded_map
    monkeypatch.setattr(osrc, "threaded_map", lambda fn, items: jobs.append(len(list(items)))
                        or real_map(fn, items))
    got = ntd.apply_to_weak_plus(y, mass_lu, b)
    assert jobs == [6]  # five resolvents and the mass matrix, in one map
    want = ntd.apply_to_weak(y) + solve_real_spd(mass_lu, b)
    assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


def test_mass_factorised_beside_the_map():
    """With `mass_factor` the map factorises M itself beside its own matrices: the factors of
    factorise(M), which the strong form then solves with, and its own factors unchanged."""
    from wavescat.bem.formulations.burton_miller import OsrcBurtonMiller

    space = spaces.p1(icosphere(2))
    plain = OsrcNtD(space, 3.0, pade_terms=3)
    both = OsrcNtD(space, 3.0, pade_terms=3, mass_factor=True)
    assert plain.mass_lu is None
    pairs = [(both.mass_lu, osrc.factorise(plain.mass))]
    pairs += [(x, y) for (_, x), (_, y) in zip(both._terms, plain._terms)]
    for got, want in pairs:
        assert got.dtype == want.dtype
        for name in ("perm_r", "perm_c"):
            assert np.array_equal(getattr(got.lu, name), getattr(want.lu, name))
        for g, w in ((got.lu.L, want.lu.L), (got.lu.U, want.lu.U)):
            assert np.array_equal(g.indptr, w.indptr) and np.array_equal(g.indices, w.indices)
            assert np.array_equal(g.data, w.data)
    assert OsrcBurtonMiller(None, None, plain.mass, both)._mass_lu is both.mass_lu
