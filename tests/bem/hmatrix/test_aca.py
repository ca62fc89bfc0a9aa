import numpy as np
import pytest

from wavescat.bem.assembly.hmatrix.aca import aca_plus, aca_plus_batched, recompress


def helmholtz_block(m, n, k=5.0, shift=3.0, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random((m, 3))
    y = rng.random((n, 3)) + np.array([shift, 0, 0])
    r = np.linalg.norm(x[:, None] - y[None], axis=2)
    return np.exp(1j * k * r) / r


@pytest.mark.parametrize("eps", [1e-3, 1e-4, 1e-6])
def test_aca_plus_reaches_the_tolerance(eps):
    A = helmholtz_block(300, 200)
    U, V = aca_plus(lambda i, j: A[i, j], 300, 200, eps)
    err = np.linalg.norm(U @ V.T - A) / np.linalg.norm(A)
    assert err <= 3 * eps
    assert U.shape[1] < 60  # far from full rank


def test_rank_deficient_block_gives_its_rank():
    rng = np.random.default_rng(1)
    A = rng.standard_normal((80, 3)) @ rng.standard_normal((3, 60))
    U, V = aca_plus(lambda i, j: A[i, j], 80, 60, 1e-10, zero_tol=1e-12)
    assert U.shape[1] == 3
    assert np.allclose(U @ V.T, A, atol=1e-12)


def test_zero_block_has_rank_zero():
    U, V = aca_plus(lambda i, j: np.zeros(len(i)), 40, 30, 1e-4)
    assert U.shape == (40, 0) and V.shape == (30, 0)


def test_restart_finds_a_second_component():
    """A block whose first reference column sees only one of two disjoint parts:
    plain partial pivoting stops early, ACA+ restarts its references."""
    A = np.zeros((40, 40))
    A[:20, :20] = np.outer(np.arange(1, 21), np.arange(1, 21))
    A[20:, 20:] = np.outer(np.ones(20), np.linspace(1, 2, 20))
    U, V = aca_plus(lambda i, j: A[i, j], 40, 40, 1e-8)
    assert np.linalg.norm(U @ V.T - A) <= 1e-8 * np.linalg.norm(A)


def test_batched_blocks_of_different_sizes_match_single_ones():
    blocks = [helmholtz_block(m, n, seed=s) for s, (m, n) in enumerate([(50, 40), (37, 50), (50, 50)])]
    big = np.zeros((150, 150), complex)
    r0, c0 = np.array([0, 50, 100]), np.array([0, 50, 100])
    for b, A in enumerate(blocks):
        big[r0[b]:r0[b] + A.shape[0], c0[b]:c0[b] + A.shape[1]] = A
    res = aca_plus_batched(lambda i, j: big[i, j], r0, np.array([50, 37, 50]), c0,
                           np.array([40, 50, 50]), 1e-5, np, np.complex128)
    for b, A in enumerate(blocks):
        m, n = A.shape
        r = res.rank[b]
        approx = res.U[b, :m, :r] @ res.V[b, :n, :r].T
        assert np.linalg.norm(approx - A) <= 3e-5 * np.linalg.norm(A)
        assert np.all(res.U[b, m:] == 0) and np.all(res.V[b, n:] == 0)


def test_recompression_lowers_rank_and_keeps_accuracy():
    A = helmholtz_block(200, 150, k=8.0)
    eps = 1e-5
    U, V = aca_plus(lambda i, j: A[i, j], 200, 150, eps)
    U2, V2, r = recompress(np, U[None], V[None], np.array([U.shape[1]]), eps)
    r = int(r[0])
    assert r < U.shape[1]
    err = np.linalg.norm(U2[0, :, :r] @ V2[0, :, :r].T - A) / np.linalg.norm(A)
    assert err <= 3 * eps
    # the recompressed rank is the SVD's eps-rank (within one)
    s = np.linalg.svd(A, compute_uv=False)
    tail = np.sqrt(np.cumsum(s[::-1] ** 2))[::-1]
    assert abs(r - np.sum(tail > eps * tail[0])) <= 1


def test_blocks_of_very_different_ranks_in_one_batch():
    """A rank-1 block finishes long before a Helmholtz block of the same batch: it is set
    aside and the batch gathered down to the running block; both come back exact, and a
    step costs a bounded number of host round trips."""
    A = helmholtz_block(60, 60, k=12.0, shift=1.5)
    rng = np.random.default_rng(3)
    R = np.outer(rng.standard_normal(60), rng.standard_normal(60))
    big = np.zeros((120, 120), complex)
    big[:60, :60], big[60:, 60:] = A, R
    res = aca_plus_batched(lambda i, j: big[i, j], np.array([0, 60]), np.array([60, 60]),
                           np.array([0, 60]), np.array([60, 60]), 1e-6, np, np.complex128,
                           zero_tol=1e-13)
    assert res.rank[1] == 1 and res.rank[0] > 10
    for b, M in enumerate((A, R)):
        r = res.rank[b]
        approx = res.U[b, :, :r] @ res.V[b, :, :r].T
        assert np.linalg.norm(approx - M) <= 3e-6 * np.linalg.norm(M)
        assert np.all(res.U[b, :, r:] == 0) and np.all(res.V[b, :, r:] == 0)
    assert res.host_syncs <= 3 * res.steps
