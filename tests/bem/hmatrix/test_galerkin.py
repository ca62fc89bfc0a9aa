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
