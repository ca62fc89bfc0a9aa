"""Batched restarted GMRES against direct solves."""
import numpy as np
import pytest

from wavescat.bem.linalg.gmres import gmres
from wavescat.errors import InputError, SolverError


def _system(n=80, r=5, seed=0):
    rng = np.random.default_rng(seed)
    a = np.eye(n) * 3 + (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) / np.sqrt(n)
    b = rng.standard_normal((n, r)) + 1j * rng.standard_normal((n, r))
    return a, b


@pytest.mark.parametrize("restart", [5, 100])
def test_batched_gmres_matches_direct_solve(backend, restart):
    xp = backend.xp
    a, b = _system()
    b[:, 2] = 0.0  # a zero right-hand side converges at once to zero
    res = gmres(lambda v: xp.asarray(a) @ v, xp.asarray(b), xp=xp, tol=1e-10, restart=restart,
                maxiter=400)
    x = backend.asnumpy(res.x)
    exact = np.linalg.solve(a, b)
    assert np.linalg.norm(x - exact) < 1e-8 * np.linalg.norm(exact)
    assert np.all(res.residuals <= 1e-10)
    assert res.iterations[2] == 0 and np.all(res.iterations[[0, 1, 3, 4]] > 0)
    # the residual estimates decrease monotonically within a restart cycle
    h = res.history[0][:restart]
    assert np.all(np.diff(h) <= 1e-12)


def test_single_vector_and_identity():
    a, b = _system(r=1)
    res = gmres(lambda v: v, b[:, 0], tol=1e-8)
    assert res.x.shape == b[:, 0].shape and res.iterations[0] == 1
    assert np.allclose(res.x, b[:, 0])


def test_non_convergence_reports_residual():
    n = 60
    shift = np.roll(np.eye(n), 1, axis=0)  # cyclic shift: GMRES stalls until n iterations
    b = np.zeros(n)
    b[0] = 1.0
    with pytest.raises(SolverError, match=r"maxiter = 10.*relative residual 1\.000e\+00"):
        gmres(lambda v: shift @ v, b, tol=1e-6, restart=5, maxiter=10)


def test_default_settings_keep_the_whole_basis():
    """The cyclic shift of 150 unknowns: GMRES makes no progress until step 150, so it only
    converges without restarts (the defaults: restart = maxiter) and stalls at residual 1
    restarted every 100 steps."""
    n = 150
    shift = np.roll(np.eye(n), 1, axis=0)
    b = np.zeros(n)
    b[0] = 1.0
    res = gmres(lambda v: shift @ v, b)
    assert res.iterations[0] == n and np.allclose(res.x, np.eye(n)[n - 1])
    with pytest.raises(SolverError, match=r"maxiter = 300.*relative residual 1\.000e\+00"):
        gmres(lambda v: shift @ v, b, restart=100, maxiter=300)


def test_a_column_that_stops_early_takes_nothing_from_unfilled_basis_slots():
    """A right-hand side that is an eigenvector stops after one step while the others run
    on: the basis slots it leaves unfilled are weighted by 0, so whatever memory they came
    from (here uninitialised memory holding NaN) must not reach its solution."""
    a, b = _system(r=3)
    b[:, 1] = np.linalg.eig(a)[1][:, 0]

    class NanEmpty:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(shape, dtype=float):
            return np.full(shape, np.nan, dtype)

    res = gmres(lambda v: a @ v, b, xp=NanEmpty(), tol=1e-10, restart=50, maxiter=300)
    assert res.iterations[1] == 1 and res.iterations.max() > 5
    exact = np.linalg.solve(a, b)
    assert np.linalg.norm(res.x - exact) < 1e-8 * np.linalg.norm(exact)


def test_rejects_bad_settings():
    with pytest.raises(InputError, match="tol"):
        gmres(lambda v: v, np.ones(3), tol=2.0)
    with pytest.raises(InputError, match="restart"):
        gmres(lambda v: v, np.ones(3), restart=0)


@pytest.mark.parametrize("poison", ["operator", "right-hand side"])
def test_non_finite_residual_stops_at_once(poison):
    a, b = _system(r=3)
    products = []

    def matvec(v):
        products.append(v.shape[1])
        out = a @ v
        if poison == "operator" and len(products) == 2:
            out[5] = np.nan  # one bad entry, from the second product on
        return out

    if poison == "right-hand side":
        b[7, 1] = np.inf
    with pytest.raises(SolverError, match=r"GMRES stopped: the residual of right-hand side "
                                          r"\d of 3 is (nan|inf) after \d operator application"):
        gmres(matvec, b, tol=1e-10, restart=20, maxiter=500)
    assert len(products) == (2 if poison == "operator" else 0)
