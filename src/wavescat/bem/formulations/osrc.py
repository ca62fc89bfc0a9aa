"""On-surface radiation condition (OSRC): sparse approximations of the exterior
Neumann-to-Dirichlet map (OsrcNtD, the coupling of the sound-hard Burton-Miller formulation)
and of its inverse, the Dirichlet-to-Neumann map (OsrcDtN, the coupling of the sound-soft
one), after Antoine & Darbas (2007) and as used by Bempp.

For an outgoing field (time dependence exp(-i w t)) the Dirichlet-to-Neumann map is
approximately `ik sqrt(1 + Δ_Γ / k_eps^2)`, so the NtD map is

    NtD ≈ (1 / ik) (1 + X)^(-1/2),   X = Δ_Γ / k_eps^2,   k_eps = k + 0.4i k^(1/3) R^(-2/3),

the damping (k_eps) keeping the grazing modes l(l+1) ≈ (kR)^2 away from the singularity.
(1 + X)^(-1/2) is (1 + X)^(-1) sqrt(1 + X), the square root by a Padé approximant with
its branch cut rotated by `branch_angle` (Milinazzo et al.) so that the evanescent modes
(1 + X < 0) get the right branch; the product of the two is summed as resolvents by partial
fractions (OsrcNtD). In P1 weak form -Δ_Γ is the stiffness matrix S and the identity the
mass matrix M, so X -> -S / k_eps^2 and every resolvent is a sparse LU factorisation made
once per frequency.

The DtN map ik (1 + X)^(1/2) needs the square root alone, with the same Padé terms.

On several ranks of one solve (solve/parallel.py) the resolvents are shared out: each rank
factorises and solves its own (t = rank, rank + size, ...), and the sum over t is an
allreduce of the ranks' partial sums; the strong form's mass solve rides with them as one
more term (OsrcNtD.apply_to_weak_plus), its matrix factorised on every rank beside the map's
own (`mass_factor`).

On a sphere of radius R a spherical harmonic of degree l is an eigenfunction with
eigenvalue (1/ik) (1 - l(l+1)/(k_eps R)^2)^(-1/2); the exact NtD eigenvalue is
h_l(kR) / (k h_l'(kR)), close to it for l << kR.
"""
from __future__ import annotations

import functools
import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor

import numba
import numpy as np
import scipy.sparse as sp
from threadpoolctl import ThreadpoolController

from ...backend import array_module, sparse_module
from ...defaults import OSRC
from ...errors import InputError
from ..linalg.factor_processes import RemoteLU, order_in_worker
from ..linalg.sparse_lu import OrderedLU, nested_dissection
from ..linalg.triangular import SharedPatternLU

log = logging.getLogger(__name__)


def mass_and_stiffness(space) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """P1 surface mass M[i, j] = ∫ φ_i φ_j and Laplace-Beltrami stiffness
    S[i, j] = ∫ grad_Γ φ_i . grad_Γ φ_j, assembled over all triangles at once."""
    if space.kind != "P1":
        raise InputError(f"OSRC needs a P1 space, got {space.kind}")
    areas = space.mesh.areas
    grads = space.surface_gradients  # (m, 3, 3): local function c, component
    local_mass = areas[:, None, None] * (np.ones((3, 3)) + np.eye(3)) / 12.0
    local_stiff = areas[:, None, None] * np.einsum("mak,mbk->mab", grads, grads)
    dofs = space.element_dofs
    rows = np.repeat(dofs, 3, axis=1).ravel()
    cols = np.tile(dofs, (1, 3)).ravel()
    shape = (space.n_dofs, space.n_dofs)
    mass = sp.coo_matrix((local_mass.ravel(), (rows, cols)), shape=shape).tocsr()
    stiff = sp.coo_matrix((local_stiff.ravel(), (rows, cols)), shape=shape).tocsr()
    return mass, stiff


@functools.cache
def _blas() -> ThreadpoolController:
    """The BLAS libraries loaded (scanned once, at the first sparse factorisation or solve)."""
    return ThreadpoolController()


def one_blas_thread():
    """A context in which BLAS runs on one thread. SuperLU makes many small BLAS calls (one
    per supernode), whose thread start-ups and spinning idle threads cost far more than the
    calls themselves (bench/README.md, "Sparse factorisations and BLAS threads"). Entered by
    the thread that starts the solves, before any runs beside it (threaded_map)."""
    return _blas().limit(limits=1, user_api="blas")


class SparseLU:
    """A SuperLU factorisation (sparse_lu.OrderedLU, here or in a worker process) whose
    `solve` takes (n,) or (n, r) right-hand sides, host or device arrays. SuperLU's own
    multi-right-hand-side solve slows down per column as r grows (bench/README.md, "SuperLU
    with many right-hand sides"), so wide host blocks go through it a pair of columns at a
    time, the pairs side by side on the job's threads (`by_column_pairs`). A device (CuPy)
    block is solved whole on the device with the same factors (`triangular_solve`)."""

    COLUMNS = 2

    def __init__(self, lu, dtype):
        self.lu, self.dtype = lu, np.dtype(dtype)
        self.shape = lu.shape
        self._copies = {}  # the factors in each array module that solved with them

    @property
    def remote(self) -> bool:
        """Whether a worker process holds the factors (`factorise`)."""
        return isinstance(self.lu, RemoteLU)

    def solve(self, b):
        if not isinstance(b, np.ndarray):
            return self.triangular_solve(b)
        if self.remote:  # the worker takes a wide block a pair of columns at a time itself
            return self.lu.solve(b)
        if b.ndim == 1 or b.shape[1] <= self.COLUMNS:
            with one_blas_thread():
                return self.lu.solve(np.ascontiguousarray(b))
        return by_column_pairs(self.solve, b)

    def triangular_solve(self, b):
        """The solve of a device block b (n, r) or (n,) by level-scheduled triangular solves
        with the same factors (triangular.py; their device copy made once)."""
        flat = b.ndim == 1
        x = self.on_device(array_module(b)).solve(b.reshape(b.shape[0], -1))[0]
        return x[:, 0] if flat else x

    def on_device(self, xp):
        """The factors on the device of array module xp, made once."""
        if xp.__name__ not in self._copies:
            lu = self.lu.local() if self.remote else self.lu
            self._copies[xp.__name__] = SharedPatternLU(xp, [lu])
        return self._copies[xp.__name__]


def solve_threads() -> int:
    """Threads for the sparse solves: the job's (Numba's count follows Snakemake's `threads`,
    backend.follow_job_threads)."""
    return max(1, int(numba.get_num_threads()))


_POOLS: dict[int, ThreadPoolExecutor] = {}


def threaded_map(fn, items) -> list:
    """[fn(item) for item in items], spread over `solve_threads()` threads: factorisations
    and solves held by different worker processes (factorise) run side by side, the threads
    waiting on their pipes (small ones, in this process, as far as SuperLU lets threads).
    `fn` must not call threaded_map itself (a pool waiting on its own workers can
    deadlock)."""
    items = list(items)
    n = min(solve_threads(), len(items))
    with one_blas_thread():
        if n <= 1:
            return [fn(item) for item in items]
        if n not in _POOLS:
            _POOLS[n] = ThreadPoolExecutor(n, thread_name_prefix="sparse-solve")
        return list(_POOLS[n].map(fn, items))


def by_column_pairs(fn, y):
    """fn(y) for a column-by-column map `fn` of (n, r) blocks, as fn of each pair of columns
    (SparseLU.COLUMNS) on threads; fn sees only blocks that narrow."""
    width = SparseLU.COLUMNS
    blocks = threaded_map(lambda s: fn(np.ascontiguousarray(y[:, s:s + width])),
                          range(0, y.shape[1], width))
    return np.concatenate(blocks, axis=1)


def in_background(make):
    """`make()` on a host thread of its own: a Future of its result. The thread takes the
    caller's sparse-solve threads (Numba's count is per thread) and is a daemon (an error
    in the caller ends the process without waiting for it)."""
    future, threads = Future(), solve_threads()

    def run():
        numba.set_num_threads(threads)
        try:
            future.set_result(make())
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits on it
            future.set_exception(exc)

    threading.Thread(target=run, name="preconditioner", daemon=True).start()
    return future


def _wide(y) -> bool:
    return y.ndim == 2 and y.shape[1] > SparseLU.COLUMNS


# From this many unknowns on, a factorisation and its solves run in a worker process
# (factor_processes.py: on threads of this one they did not run side by side); below, here,
# where a process's start and the pipe would cost more than they save.
PROCESS_UNKNOWNS = 20_000


def factorise(matrix) -> SparseLU:
    """Sparse LU of a structurally symmetric FEM matrix (M, M - b S): SuperLU in the
    nested-dissection order of the pattern (made once per pattern, sparse_lu.py) with
    diagonal pivots, stable here (M is SPD, the shifts complex); from PROCESS_UNKNOWNS on,
    the ordering and the factors are made and held by worker processes (the same factors)."""
    matrix = sp.csc_matrix(matrix)
    if matrix.shape[0] >= PROCESS_UNKNOWNS:
        order = nested_dissection(matrix, functools.partial(order_in_worker, workers=solve_threads()))
        return SparseLU(RemoteLU(matrix, order, solve_threads()), matrix.dtype)
    with one_blas_thread():
        lu = OrderedLU(matrix, nested_dissection(matrix))
    return SparseLU(lu, matrix.dtype)


def solve_real_spd(lu, y):
    """M^{-1} y for complex y (n,) or (n, r), host or device, with the LU of a real matrix M:
    on the host real and imaginary parts in one solve, on the device the complex block."""
    if not isinstance(y, np.ndarray):
        return lu.solve(y.astype(np.complex128, copy=False))
    flat = y.ndim == 1
    y = y.reshape(y.shape[0], -1)
    r = y.shape[1]
    both = lu.solve(np.ascontiguousarray(np.hstack([y.real, y.imag]), dtype=float))
    out = both[:, :r] + 1j * both[:, r:]
    return out[:, 0] if flat else out


def pade_coefficients(n_terms: int, branch_angle: float):
    """(c0, a, b) with sqrt(1 + z) ≈ c0 + Σ_j a_j z / (1 + b_j z), branch cut rotated by
    `branch_angle`: sqrt(1+z) = e^{iθ/2} sqrt(1 + ((1+z) e^{-iθ} - 1)) and the real
    Padé approximant R_N(z) = 1 + Σ α_j z / (1 + β_j z) applied to the inner argument."""
    if int(n_terms) != n_terms or n_terms < 1:
        raise InputError(f"pade_terms = {n_terms!r}: must be a positive integer")
    if not 0.0 <= branch_angle < np.pi:
        raise InputError(f"branch_angle = {branch_angle!r}: must lie in [0, pi)")
    n = int(n_terms)
    j = np.arange(1, n + 1)
    alpha = 2.0 / (2 * n + 1) * np.sin(j * np.pi / (2 * n + 1)) ** 2
    beta = np.cos(j * np.pi / (2 * n + 1)) ** 2
    rot = np.exp(-1j * branch_angle)
    c0 = np.exp(0.5j * branch_angle) * (1.0 + np.sum(alpha * (rot - 1) / (1 + beta * (rot - 1))))
    a = np.exp(-0.5j * branch_angle) * alpha / (1 + beta * (rot - 1)) ** 2
    b = rot * beta / (1 + beta * (rot - 1))
    return complex(c0), a, b


def pade_sqrt(z, n_terms: int = OSRC["pade_terms"], branch_angle: float = OSRC["branch_angle"]):
    """The rotated Padé approximant of sqrt(1 + z) at scalar or array z (for tests)."""
    c0, a, b = pade_coefficients(n_terms, branch_angle)
    z = np.asarray(z, dtype=complex)[..., None]
    return c0 + np.sum(a * z / (1 + b * z), axis=-1)


def characteristic_radius(mesh) -> float:
    """Half the bounding-box diagonal (Bempp's choice), a size that needs no user input."""
    lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
    return 0.5 * float(np.linalg.norm(hi - lo))


def damped_wavenumber(k: float, radius: float) -> complex:
    if radius <= 0:
        raise InputError(f"OSRC radius = {radius!r}: must be positive")
    return k + 0.4j * k ** (1.0 / 3.0) * radius ** (-2.0 / 3.0)


class OsrcSquareRoot:
    """The Padé approximant of sqrt(1 + X) on a P1 space at wavenumber k, factorised once;
    `sqrt_weak(y)` maps weak-form data y_i = <φ_i, u> to <φ_i, sqrt(1 + X) u>.

    Both maps of this module are rational functions of X, summed as resolvents:
        constant y + P Σ_t w_t (M - s_t S')^{-1} y,   S' = S / k_eps^2,
    here with P = S', w_j = -a_j, s_j = b_j and the constant c0. Every resolvent's solve is
    independent of the others': they run side by side on the host's threads, and the ranks
    of one solve deal the terms round (rank, rank + size, ...) and sum their partial sums."""

    def __init__(self, space, k: float, pade_terms: int = OSRC["pade_terms"],
                 branch_angle: float = OSRC["branch_angle"],
                 radius: float | None = None, mass=None, stiffness=None, group=None,
                 mass_factor: bool = False):
        if k <= 0:
            raise InputError(f"wavenumber = {k!r}: OSRC needs k > 0")
        if mass is None or stiffness is None:
            mass, stiffness = mass_and_stiffness(space)
        self.k = float(k)
        self.radius = characteristic_radius(space.mesh) if radius is None else float(radius)
        self.k_eps = damped_wavenumber(self.k, self.radius)
        self.mass, self.stiffness = mass.tocsr(), stiffness.tocsr()
        self._scaled_stiffness = (self.stiffness / self.k_eps**2).tocsr()
        self.constant, weights, shifts = self._resolvents(
            *pade_coefficients(pade_terms, branch_angle))
        # the ranks sharing the terms (`rank`, `size`, `sum(partial)`; None: one process)
        self.group = group if group is not None and group.size > 1 else None
        rank, size = (0, 1) if self.group is None else (self.group.rank, self.group.size)
        # a solve riding with the terms (`plus`) is one more term: the next rank's
        self.solves_plus = len(shifts) % size == rank
        n_all = len(shifts)
        weights, shifts = weights[rank::size], shifts[rank::size]
        m = self.mass.astype(complex)
        # `mass_factor`: M itself too (a strong form's mass solves), beside the others rather
        # than alone after them, when it would keep one core busy for seconds on every rank
        shifted = [m - s_t * self._scaled_stiffness for s_t in shifts] + \
            ([self.mass] if mass_factor else [])
        t0 = time.perf_counter()
        factors = threaded_map(factorise, shifted)
        log.info("OSRC: %d sparse factorisations of %d unknowns (%d of %d resolvents) on %d "
                 "threads in %.2f s", len(shifted), self.mass.shape[0], len(shifts), n_all,
                 min(solve_threads(), len(shifted)), time.perf_counter() - t0)
        self._terms = list(zip(weights, factors[:len(shifts)]))
        self.mass_lu = factors[-1] if mass_factor else None
        self._device_post = None  # P on the device, made by the first device block

    @property
    def n_dofs(self) -> int:
        return self.mass.shape[0]

    def _resolvents(self, c0, a, b):
        """(constant, weights w_t, shifts s_t) of this map's sum of resolvents."""
        return c0, -a, b

    def _post(self):
        """P of the sum (None: the identity)."""
        return self._scaled_stiffness

    def sqrt_weak(self, y):
        return self._map(y)

    def _map(self, y, plus=None):
        """constant y + P Σ_t w_t (M - s_t S')^{-1} y, summed over the ranks (collective);
        `plus` = (SparseLU, b) adds lu^{-1} b (P the identity), solved beside the terms by
        the rank whose turn it is. Host or device blocks (n,) or (n, r)."""
        if plus is not None and self._post() is not None:
            raise ValueError("a solve rides only with a map of plain resolvents")
        on_host = array_module(y) is np
        if on_host:
            partial = self._partial_host(np.asarray(y, dtype=complex), plus)
        else:
            partial = self._partial_device(y, plus)
        post = self._post()
        if post is not None:
            if not on_host:
                if self._device_post is None:
                    self._device_post = sparse_module(partial).csr_matrix(post)
                post = self._device_post
            partial = post @ partial
        total = partial if self.group is None else self.group.sum(partial)
        return total if self.constant == 0 else self.constant * y + total

    def _partial_host(self, y, plus):
        """This rank's weighted solutions on the host: side by side on the threads for one
        column, or for any width where worker processes hold every factor (`factorise`);
        else one solve after the other, each solving its column pairs (SparseLU.solve)."""
        jobs = [(w_t, functools.partial(lu.solve, y)) for w_t, lu in self._terms]
        if plus is not None and self.solves_plus:
            jobs.append((1.0, functools.partial(solve_real_spd, plus[0], np.asarray(plus[1]))))
        if y.ndim == 1 or y.shape[1] == 1 or all(lu.remote for lu in self._factors(plus)):
            solutions = threaded_map(lambda job: job[1](), jobs)
        else:
            solutions = [solve() for _, solve in jobs]
        partial = np.zeros_like(y)
        for (w_t, _), x in zip(jobs, solutions):
            partial += w_t * x.reshape(y.shape)
        return partial

    def _factors(self, plus):
        """This rank's factors of a product (with the one of `plus` where it rides here)."""
        return [lu for _, lu in self._terms] + ([plus[0]] if plus is not None and self.solves_plus else [])

    def _partial_device(self, y, plus):
        """This rank's weighted solutions of a device block: the terms' factors share one
        pattern, so one launch solves all of them and returns their weighted sum
        (triangular.py); the factor of `plus` (the mass matrix: the same pattern) rides in
        the same launch."""
        xp = array_module(y)
        y2 = y.reshape(y.shape[0], -1).astype(np.complex128, copy=False)
        extra = [plus] if plus is not None and self.solves_plus else []
        rhs = [b.reshape(y2.shape).astype(np.complex128, copy=False) for _, b in extra]
        partial = xp.zeros_like(y2)
        launch = self._device_launch(xp, extra)
        if launch is None and extra:  # not one pattern: the terms in one launch, the other apart
            partial = partial + extra[0][0].triangular_solve(rhs.pop())
            launch, extra = self._device_launch(xp, []), []
        weights = [1.0] * len(extra) + [w_t for w_t, _ in self._terms]
        if weights:
            partial = partial + launch.solve(rhs + [y2] * len(self._terms),
                                             np.array(weights, complex))
        return partial[:, 0] if y.ndim == 1 else partial

    def _device_launch(self, xp, extra):
        """The one-launch solver of the factors of `extra` (SparseLU, b) pairs and of this
        rank's terms, made once (None: of another pattern, asked once)."""
        solvers = self.__dict__.setdefault("_device_solvers", {})
        key = tuple(id(lu) for lu, _ in extra)
        if key not in solvers:
            factors = [lu.lu for lu, _ in extra] + [lu.lu for _, lu in self._terms]
            # factors in worker processes: their L and U fetched side by side
            factors = threaded_map(lambda lu: lu.local() if isinstance(lu, RemoteLU) else lu, factors)
            try:
                solvers[key] = SharedPatternLU(xp, factors) if factors else None
            except ValueError:
                solvers[key] = None
        return solvers[key]


class OsrcNtD(OsrcSquareRoot):
    """The OSRC NtD approximation on a P1 space, factorised once for wavenumber k.

    `apply(x)` is the strong form M^{-1} N_weak acting on coefficient vectors (n,) or
    (n, r); `weak(x) = M apply(x)` is the Galerkin form <φ_i, NtD u>.

    (1 + X)^(-1) sqrt(1 + X) is one rational function: with 1/((1+z)(1+bz)) in partial
    fractions,
        (1 + z)^(-1) [c0 + Σ_j a_j z / (1 + b_j z)] = C / (1 + z) + Σ_j D_j / (1 + b_j z),
        D_j = a_j / (1 - b_j),   C = c0 - Σ_j D_j,
    so the inverse is one more resolvent (s = 1) beside the Padé terms', not a solve that
    waits on their sum: the pade_terms + 1 solves of a product all run at once (issue 28:
    the inverse, after the sum, was one rank's solve in full on every rank). |1 - b_j| is
    at least 0.03 at the defaults (eight terms, the cut at pi/3): the weights lose under
    two of double precision's sixteen digits.
    """

    def __init__(self, space, k: float, pade_terms: int = 8, branch_angle: float = np.pi / 3,
                 radius: float | None = None, mass=None, stiffness=None, group=None,
                 mass_factor: bool = False):
        super().__init__(space, k, pade_terms, branch_angle, radius, mass, stiffness, group,
                         mass_factor)

    def _resolvents(self, c0, a, b):
        d = a / (1.0 - b)
        return 0, np.concatenate([[c0 - d.sum()], d]) / (1j * self.k), np.concatenate([[1.0], b])

    def _post(self):
        return None

    def apply(self, x: np.ndarray) -> np.ndarray:
        return self.apply_to_weak(self.mass @ np.asarray(x))

    def apply_to_weak(self, y):
        """Ñ M^{-1} y for weak-form data y (y_i = <φ_i, u>): the mass matrices cancel, so
        Burton-Miller needs no mass solve for the hypersingular term or the Neumann data."""
        return self._map(y)

    def apply_to_weak_plus(self, y, lu, b):
        """apply_to_weak(y) + lu^{-1} b (`lu` a SparseLU, the strong form's mass matrix),
        that solve beside the map's own: on the host one more solve on the threads, on the
        device in the same launch (one pattern), on several ranks one rank's turn."""
        return self._map(y, plus=(lu, b))

    def weak(self, x: np.ndarray) -> np.ndarray:
        return self.mass @ self.apply(x)


class OsrcDtN(OsrcSquareRoot):
    """The OSRC DtN approximation ik sqrt(1 + X) on a P1 space, factorised once for k.

    `weak_of_weak(y)` maps weak-form data y_i = <φ_i, u> to <φ_i, DtN u> (no solve with
    the mass matrix); `apply(x) = M^{-1} weak_of_weak(M x)` is the strong form.
    """

    def weak_of_weak(self, y: np.ndarray) -> np.ndarray:
        return 1j * self.k * self.sqrt_weak(y)

    def apply(self, x: np.ndarray) -> np.ndarray:
        y = self.weak_of_weak(self.mass @ np.asarray(x))
        lu = factorise(self.mass) if self.mass_lu is None else self.mass_lu
        return lu.solve(np.ascontiguousarray(y.real)) + 1j * lu.solve(np.ascontiguousarray(y.imag))
