"""Restarted GMRES for several right-hand sides at once, on any array module.

Each column keeps its own Krylov space, Hessenberg matrix and Givens rotations, but the
operator is applied to all active columns together (one matrix-matrix product instead of
many matrix-vector products), which is what makes several incidence directions cheap.
Orthogonalisation is classical Gram-Schmidt done twice (CGS2: as stable as modified
Gram-Schmidt, and a matrix product too). The small Hessenberg work runs on the host.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..backend import to_host
from ..defaults import GMRES
from ..errors import ConfigError, SolverError
from ..progress import progress


@dataclass
class GmresResult:
    x: object  # (n, r) array of the backend
    iterations: np.ndarray  # (r,) operator applications per column (inner iterations)
    residuals: np.ndarray  # (r,) final true relative residual |b - A x| / |b|
    history: list = field(default_factory=list)  # per column: estimated residual per iteration


def _check(tol, restart, maxiter):
    if not 0 < tol < 1:
        raise ConfigError(f"solver.gmres.tol = {tol!r}: must lie in (0, 1)")
    if int(restart) != restart or restart < 1:
        raise ConfigError(f"solver.gmres.restart = {restart!r}: must be a positive integer")
    if int(maxiter) != maxiter or maxiter < 1:
        raise ConfigError(f"solver.gmres.maxiter = {maxiter!r}: must be a positive integer")


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
          maxiter: int = GMRES["maxiter"], x0=None) -> GmresResult:
    """Solve A x = b for b of shape (n,) or (n, r); `matvec` maps (n, r') -> (n, r').

    Stops a column when |b - A x| <= tol |b|. Raises SolverError when some column has
    used `maxiter` operator applications without converging, naming the residual reached,
    and at the first residual that is not finite.
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
                f"GMRES did not converge within solver.gmres.maxiter = {maxiter} iterations: "
                f"relative residual {residuals[worst]:.3e} > solver.gmres.tol = {tol:g} "
                f"(right-hand side {worst} of {r})")
        keep = ~done
        active, beta, res = active[keep], beta[keep], res[:, xp.asarray(np.flatnonzero(keep))]
        if len(active) == 0:
            break
        na = len(active)
        m = int(min(restart, maxiter - iterations[active].min()))
        basis = [res / xp.asarray(beta.astype(dtype))]
        rmat = np.zeros((m + 1, m, na), dtype=dtype)  # rotated Hessenberg (upper triangular)
        g = np.zeros((m + 1, na), dtype=dtype)
        g[0] = beta
        cs = np.zeros((m, na))
        sn = np.zeros((m, na), dtype=dtype)
        steps = np.full(na, m)
        running = np.ones(na, dtype=bool)
        for j in range(m):
            w = matvec(basis[j])
            v = xp.stack(basis)  # (j+1, n, na)
            h = xp.einsum("jnr,nr->jr", v.conj(), w)
            w = w - xp.einsum("jnr,jr->nr", v, h)
            h2 = xp.einsum("jnr,nr->jr", v.conj(), w)
            w = w - xp.einsum("jnr,jr->nr", v, h2)
            hn = xp.linalg.norm(w, axis=0)
            basis.append(w / xp.where(hn > 0, hn, 1.0).astype(dtype))
            col = np.concatenate([to_host(h + h2), to_host(hn)[None].astype(dtype)])  # (j+2, na)
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
            rmat[: j + 2, j] = col
            g[j + 1] = -np.conj(sn[j]) * g[j]
            g[j] = cs[j] * g[j]
            est = np.abs(g[j + 1]) / bnorm[active]
            _stop_if_not_finite(est, active, iterations[active] + j + 1, r)
            bar.update(1)
            bar.set_postfix_str(f"residual {est.max():.2e}", refresh=False)
            for q in np.flatnonzero(running):
                history[active[q]].append(float(est[q]))
            finished = running & ((est <= tol) | (iterations[active] + j + 1 >= maxiter))
            steps[finished] = j + 1
            running &= ~finished
            if not running.any():
                break
        used = int(steps.max())
        y = np.zeros((used, na), dtype=dtype)
        for q in range(na):  # small triangular solves, one per column
            s = steps[q]
            y[:s, q] = np.linalg.solve(np.triu(rmat[:s, :s, q]), g[:s, q]) if s else 0.0
        v = xp.stack(basis[:used])
        x[:, xp.asarray(active)] += xp.einsum("jnr,jr->nr", v, xp.asarray(y))
        iterations[active] += steps

    bar.close()
    return GmresResult(x[:, 0] if vector else x, iterations, residuals, history)
