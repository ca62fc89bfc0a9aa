"""The device's level-scheduled LU solves (triangular.py), run on the CPU by the CUDA
emulation, against SuperLU's solves with the same factors."""
import numpy as np
import pytest
import scipy.sparse as sp

from wavescat.backend import get_backend
from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations import osrc
from wavescat.bem.linalg import triangular
from wavescat.geometry.icosphere import icosphere


@pytest.fixture(scope="module")
def factors():
    """The mass matrix and two shifted OSRC matrices of one sphere: one pattern, one ordering."""
    mass, stiff = osrc.mass_and_stiffness(spaces.p1(icosphere(2)))
    return [osrc.factorise(m) for m in (mass, mass.astype(complex) - (0.3 + 0.1j) * stiff,
                                        mass.astype(complex) - (1.1 - 0.4j) * stiff)]


def superlu(lu, b):
    """SuperLU's solve of a complex block (a real factor solves its two parts)."""
    if lu.L.dtype.kind == "c":
        return lu.solve(b)
    return lu.solve(np.ascontiguousarray(b.real)) + 1j * lu.solve(np.ascontiguousarray(b.imag))


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    return request.getfixturevalue("emulated_gpu") if request.param == "emulated" else get_backend("gpu")


@pytest.mark.parametrize("threads", [128, 1024])
def test_factors_of_one_pattern_solve_together(device, factors, monkeypatch, threads):
    """Each factor's block of 33 columns (a full and a partial warp of columns) is its
    SuperLU solve, and the weighted sum is the sum of the solves: with 4 warps a block
    (most levels shared out by rows) and with 32 (most rows by their entries)."""
    monkeypatch.setattr(triangular, "THREADS", threads)
    xp = device.xp
    lus = [f.lu for f in factors]
    shared = triangular.SharedPatternLU(xp, lus)
    assert shared.lower.nlev > 4 and shared.upper.nlev > 4
    n = lus[0].shape[0]
    rng = np.random.default_rng(7)
    B = rng.standard_normal((3, n, 33)) + 1j * rng.standard_normal((3, n, 33))
    want = np.stack([superlu(lu, b) for lu, b in zip(lus, B)])
    got = device.asnumpy(shared.solve(xp.asarray(B)))
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
    w = np.array([0.5, -1j, 2.0])
    same = device.asnumpy(shared.solve(xp.asarray(B[0]), weights=w))
    want_sum = sum(wf * superlu(lu, B[0]) for wf, lu in zip(w, lus))
    assert np.abs(same - want_sum).max() <= 1e-12 * np.abs(want_sum).max()


def test_factors_of_other_patterns_are_refused(emulated_gpu, factors):
    other = osrc.factorise(osrc.mass_and_stiffness(spaces.p1(icosphere(1)))[0])
    with pytest.raises(ValueError, match="share"):
        triangular.SharedPatternLU(emulated_gpu.xp, [factors[0].lu, other.lu])


@pytest.mark.parametrize("in_workers", [False, True])
def test_mass_solve_rides_with_the_ntd_map(emulated_gpu, monkeypatch, in_workers):
    """The device's Burton-Miller product solves the mass matrix in the launch of the NtD
    map's resolvents (one pattern): the sum equals the host's separate solves; also with
    every factor held by an LU worker process (osrc.PROCESS_UNKNOWNS), its L and U fetched."""
    from wavescat.bem.formulations.burton_miller import solve_real_spd

    if in_workers:
        monkeypatch.setattr(osrc, "PROCESS_UNKNOWNS", 0)
    space = spaces.p1(icosphere(2))
    ntd = osrc.OsrcNtD(space, 3.0)
    mass_lu = osrc.factorise(ntd.mass)
    rng = np.random.default_rng(9)
    y, b = (rng.standard_normal((space.n_dofs, 33)) + 1j * rng.standard_normal((space.n_dofs, 33))
            for _ in range(2))
    want = ntd.apply_to_weak(y) + solve_real_spd(mass_lu, b)
    monkeypatch.setattr(osrc, "array_module", lambda a: emulated_gpu.xp)  # NumPy arrays "on the device"
    got = ntd.apply_to_weak_plus(y, mass_lu, b)
    # one launch of the mass matrix and the nine resolvents, not a fallback
    assert [s.count for s in ntd._device_solvers.values()] == [10]
    assert np.abs(got - want).max() <= 1e-11 * np.abs(want).max()


def by_scipy(factors, lower):
    """The level-ordered rows of a triangle built the plain way, through scipy's CSR: the
    reference for _Triangle's compiled construction from the CSC columns."""
    first = factors[0]
    n = first.shape[0]
    place = sp.csc_matrix((np.arange(first.nnz), first.indices, first.indptr), shape=first.shape).tocsr()
    place.sort_indices()
    level = np.zeros(n, np.int64)
    for i in (range(n) if lower else range(n - 1, -1, -1)):
        cols = place.indices[place.indptr[i]:place.indptr[i + 1]]
        level[i] = max([level[j] + 1 for j in cols if j != i], default=0)
    order = np.argsort(level, kind="stable")
    rows = np.repeat(np.arange(n), np.diff(place.indptr))
    off = place.indices != rows
    vals = np.stack([a.data.astype(complex)[place.data[off]] for a in factors])
    dinv = (np.zeros(2) if lower else
            np.stack([1.0 / a.data.astype(complex)[place.data[~off]] for a in factors]))
    return dict(order=order, lptr=np.searchsorted(level[order], np.arange(level.max() + 2)),
                ip=np.concatenate([[0], np.cumsum(np.bincount(rows[off], minlength=n))]),
                ix=place.indices[off], vals=vals, dinv=dinv, nlev=level.max() + 1, nnz=off.sum())


def random_triangles(n, seed):
    """L and U factors (CSC) of one random pattern, rows of each column shuffled as in
    SuperLU's supernodes, and three value sets: one real, two complex."""
    rng = np.random.default_rng(seed)
    pattern = sp.random(n, n, density=0.2, random_state=rng) + sp.eye(n)
    lower, upper = (sp.csc_matrix(t(pattern)) for t in (sp.tril, sp.triu))
    for a in (lower, upper):
        for j in range(n):
            rng.shuffle(a.indices[a.indptr[j]:a.indptr[j + 1]])
    def values(a):
        return [sp.csc_matrix((d, a.indices, a.indptr), shape=a.shape) for d in
                (rng.standard_normal(a.nnz) + 2,
                 *(rng.standard_normal(a.nnz) + 1j * rng.standard_normal(a.nnz) + 2 for _ in range(2)))]
    return values(lower), values(upper)


def assert_same_triangle(factors, lower):
    got = triangular._Triangle(np, factors, lower)
    for name, want in by_scipy(factors, lower).items():
        have = getattr(got, name)
        assert np.array_equal(have, want), name
        if isinstance(have, np.ndarray) and name != "dinv":
            assert have.dtype == (np.complex128 if name == "vals" else np.int32), name


@pytest.mark.parametrize("seed", [0, 1])
def test_triangle_of_a_random_pattern_is_the_plain_construction(seed):
    lower, upper = random_triangles(40, seed)
    assert_same_triangle(lower, lower=True)
    assert_same_triangle(upper, lower=False)


def test_triangles_of_osrc_factors_are_the_plain_construction(factors):
    lus = [f.lu for f in factors]
    assert any(np.any(np.diff(lus[0].L.indices[a:b]) < 0)  # SuperLU's columns are not sorted
               for a, b in zip(lus[0].L.indptr[:-1], lus[0].L.indptr[1:]))
    assert_same_triangle([lu.L for lu in lus], lower=True)
    assert_same_triangle([lu.U for lu in lus], lower=False)


def test_entries_off_the_triangle_or_diagonal_are_refused():
    lower, upper = random_triangles(12, 2)
    with pytest.raises(ValueError, match="wrong side"):
        triangular._Triangle(np, upper, lower=True)
    without = sp.csc_matrix(sp.triu(upper[0], k=1))  # no diagonal
    with pytest.raises(ValueError, match="diagonal"):
        triangular._Triangle(np, [without], lower=False)
