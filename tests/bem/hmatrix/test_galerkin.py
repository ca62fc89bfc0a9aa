"""assemble_hmatrix against the dense Galerkin matrices of wavescat.bem.assembly.operators."""
import functools

import numpy as np
import pytest

from wavescat.bem.assembly import operators
from wavescat.bem.assembly.hmatrix import assemble_hmatrix, batched_aca
from wavescat.bem.assembly.hmatrix.clouds import space_cloud
from wavescat.bem.assembly.hmatrix.galerkin import singular_correction
from wavescat.bem.assembly.hmatrix.kernels import PairKernel
from wavescat.bem.discretisation import quadrature, spaces
from wavescat.geometry.icosphere import icosphere

from .conftest import dense


@functools.cache
def dense_at_k3(name, space_of=spaces.p1):
    """The dense operator on `space_of(icosphere(3))` at k = 3 (a fresh space of the same
    mesh: the tests below each keep their own), assembled once for the tests that read it."""
    space = space_of(icosphere(3))
    return np.asarray(operators.assemble(name, space, space, 3.0, backend="cpu"))


@functools.cache
def double_layer_at_k3():
    """The CPU H-matrix of K on p1(icosphere(3)) at k = 3, eps 1e-5, eta 2, leaves of 16: the
    transpose's test and the symmetric operators' comparison read the same one (built once)."""
    space = spaces.p1(icosphere(3))
    return assemble_hmatrix("double_layer", space, space, 3.0, backend="cpu", eps=1e-5, eta=2.0,
                            leaf_size=16)


@pytest.mark.parametrize("name, k", [("single_layer", 2.0), ("hypersingular", 0.0)])
def test_hmatrix_matches_dense_galerkin(name, k):
    space = spaces.p1(icosphere(3))
    A = np.asarray(operators.assemble(name, space, space, k, backend="cpu"))
    eps = 1e-4
    H = assemble_hmatrix(name, space, space, k, backend="cpu", eps=eps, eta=2.0, leaf_size=16)
    assert H.report["blocks"]["admissible"] > 0
    x = np.random.default_rng(0).standard_normal(space.n_dofs)
    err = np.linalg.norm(H.matvec(x) - A @ x) / np.linalg.norm(A @ x)
    assert err <= 10 * eps, err


def test_the_operators_of_one_space_share_their_trees():
    """A solve's operators on one space at one k are built on one cluster and block tree
    (made once per mesh), and the reused trees give the H-matrix that fresh ones give."""
    mesh = icosphere(2)
    space = spaces.p1(mesh)
    options = dict(backend="cpu", eps=1e-6, eta=2.0, leaf_size=8)
    K = assemble_hmatrix("double_layer", space, space, 2.0, **options)
    W = assemble_hmatrix("hypersingular", space, space, 2.0, **options)
    assert K.block_tree is W.block_tree and K.report["blocks"]["admissible"] > 0
    assert assemble_hmatrix("double_layer", space, space, 3.0, **options).block_tree is not K.block_tree
    fresh = spaces.p1(icosphere(2))  # another mesh: trees of its own
    W_fresh = assemble_hmatrix("hypersingular", fresh, fresh, 2.0, **options)
    assert W_fresh.block_tree is not W.block_tree
    np.testing.assert_array_equal(W.to_dense(), W_fresh.to_dense())


def test_transpose_of_the_double_layer_is_the_adjoint(backend):
    """K' = K^T with one space as trial and test: the transposed H-matrix of K (factors
    shared, dense blocks transposed) is K^T block for block and applies the dense K' to
    the H-matrix's accuracy, for one vector and a block of them."""
    space = spaces.p1(icosphere(3))
    k, eps = 3.0, 1e-5
    H = double_layer_at_k3() if not backend.is_gpu else assemble_hmatrix(
        "double_layer", space, space, k, backend=backend, eps=eps, eta=2.0, leaf_size=16)
    assert H.report["blocks"]["admissible"] > 0
    Ht = H.T
    dense_h = H.to_dense()
    assert Ht.shape == H.shape[::-1]
    assert np.abs(Ht.to_dense() - dense_h.T).max() <= 1e-14 * np.abs(dense_h).max()
    adjoint = dense_at_k3("adjoint_double_layer")
    x = np.random.default_rng(1).standard_normal((space.n_dofs, 3)) + 0j
    for v in (x[:, 0], x):
        err = np.linalg.norm(Ht @ v - adjoint @ v) / np.linalg.norm(adjoint @ v)
        assert err <= 10 * eps, err
    if backend.is_gpu:  # with several GPUs, each part's transposed blocks stay on its own
        for p in Ht.parts:
            for g in p.dense + p.lowrank:
                assert all(a.device.id == p.device_id for a in (g.D, g.U, g.V) if a is not None)
        y = Ht @ backend.xp.asarray(x)  # a device vector, read by every part's GPU
        assert np.linalg.norm(backend.asnumpy(y) - adjoint @ x) <= 10 * eps * np.linalg.norm(adjoint @ x)


ALL_OPERATORS = ("single_layer", "double_layer", "adjoint_double_layer", "hypersingular")


@pytest.mark.parametrize("name", ALL_OPERATORS)
def test_hmatrix_matches_dense_at_a_complex_wavenumber(name, backend):
    """A damped wavenumber (Im k > 0) reaches the regular entries of the H-matrix (ACA blocks
    and near field) as it reaches the dense operator and the singular correction (CPU, and
    the GPU where there is one)."""
    space = spaces.p1(icosphere(2))
    A = np.asarray(operators.assemble(name, space, space, 5.0 + 0.5j, backend="cpu"))
    H = assemble_hmatrix(name, space, space, 5.0 + 0.5j, backend=backend, eps=1e-6, eta=2.0, leaf_size=8)
    assert H.report["blocks"]["admissible"] > 0
    x = np.random.default_rng(0).standard_normal(space.n_dofs)
    err = np.linalg.norm(H.matvec(x) - A @ x) / np.linalg.norm(A @ x)
    assert err <= 1e-5, err


@pytest.mark.parametrize("name", ALL_OPERATORS)
def test_hmatrix_entries_through_the_cuda_source_match_dense_at_a_complex_wavenumber(emulated_gpu, name):
    """What the GPU H-matrix compresses, uncompressed: the CUDA pair kernel's (hm_pairs, run on
    the CPU by the g++ emulation) regular entries of every dof pair plus the singular correction
    of touching and near pairs equal the dense operator at a damped wavenumber."""
    k = 5.0 + 0.5j
    space = spaces.p1(icosphere(2))
    # the CPU's every-ordered-pair path (test is not trial), as the GPU evaluates
    want = np.asarray(operators.assemble(name, space, spaces.p1(space.mesh), k, backend="cpu"))
    ev = operators.EntryEvaluator(name, space, space, k, backend=emulated_gpu)
    rule = quadrature.triangle_rule(ev.orders.regular)
    cloud = space_cloud(space, rule=rule)
    got = dense(PairKernel(name, k, cloud, cloud, emulated_gpu), space.n_dofs, space.n_dofs)
    rows, cols, vals = singular_correction(ev, name, k, space, space, rule, emulated_gpu, "double")
    np.add.at(got, (rows, cols), vals)
    assert np.abs(got - want).max() <= 1e-10 * np.abs(want).max()


@pytest.mark.parametrize("name", ["single_layer", "hypersingular"])
def test_symmetric_operators_compress_half_their_blocks(name, backend):
    """V and W of one space are symmetric: ACA runs on the admissible blocks above the
    diagonal and those below are their transposes, half the ACA steps of the same blocks
    compressed one by one (the double layer, not symmetric, compresses them all), and the
    H-matrix still applies the dense operator to its accuracy."""
    space = spaces.p1(icosphere(3))
    k, eps = 3.0, 1e-5
    kwargs = dict(backend=backend, eps=eps, eta=2.0, leaf_size=16)
    H = assemble_hmatrix(name, space, space, k, **kwargs)
    A = dense_at_k3(name)
    x = np.random.default_rng(3).standard_normal((space.n_dofs, 2)) + 0j
    assert np.linalg.norm(H @ x - A @ x) / np.linalg.norm(A @ x) <= 10 * eps
    # each admissible block is the transpose of its mirror (the dense near field carries the
    # singular quadrature, symmetric only to its accuracy)
    permuted = H.to_dense()[np.ix_(H.row_perm, H.col_perm)]
    far = H.block_tree.far
    top = np.abs(permuted).max()
    for r0, c0, m, n in zip(far["r0"], far["c0"], far["m"], far["n"]):
        block, mirror = permuted[r0:r0 + m, c0:c0 + n], permuted[c0:c0 + n, r0:r0 + m]
        assert np.abs(block - mirror.T).max() <= 1e-14 * top  # rounding of U V^T against V U^T
    # the double layer (not symmetric) on the same block tree compresses every block
    K = double_layer_at_k3() if not backend.is_gpu else assemble_hmatrix(
        "double_layer", space, space, k, **kwargs)
    assert H.report["blocks"]["admissible"] == K.report["blocks"]["admissible"] > 0
    assert H.report["aca_entries"] < 0.6 * K.report["aca_entries"]
    assert H.report["storage_bytes"] < 0.8 * K.report["storage_bytes"]  # mirrors share factors


@pytest.mark.parametrize("name, space_of", [("double_layer", spaces.p1), ("hypersingular", spaces.p1),
                                            ("single_layer", spaces.p0)])
def test_blocks_compressed_whole_match_those_of_the_point_matrix(name, space_of, monkeypatch):
    """On the CPU a level's admissible blocks go to ACA by their point kernel matrices
    (point_aca.py) or whole (every entry by element pairs, then ACA on the stored block),
    whichever its probes found cheaper. Either way the H-matrix is the same to its accuracy
    (the icosphere's symmetry makes ties of ACA's pivots, which rounding breaks either way)
    and applies the dense operator to that accuracy; the point matrices take several times
    fewer kernel evaluations than whole blocks, and the probes keep the way of fewer."""
    space = space_of(icosphere(3))
    k, eps = 3.0, 1e-5
    kwargs = dict(backend="cpu", eps=eps, eta=2.0, leaf_size=8)

    class Whole(batched_aca._Route):  # every level whole where its clusters allow
        def __init__(self, kernel, far, sel):
            super().__init__(kernel, far, sel)
            self.whole, self.decided = batched_aca._clusters_partition(far, sel), True

    monkeypatch.setattr(batched_aca._Route, "PROBE", 10**9)  # no level large enough to probe
    points = assemble_hmatrix(name, space, space, k, **kwargs)
    monkeypatch.setattr(batched_aca, "_Route", Whole)
    whole = assemble_hmatrix(name, space, space, k, **kwargs)
    monkeypatch.undo()
    monkeypatch.setattr(batched_aca._Route, "PROBE", 4)
    routed = assemble_hmatrix(name, space, space, k, **kwargs)
    compressed = sum(level["blocks"] for level in points.report["blocks"]["aca_levels"][0])
    assert points.report["blocks"]["aca_whole"] == 0
    assert whole.report["blocks"]["aca_whole"] > 0.9 * compressed
    assert points.report["kernel_evaluations"] < whole.report["kernel_evaluations"]
    assert routed.report["kernel_evaluations"] < whole.report["kernel_evaluations"]
    A = dense_at_k3(name, space_of)
    x = np.random.default_rng(4).standard_normal(space.n_dofs)
    b = whole.to_dense()
    for H in (points, routed):
        assert np.abs(H.to_dense() - b).max() <= eps * np.abs(b).max()
    for H in (points, whole, routed):
        assert np.linalg.norm(H @ x - A @ x) / np.linalg.norm(A @ x) <= 10 * eps
