"""Restarted GMRES for several right-hand sides at once, on any array module.

Each column keeps its own Krylov space, Hessenberg matrix and Givens rotations, but the
operator is applied to all running columns together (one matrix-matrix product instead of
many matrix-vector products), which is what makes many incidence directions cheap; a column
that has converged leaves the product at once. Orthogonalisation is classical Gram-Schmidt
done twice (CGS2: as stable as modified Gram-Schmidt, and batched matrix products too). The
Krylov basis grows with the iterations (capacity doubled when full), so a run that converges
in 15 iterations never holds the `restart` + 1 vectors of a full cycle; `basis_bytes` caps
it, restarting earlier where a full cycle would not fit. The small Hessenberg work runs on
the host.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...backend import to_host
from ...defaults import GMRES
from ...errors import InputError, SolverError
from ...progress import progress

# Batches of incidence directions: the Krylov bases take at most this share of the memory
# available when the solve starts (the rest is the operator products' working space)...
KRYLOV_MEMORY_SHARE = 0.5
# ...and a batch is as wide as fits a basis of this many vectors per direction (OSRC
# Burton-Miller converges in 15-20 iterations; more vectors are used where they fit, up to
# the restart length), plus about this many vectors of working space per direction.
KRYLOV_MIN_VECTORS = 32
WORK_VECTORS = 12


@dataclass
class GmresResult:
    x: object  # (n, r) array of the backend
    iterations: np.ndarray  # (r,) operator applications per column (inner iterations)
    residuals: np.ndarray  # (r,) final true relative residual |b - A x| / |b|
    history: list = field(default_factory=list)  # per column: estimated residual per iteration


def _check(tol, restart, maxiter):
    if not 0 < tol < 1:
        raise InputError(f"GMRES tol = {tol!r}: must lie in (0, 1)")
    if int(restart) != restart or restart < 1:
        raise InputError(f"GMRES restart = {restart!r}: must be a positive integer")
    if int(maxiter) != maxiter or maxiter < 1:
        raise InputError(f"GMRES maxiter = {maxiter!r}: must be a positive integer")


def _stop_if_not_finite(residual, columns, products, r):
    """A NaN or inf residual never recovers: stop at once instead of using up maxiter."""
    bad = np.flatnonzero(~np.isfinite(residual))
    if len(bad):
        q = bad[0]
        raise SolverError(
            f"GMRES stopped: the residual of right-hand side {columns[q]} of {r} is "
            f"{residual[q]} after {int(products[q])} operator application(s); the operator, "
            "preconditioner or right-hand side holds NaN or inf (check the mesh and the "
            "solver settings)")


def gmres(matvec, b, *, xp=np, tol: float = GMRES["tol"], restart: int = GMRES["restart"],
          maxiter: int = GMRES["maxiter"], x0=None, basis_bytes: int | None = None) -> GmresResult:
    """Solve A x = b for b of shape (n,) or (n, r); `matvec` maps (n, r') -> (n, r').

    Stops a column when |b - A x| <= tol |b|. Raises SolverError when some column has
    used `maxiter` operator applications without converging, naming the residual reached,
    and at the first residual that is not finite. `basis_bytes` bounds the memory of the
    Krylov basis (all columns together): a cycle restarts before the basis would outgrow it.
    """
    _check(tol, restart, maxiter)
    vector = b.ndim == 1
    b = b[:, None] if vector else b
    n, r = b.shape
    dtype = np.result_type(b.dtype, np.complex64)
    b = b.astype(dtype, copy=False)
    x = xp.zeros((n, r), dtype=dtype) if x0 is None else xp.array(x0, dtype=dtype).reshape(n, r)
    bnorm = to_host(xp.linalg.norm(b, axis=0))
    bnorm[bnorm == 0] = 1.0
    iterations = np.zeros(r, dtype=np.int64)
    residuals = np.ones(r)
    converged = np.zeros(r, dtype=bool)
    history = [[] for _ in range(r)]
    fresh = x0 is None
    vector_bytes = n * np.dtype(dtype).itemsize
    # one tick per operator application (a tqdm bar closes itself if an error escapes)
    bar = progress(maxiter, f"GMRES ({r} right-hand side{'s' if r > 1 else ''})", "it")
    while True:
        active = np.flatnonzero(~converged)
        if len(active) == 0:
            break
        ia = xp.asarray(active)
        res = b[:, ia] if fresh else b[:, ia] - matvec(x[:, ia])
        fresh = False
        beta = to_host(xp.linalg.norm(res, axis=0))
        residuals[active] = beta / bnorm[active]
        _stop_if_not_finite(residuals[active], active, iterations[active], r)
        done = residuals[active] <= tol
        converged[active[done]] = True
        exhausted = iterations[active] >= maxiter
        if np.any(exhausted & ~done):
            bad = active[exhausted & ~done]
            worst = bad[np.argmax(residuals[bad])]
            raise SolverError(
                f"GMRES did not converge within GMRES maxiter = {maxiter} iterations: "
                f"relative residual {residuals[worst]:.3e} > GMRES tol = {tol:g} "
                f"(right-hand side {worst} of {r})")
        keep = ~done
        active, beta, res = active[keep], beta[keep], res[:, xp.asarray(np.flatnonzero(keep))]
        if len(active) == 0:
            break
        na = len(active)
        m = int(min(restart, maxiter - iterations[active].min()))
        if basis_bytes is not None:  # the basis holds m + 1 vectors per column
            m = max(1, min(m, int(basis_bytes // (vector_bytes * na)) - 1))
        basis = KrylovBasis(xp, (res / xp.asarray(beta.astype(dtype))).T, m + 1)
        rcols = []  # rotated Hessenberg columns (j + 2, na): as many as the steps taken
        g = np.zeros((m + 1, na), dtype=dtype)
        g[0] = beta
        cs = np.zeros((m, na))
        sn = np.zeros((m, na), dtype=dtype)
        steps = np.full(na, m)
        running = np.ones(na, dtype=bool)
        for j in range(m):
            run = np.flatnonzero(running)
            ir = xp.asarray(run)
            w = xp.ascontiguousarray(matvec(xp.ascontiguousarray(basis.last(ir).T)).T)  # (nr, n)
            col = np.zeros((j + 2, na), dtype=dtype)
            col[:, run] = basis.orthogonalise(w, ir)  # appends the new vectors
            for i in range(j):
                t = cs[i] * col[i] + sn[i] * col[i + 1]
                col[i + 1] = -np.conj(sn[i]) * col[i] + cs[i] * col[i + 1]
                col[i] = t
            a, c = col[j], col[j + 1]
            den = np.sqrt(np.abs(a) ** 2 + np.abs(c) ** 2)
            den[den == 0] = 1.0
            phase = np.where(np.abs(a) > 0, a / np.where(np.abs(a) > 0, np.abs(a), 1.0), 1.0)
            cs[j] = np.abs(a) / den
            sn[j] = phase * np.conj(c) / den
            col[j] = cs[j] * a + sn[j] * c
            col[j + 1] = 0.0
            # a stopped column keeps its rotations and residual (its entries of col are unused)
            rcols.append(col)
            g[j + 1, run] = -np.conj(sn[j, run]) * g[j, run]
            g[j, run] = cs[j, run] * g[j, run]
            est = np.abs(g[j + 1, run]) / bnorm[active[run]]
            _stop_if_not_finite(est, active[run], iterations[active[run]] + j + 1, r)
            bar.update(1)
            bar.set_postfix_str(f"residual {est.max():.2e}", refresh=False)
            for q, e in zip(run, est):
                history[active[q]].append(float(e))
            finished = (est <= tol) | (iterations[active[run]] + j + 1 >= maxiter)
            steps[run[finished]] = j + 1
            running[run[finished]] = False
            if not running.any():
                break
        y = np.zeros((na, int(steps.max())), dtype=dtype)
        for q in range(na):  # small triangular solves, one per column
            s = steps[q]
            if s:
                rq = np.zeros((s, s), dtype=dtype)
                for i in range(s):
                    rq[: i + 1, i] = rcols[i][: i + 1, q]
                y[q, :s] = np.linalg.solve(rq, g[:s, q])
        x[:, xp.asarray(active)] += basis.combine(xp.asarray(y)).T
        iterations[active] += steps

    bar.close()
    return GmresResult(x[:, 0] if vector else x, iterations, residuals, history)


class KrylovBasis:
    """The orthonormal Krylov vectors of r columns, stored (r, capacity, n) so that the
    projections of every column are one batched matrix product; the capacity starts small
    and doubles up to `size` vectors as the iterations need them. Zeroed, not uninitialised:
    a column that stopped early leaves slots unfilled that `combine` weights by 0, and 0 times
    leftover NaN is NaN."""

    _FIRST = 8

    def __init__(self, xp, v0, size: int):
        self.xp, self.size = xp, size
        r, n = v0.shape
        self.v = xp.zeros((r, min(size, self._FIRST), n), dtype=v0.dtype)
        self.v[:, 0] = v0
        self.count = np.ones(r, dtype=np.int64)  # vectors of each column

    def last(self, cols):
        """The newest vector of each of `cols` (all hold the same number), (len(cols), n)."""
        return self.v[cols, int(self.count[to_host(cols)[0]]) - 1]

    def orthogonalise(self, w, cols):
        """Orthonormalise w (len(cols), n) against the vectors of `cols` (CGS2), append it,
        and return the new Hessenberg column (j + 2, len(cols)) on the host."""
        xp = self.xp
        hc = to_host(cols)
        j = int(self.count[hc[0]])
        # a view while every column runs; a copy of the running ones after some stopped
        v = self.v[:, :j] if len(hc) == len(self.count) else self.v[cols, :j]  # (nr, j, n)

        def project(w):  # v^H w per column, without conjugating (copying) the basis
            return xp.matmul(v, w.conj()[:, :, None])[:, :, 0].conj()

        h = project(w)
        w = w - xp.matmul(h[:, None, :], v)[:, 0]
        h2 = project(w)
        w = w - xp.matmul(h2[:, None, :], v)[:, 0]
        hn = xp.linalg.norm(w, axis=1)
        if j == self.v.shape[1]:
            grown = xp.zeros((self.v.shape[0], min(self.size, 2 * j), self.v.shape[2]),
                             dtype=self.v.dtype)
            grown[:, :j] = self.v[:, :j]
            self.v = grown
        self.v[cols, j] = w / xp.where(hn > 0, hn, 1.0)[:, None].astype(w.dtype)
        self.count[hc] += 1
        return np.concatenate([to_host(h + h2).T, to_host(hn)[None].astype(h.dtype)])

    def combine(self, y):
        """Σ_i y[q, i] v[q, i] for every column q: (r, n)."""
        s = y.shape[1]
        return self.xp.matmul(y[:, None, :], self.v[:, :s])[:, 0]


def least_basis_bytes(n_dofs: int, cycle: int, itemsize: int = 16) -> int:
    """Bytes GMRES is granted at least for one right-hand side of `n_dofs` unknowns: a basis
    of KRYLOV_MIN_VECTORS vectors (fewer if a cycle, min(restart, maxiter), is shorter) and
    its working vectors."""
    return itemsize * n_dofs * (min(cycle, KRYLOV_MIN_VECTORS) + 1 + WORK_VECTORS)


def krylov_batches(n_dofs: int, n_rhs: int, cycle: int, available_bytes: int,
                   itemsize: int = 16) -> tuple[int, int]:
    """(directions per batch, Krylov basis bytes of a batch) for `n_rhs` right-hand sides of
    `n_dofs` unknowns in `available_bytes` of memory: as few, equally wide batches as hold
    a basis of KRYLOV_MIN_VECTORS vectors (fewer if a cycle, min(restart, maxiter), is
    shorter) and the working vectors of each direction in KRYLOV_MEMORY_SHARE of the memory.
    GMRES grows the basis as it iterates and restarts early rather than exceed the bytes
    returned."""
    budget = KRYLOV_MEMORY_SHARE * available_bytes
    per_rhs = least_basis_bytes(n_dofs, cycle, itemsize)
    width = int(min(n_rhs, max(1, budget // per_rhs)))
    width = -(-n_rhs // -(-n_rhs // width))  # the same width for every batch
    basis = int(max(budget - itemsize * n_dofs * WORK_VECTORS * width,
                    itemsize * n_dofs * 2 * width))  # at least two vectors: one step
    return width, basis
