"""HODLR inverses (bem/linalg/hodlr.py) against dense algebra: an operator known only by its
products is approximated to its tolerance, and the inverse solves it to that tolerance."""
import numpy as np
import pytest

from wavescat.backend import to_host
from wavescat.bem.assembly.hmatrix.cluster_tree import build_cluster_tree
from wavescat.bem.linalg.hodlr import hodlr_inverses
from wavescat.geometry.icosphere import icosphere


def _kernel_matrix(points, k):
    """I + a smooth-off-the-diagonal oscillatory kernel (a second-kind operator's shape)."""
    r = np.linalg.norm(points[:, None] - points[None], axis=-1)
    n = len(points)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(r > 0, np.exp(1j * k * r) / (4 * np.pi * np.maximum(r, 1e-300)), 0)
    return np.eye(n) * 2.0 + g / n


@pytest.fixture(scope="module")
def two_operators():
    points = icosphere(3).vertices  # 642 points
    a = _kernel_matrix(points, 6.0)
    b = a.T + np.diag(np.linspace(0.5, 1.5, len(points)))
    return points, [a, b]


def _build(points, mats, tol, leaf_size=40, dtype=np.complex128, xp=np):
    on = [xp.asarray(m) for m in mats]
    return hodlr_inverses(lambda x: [m @ x for m in on],
                          lambda xs: [m.T @ x for m, x in zip(on, xs)],
                          len(mats), build_cluster_tree(points, points, leaf_size), xp, dtype,
                          tol, first_samples=32)


@pytest.mark.parametrize("tol", [1e-4, 1e-7])
def test_inverse_to_the_tolerance(two_operators, tol, backend):
    """||I - P^{-1} A|| and the solves' residuals, of A and of A^T, at the truncation; on
    the CPU and on the GPU (CuPy)."""
    points, mats = two_operators
    xp = backend.xp
    inverses, stats = _build(points, mats, tol, xp=xp)
    n = len(points)
    assert stats["levels"] >= 3 and len(stats["ranks"]) == 2
    for a, inv in zip(mats, inverses):
        ident = to_host(inv.solve(xp.asarray(a.astype(complex))))
        error = np.linalg.norm(np.eye(n) - ident, 2)
        assert error < 30 * tol, (tol, error)
        x = np.random.default_rng(2).standard_normal((n, 3)) + 0j
        for transpose, op in ((False, a), (True, a.T)):
            y = to_host(inv.solve(xp.asarray(x), transpose))
            assert np.linalg.norm(op @ y - x) <= 30 * tol * np.linalg.norm(x)
    if tol >= 1e-4:  # fewer entries than the two dense matrices, even this small
        assert stats["bytes"] < 2 * n * n * 16, stats


def test_single_precision_storage(two_operators):
    points, mats = two_operators
    inverses, _ = _build(points, mats, 1e-4, dtype=np.complex64)
    a = mats[0]
    n = len(points)
    assert np.linalg.norm(np.eye(n) - inverses[0].solve(a.astype(np.complex64)), 2) < 3e-3
