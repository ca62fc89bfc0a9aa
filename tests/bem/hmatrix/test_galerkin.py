"""assemble_hmatrix against the dense Galerkin matrices of wavescat.bem.operators."""
import numpy as np
import pytest

from wavescat.bem import operators, quadrature, spaces
from wavescat.bem.hmatrix import assemble_hmatrix
from wavescat.bem.hmatrix.clouds import space_cloud
from wavescat.bem.hmatrix.galerkin import singular_correction
from wavescat.bem.hmatrix.kernels import PairKernel
from wavescat.geometry.icosphere import icosphere

from .conftest import dense


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
