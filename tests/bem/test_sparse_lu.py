"""The OSRC maps' sparse LU in nested-dissection order (bem/linalg/sparse_lu.py, osrc.factorise)
against the factorisation it replaced (SuperLU with minimum degree, issue 42): the same
solutions, the factors of the composite permutations, less fill, one ordering per pattern,
and the same rigid-sphere solve (far field and GMRES iterations)."""
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations import burton_miller, osrc
from wavescat.bem.linalg import sparse_lu
from wavescat.configuration.case import Case
from wavescat.errors import InputError
from wavescat.geometry.icosphere import icosphere
from wavescat.solve.driver import solve_frequency


def mmd_lu(matrix):
    """The factorisation before issue 42: SuperLU's minimum degree on A^T + A, diagonal pivots."""
    return spla.splu(sp.csc_matrix(matrix), permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                     options={"SymmetricMode": True})


@pytest.fixture(scope="module")
def matrices():
    """The mass matrix and a resolvent M - b S of a 2,562-vertex sphere."""
    mass, stiff = osrc.mass_and_stiffness(spaces.p1(icosphere(4)))
    return {"mass": mass.tocsc(), "resolvent": (mass - (0.3 + 0.1j) * stiff / 4.0).tocsc()}


def test_ordering_is_a_permutation_made_once_per_pattern(matrices):
    mass, resolvent = matrices["mass"], matrices["resolvent"]
    order = sparse_lu.nested_dissection(mass)
    n = mass.shape[0]
    assert order.shape == (n,) and np.array_equal(np.sort(order), np.arange(n))
    assert not np.array_equal(order, np.arange(n))  # it does reorder
    assert sparse_lu.nested_dissection(resolvent) is order  # one pattern, one ordering
    # METIS is deterministic: made afresh (a worker process does so), the same ordering
    assert np.array_equal(sparse_lu.metis_order(sparse_lu.pattern(resolvent)), order)


@pytest.mark.parametrize("name", ["mass", "resolvent"])
def test_solves_the_systems_the_old_factorisation_solved(matrices, name):
    """One column and a block, real and complex matrices: within 1e-12 of the MMD solve."""
    a = matrices[name]
    rng = np.random.default_rng(7)
    b = rng.standard_normal((a.shape[0], 3)) + 1j * rng.standard_normal((a.shape[0], 3))
    if a.dtype.kind == "f":
        b = b.real
    lu, old = osrc.factorise(a), mmd_lu(a)
    for rhs in (b[:, 0], b):
        want = old.solve(np.ascontiguousarray(rhs))
        assert np.linalg.norm(lu.solve(rhs) - want) <= 1e-12 * np.linalg.norm(want)


@pytest.mark.parametrize("name", ["mass", "resolvent"])
def test_factors_of_the_composite_permutations(matrices, name):
    """Pr A Pc = L U with the perm_r and perm_c that triangular.py reads (SciPy's convention)."""
    a = matrices[name]
    lu = osrc.factorise(a).lu
    n = a.shape[0]
    pr = sp.csc_matrix((np.ones(n), (lu.perm_r, np.arange(n))))
    pc = sp.csc_matrix((np.ones(n), (np.arange(n), lu.perm_c)))
    assert abs(pr @ a @ pc - lu.L @ lu.U).max() <= 1e-12 * abs(a).max()


def test_factors_of_one_pattern_share_permutations_and_pattern(matrices):
    """The mass matrix and a resolvent: one device launch solves both (triangular.py)."""
    m, r = (osrc.factorise(matrices[name]).lu for name in ("mass", "resolvent"))
    assert np.array_equal(m.perm_r, r.perm_r) and np.array_equal(m.perm_c, r.perm_c)
    for part in ("L", "U"):
        assert np.array_equal(getattr(m, part).indices, getattr(r, part).indices)


def test_less_fill_than_minimum_degree(matrices):
    a = matrices["resolvent"]
    new, old = osrc.factorise(a).lu.nnz, mmd_lu(a).nnz
    assert new < 0.9 * old, (new, old)  # measured 146,966 against 189,388


def test_bad_input_is_refused():
    with pytest.raises(InputError, match="square"):
        sparse_lu.nested_dissection(sp.csc_matrix(np.ones((3, 4))))
    a = sp.identity(4, format="csc")
    for order in ([0, 1, 2], [0, 1, 1, 3], [0.0, 1.0, 2.0, 3.0]):
        with pytest.raises(InputError, match="permutation"):
            sparse_lu.OrderedLU(a, order)


def test_rigid_sphere_solve_as_with_minimum_degree(monkeypatch):
    """The OSRC-preconditioned Burton-Miller solve of a rigid sphere at ka = 3: the far field
    and GMRES's iteration count as with the minimum-degree factors."""
    case = Case.from_dict({"incident": {"direction": [0.0, 0.6, 0.8]},
                           "receivers": {"plane": "xz", "count": 91},
                           "solver": {"operator_format": "dense", "backend": "cpu"}},
                          {"sound_speed": 1500.0})
    frequency = 3.0 * 1500.0 / (2 * np.pi)
    new = solve_frequency(case, icosphere(3), frequency)

    calls = []

    def factorise_mmd(matrix):
        calls.append(matrix.shape)
        return osrc.SparseLU(mmd_lu(matrix), matrix.dtype)

    monkeypatch.setattr(osrc, "factorise", factorise_mmd)
    monkeypatch.setattr(burton_miller, "factorise", factorise_mmd)
    old = solve_frequency(case, icosphere(3), frequency)
    assert len(calls) == 10  # the map's nine resolvents and the mass matrix, the old way
    assert np.array_equal(new.iterations, old.iterations)
    assert np.abs(new.far_field - old.far_field).max() <= 1e-9 * np.abs(old.far_field).max()
