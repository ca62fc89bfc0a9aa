"""The CPU's dense near field by element pairs, and its ACA blocks from the point matrices,
equal the per-entry sums of the dof clouds."""
import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix.clouds import space_cloud
from wavescat.bem.assembly.hmatrix.cluster_tree import build_cluster_tree
from wavescat.bem.assembly import operators
from wavescat.bem.assembly.hmatrix import assemble_hmatrix, batched_aca
from wavescat.bem.assembly.hmatrix.kernels import OPERATORS, PairKernel
from wavescat.bem.assembly.hmatrix.point_aca import point_aca
from wavescat.bem.discretisation import quadrature, spaces
from wavescat.geometry.icosphere import icosphere

from .conftest import dense

LEAF = 12


@pytest.fixture(scope="module")
def sphere_spaces():
    mesh = icosphere(1)
    return {"P0": spaces.p0(mesh), "P1": spaces.p1(mesh)}


def shuffled_cloud(space, seed):
    """The workflow's regular rule, dofs renumbered (as the cluster tree does)."""
    cloud = space_cloud(space, rule=quadrature.triangle_rule(quadrature.QuadratureOrders().regular))
    return cloud.permuted(np.random.default_rng(seed).permutation(cloud.n))


def some_blocks(n_rows, n_cols, seed, symmetric=False):
    """Leaf-by-leaf blocks over part of the matrix (the rest stands for admissible blocks),
    the last row and column leaves shorter than the others; symmetric: the block at the
    transposed place of each, as a block tree of one space has."""
    r, c = np.meshgrid(np.arange(0, n_rows, LEAF), np.arange(0, n_cols, LEAF), indexing="ij")
    keep = np.random.default_rng(seed).random(r.shape) < 0.6
    if symmetric:
        keep |= keep.T
    keep = keep.ravel()
    near = {"r0": r.ravel()[keep], "c0": c.ravel()[keep]}
    near["m"] = np.minimum(LEAF, n_rows - near["r0"])
    near["n"] = np.minimum(LEAF, n_cols - near["c0"])
    return near


# W (surface curls) is a P1 operator
SPACES = [(name, kinds) for name in OPERATORS for kinds in (("P1", "P1"), ("P0", "P1"), ("P1", "P0"))
          if name != "hypersingular" or kinds == ("P1", "P1")]


@pytest.mark.parametrize("k", [0.0, 3.0, 3.0 + 0.5j])
@pytest.mark.parametrize("name, kinds", SPACES)
def test_element_pairs_give_the_per_entry_near_field(sphere_spaces, name, kinds, k):
    """Every entry of the chosen blocks, Laplace, Helmholtz and damped, test and trial spaces
    differing; zero outside the blocks (padding of the shorter ones); fewer kernel
    evaluations than the per-entry sums."""
    test_kind, trial_kind = kinds
    test = shuffled_cloud(sphere_spaces[test_kind], 1)
    trial = shuffled_cloud(sphere_spaces[trial_kind], 2)
    kern = PairKernel(name, k, test, trial, get_backend("cpu"))
    want_all = dense(kern, test.n, trial.n)  # the per-entry cloud sums
    near = some_blocks(test.n, trial.n, 3)
    got = np.zeros((len(near["r0"]), LEAF, LEAF), kern.dtype)
    before = kern.evaluations
    kern.add_near_field(near, got)
    assert np.abs(got - blocks_of(want_all, near)).max() <= 1e-12 * np.abs(want_all).max()
    assert 0 < kern.evaluations - before < np.sum(near["m"] * near["n"]) * kern.qq


def blocks_of(A, near):
    out = np.zeros((len(near["r0"]), LEAF, LEAF), A.dtype)
    for b, (r0, m, c0, n) in enumerate(zip(near["r0"], near["m"], near["c0"], near["n"])):
        out[b, :m, :n] = A[r0:r0 + m, c0:c0 + n]
    return out


@pytest.mark.parametrize("symmetric, share", [(True, 0.6), (False, 0.9)])
@pytest.mark.parametrize("k", [0.0, 3.0 + 0.5j])
@pytest.mark.parametrize("name", list(OPERATORS))
def test_one_space_takes_both_orders_of_a_pair_from_one_evaluation(name, k, symmetric, share):
    """Test and trial clouds equal (two objects, as assemble_hmatrix builds them; dofs in
    cluster-tree order): a block below the diagonal whose mirror is among the blocks comes
    from the swapped pairs of the mirror (K <-> K' swapped), the same entries for fewer
    kernel evaluations (half where every block has its mirror); one without a mirror (not
    symmetric: the admissible blocks of a level summed whole) is summed itself."""
    cloud = space_cloud(spaces.p1(icosphere(2)), rule=quadrature.triangle_rule(4))
    perm = build_cluster_tree(cloud.lo, cloud.hi, LEAF).perm  # leaves of nearby dofs
    test, trial = cloud.permuted(perm), cloud.permuted(perm)
    near = some_blocks(test.n, test.n, 3, symmetric=symmetric)
    got = {}
    for same in (True, False):
        kern = PairKernel(name, k, test, trial, get_backend("cpu"))
        kern.elements.same = same
        got[same] = np.zeros((len(near["r0"]), LEAF, LEAF), kern.dtype)
        kern.add_near_field(near, got[same])
        got[same, "evaluations"] = kern.evaluations
    want_all = dense(kern, test.n, test.n)
    assert np.abs(got[True] - blocks_of(want_all, near)).max() <= 1e-12 * np.abs(want_all).max()
    assert got[True, "evaluations"] < share * got[False, "evaluations"]


@pytest.mark.parametrize("k", [0.0, 3.0 + 0.5j])
@pytest.mark.parametrize("name, kinds", SPACES)
def test_point_matrix_aca_gives_the_admissible_blocks(name, kinds, k, monkeypatch):
    """ACA of the admissible blocks' point kernel matrices, summed into dofs (point_aca.py),
    gives the H-matrix of the dense operator to its tolerance, for any two spaces, Laplace
    and damped Helmholtz; with the factors' first width at 2 nearly every block is redone
    at full width."""
    mesh = icosphere(2)
    test, trial = ({"P0": spaces.p0, "P1": spaces.p1}[kind](mesh) for kind in kinds)
    monkeypatch.setattr(batched_aca._Route, "PROBE", 10**9)  # every block by its point matrix
    monkeypatch.setattr(batched_aca, "point_aca", lambda *args: point_aca(*args[:-1], 2))
    eps = 1e-6
    H = assemble_hmatrix(name, trial, test, k, backend="cpu", eps=eps, eta=2.0, leaf_size=8)
    assert H.report["blocks"]["admissible"] > 100 and H.report["blocks"]["aca_whole"] == 0
    A = np.asarray(operators.assemble(name, trial, test, k, backend="cpu"))
    assert np.linalg.norm(H.to_dense() - A) <= 10 * eps * np.linalg.norm(A)


@pytest.mark.parametrize("name", list(OPERATORS))
def test_cpu_singular_correction_is_the_per_entry_one(sphere_spaces, name):
    """exact - regular over the touching and near pairs: the regular part by element pairs
    (the CPU's) equals the element spaces' per-entry sums (the GPU's), damped wavenumber."""
    import scipy.sparse as sp

    from wavescat.bem.assembly import operators
    from wavescat.bem.assembly.hmatrix.galerkin import _correction_by_entries, singular_correction

    space, k, cpu = sphere_spaces["P1"], 3.0 + 0.5j, get_backend("cpu")
    ev = operators.EntryEvaluator(name, space, space, k, backend=cpu)
    rule = quadrature.triangle_rule(ev.orders.regular)
    n = space.n_dofs

    def matrix(rows, cols, vals):
        return sp.coo_matrix((vals, (rows, cols)), shape=(n, n)).toarray()

    pa, pb, vals = _correction_by_entries(ev, name, k, space, space, rule, cpu, "double", 1 << 21)
    rows = np.repeat(space.element_dofs[pa], 3, axis=1).ravel()
    cols = np.tile(space.element_dofs[pb], 3).ravel()
    want = matrix(rows, cols, vals)
    got = matrix(*singular_correction(ev, name, k, space, space, rule, cpu, "double"))
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()
