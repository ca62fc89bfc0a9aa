"""assemble_hmatrix against the dense Galerkin matrices of wavescat.bem.operators."""
import numpy as np
import pytest

from wavescat.bem import operators, spaces
from wavescat.bem.hmatrix import assemble_hmatrix
from wavescat.geometry.icosphere import icosphere


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


def _hmatrix_vs_dense(name, k, backend, subdivisions):
    space = spaces.p1(icosphere(subdivisions))
    A = np.asarray(operators.assemble(name, space, space, k, backend="cpu"))
    eps = 1e-6
    H = assemble_hmatrix(name, space, space, k, backend=backend, eps=eps, eta=2.0, leaf_size=16)
    assert H.report["blocks"]["admissible"] > 0
    x = np.random.default_rng(0).standard_normal(space.n_dofs)
    return np.linalg.norm(H.matvec(x) - A @ x) / np.linalg.norm(A @ x)


@pytest.mark.parametrize("name", ALL_OPERATORS)
def test_hmatrix_matches_dense_at_a_complex_wavenumber(name):
    """A damped wavenumber (Im k > 0) reaches the regular entries of the H-matrix (ACA blocks
    and near field) as it reaches the dense operator and the singular correction."""
    err = _hmatrix_vs_dense(name, 5.0 + 0.5j, "cpu", 2)
    assert err <= 1e-5, err


@pytest.mark.parametrize("name", ALL_OPERATORS)
def test_hmatrix_through_the_cuda_source_matches_dense_at_a_complex_wavenumber(emulated_gpu, name):
    """The same through the CUDA pair kernel (hm_pairs), run on the CPU by the g++ emulation."""
    err = _hmatrix_vs_dense(name, 5.0 + 0.5j, emulated_gpu, 2)
    assert err <= 1e-5, err
