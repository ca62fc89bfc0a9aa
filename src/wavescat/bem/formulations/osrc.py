"""On-surface radiation condition (OSRC): sparse approximations of the exterior
Neumann-to-Dirichlet map (OsrcNtD, the coupling of the sound-hard Burton-Miller formulation)
and of its inverse, the Dirichlet-to-Neumann map (OsrcDtN, the coupling of the sound-soft
one), after Antoine & Darbas (2007) and as used by Bempp.

For an outgoing field (time dependence exp(-i w t)) the Dirichlet-to-Neumann map is
approximately `ik sqrt(1 + Δ_Γ / k_eps^2)`, so the NtD map is

    NtD ≈ (1 / ik) (1 + X)^(-1/2),   X = Δ_Γ / k_eps^2,   k_eps = k + 0.4i k^(1/3) R^(-2/3),

the damping (k_eps) keeping the grazing modes l(l+1) ≈ (kR)^2 away from the singularity.
(1 + X)^(-1/2) is applied as (1 + X)^(-1) sqrt(1 + X), the square root by a Padé
approximant with its branch cut rotated by `branch_angle` (Milinazzo et al.) so that the
evanescent modes (1 + X < 0) get the right branch. In P1 weak form -Δ_Γ is the
stiffness matrix S and the identity the mass matrix M, so X -> -S / k_eps^2 and every
inverse is a sparse LU factorisation made once per frequency.

The DtN map ik (1 + X)^(1/2) needs the square root alone, with the same Padé terms.

On several ranks of one solve (solve/parallel.py) the Padé terms are shared out: each rank
factorises and solves its own terms (j = rank, rank + size, ...), and the sum over j is an
allreduce of the ranks' partial sums; the inverse (1 + X)^(-1) is factorised on every rank,
and so is the mass matrix of a Burton-Miller strong form, beside the map's own (`mass_factor`).

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
import scipy.sparse.linalg as spla
from threadpoolctl import ThreadpoolController

from ...backend import array_module, sparse_module
from ...defaults import OSRC
from ...errors import InputError
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
    """A SuperLU factorisation whose `solve` takes (n,) or (n, r) right-hand sides, host or
    device arrays. SuperLU's own multi-right-hand-side solve slows down per column as r
    grows (bench/README.md, "SuperLU with many right-hand sides"), so wide host blocks go
    through it a pair of columns at a time, the pairs side by side on the job's threads
    (`by_column_pairs`). A device (CuPy)
    block is solved whole on the device with the same factors (`triangular_solve`)."""

    COLUMNS = 2

    def __init__(self, lu, dtype):
        self.lu, self.dtype = lu, np.dtype(dtype)
        self.shape = lu.shape
        self._copies = {}  # the factors in each array module that solved with them

    def solve(self, b):
        if not isinstance(b, np.ndarray):
            return self.triangular_solve(b)
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
            self._copies[xp.__name__] = SharedPatternLU(xp, [self.lu])
        return self._copies[xp.__name__]


def solve_threads() -> int:
    """Threads for the sparse solves: the job's (Numba's count follows Snakemake's `threads`,
    backend.follow_job_threads)."""
    return max(1, int(numba.get_num_threads()))


_POOLS: dict[int, ThreadPoolExecutor] = {}


def threaded_map(fn, items) -> list:
    """[fn(item) for item in items], spread over `solve_threads()` threads: SuperLU's solve
    releases the GIL, so independent solves run side by side. `fn` must not call
    threaded_map itself (a pool waiting on its own workers can deadlock)."""
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


def factorise(matrix) -> SparseLU:
    """Sparse LU of a structurally symmetric FEM matrix (M, M - b S): minimum degree on
    A^T + A and diagonal pivots, 10-100x faster than SuperLU's default (COLAMD with
    partial pivoting) on surface meshes, and stable here (M is SPD, the shifts complex)."""
    matrix = sp.csc_matrix(matrix)
    with one_blas_thread():
        lu = spla.splu(matrix, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                       options={"SymmetricMode": True})
    return SparseLU(lu, matrix.dtype)


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
    `sqrt_weak(y)` maps weak-form data y_i = <φ_i, u> to <φ_i, sqrt(1 + X) u>."""

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
        self.c0, a, b = pade_coefficients(pade_terms, branch_angle)
        # the ranks sharing the terms (`rank`, `size`, `sum(partial)`; None: one process)
        self.group = group if group is not None and group.size > 1 else None
        if self.group is not None:
            a, b = a[self.group.rank::self.group.size], b[self.group.rank::self.group.size]
        s = self.stiffness / self.k_eps**2
        m = self.mass.astype(complex)
        # X -> -S/k_eps^2: sqrt(1+X) = c0 - Σ a_j (S/k_eps^2) (M - b_j S/k_eps^2)^{-1} M
        # the shifted matrices are factorised side by side (SuperLU releases the GIL)
        more = self._more_matrices(m, s)
        # `mass_factor`: M itself too (a strong form's mass solves), beside the others rather
        # than alone after them, when it would keep one core busy for seconds on every rank
        shifted = [m - b_j * s for b_j in b] + more + ([self.mass] if mass_factor else [])
        t0 = time.perf_counter()
        factors = threaded_map(factorise, shifted)
        log.info("OSRC: %d sparse factorisations of %d unknowns (%d of %d Padé terms) on %d "
                 "threads in %.2f s", len(shifted), self.mass.shape[0], len(b), pade_terms,
                 min(solve_threads(), len(shifted)), time.perf_counter() - t0)
        self._terms = list(zip(a, factors[:len(b)]))
        self._more = factors[len(b):len(b) + len(more)]
        self.mass_lu = factors[-1] if mass_factor else None
        self._scaled_stiffness = s.tocsr()
        self._device_stiffness = None  # on the device, made by the first device block

    @property
    def n_dofs(self) -> int:
        return self.mass.shape[0]

    def _more_matrices(self, mass, scaled_stiffness) -> list:
        """Further matrices of the map, factorised with the Padé terms (into `_more`)."""
        return []

    def sqrt_weak(self, y: np.ndarray) -> np.ndarray:
        if not isinstance(y, np.ndarray):  # a device block: every factor solves it whole
            return self._sqrt_weak_device(y)
        y = np.asarray(y, dtype=complex)
        if _wide(y):
            correction = by_column_pairs(self._correction, y)
        else:  # one or two columns: the Padé terms' solves side by side instead
            correction = self._weighted(threaded_map(lambda term: term[1].solve(y), self._terms), y)
        return self.c0 * y - self._summed(correction)

    def _correction(self, y):
        """Σ a_j S (M - b_j S)^{-1} y over this rank's terms, one solve after the other."""
        return self._weighted([lu.solve(y) for _, lu in self._terms], y)

    def _weighted(self, solutions, y):
        correction = np.zeros_like(y)
        for (a_j, _), x in zip(self._terms, solutions):
            correction += a_j * (self._scaled_stiffness @ x)
        return correction

    def _summed(self, partial):
        """The sum over the ranks of their terms' `partial` sums (collective)."""
        return partial if self.group is None else self.group.sum(partial)

    def _sqrt_weak_device(self, y, beside=None):
        """The series for a device block: the Padé terms' factors share one pattern, so one
        launch solves all of them (triangular.py) and only their weighted sum is kept,
        S Σ a_j x_j being Σ a_j S x_j. `beside` = (SparseLU, b): a factor of the same
        pattern (the mass matrix's) whose solve of b rides in the same launch; then
        (series, its solution)."""
        xp = array_module(y)
        if not self._terms:  # more ranks than terms: this one adds nothing
            zero = self._summed(xp.zeros_like(y, dtype=np.complex128))
            series = self.c0 * y - zero
            return series if beside is None else (series, beside[0].triangular_solve(beside[1]))
        extra = [] if beside is None else [beside[0]]
        key = tuple(id(lu) for lu in extra)
        solvers = self.__dict__.setdefault("_device_solvers", {})
        if key not in solvers:
            try:
                solvers[key] = SharedPatternLU(xp, [lu.lu for lu in extra] + [lu.lu for _, lu in self._terms])
            except ValueError:
                solvers[key] = None  # another pattern beside: asked once, refused for good
            if self._device_stiffness is None:
                self._device_stiffness = sparse_module(y).csr_matrix(self._scaled_stiffness)
        if solvers[key] is None:
            raise ValueError("the factor beside the Padé terms has another sparsity pattern")
        flat = y.ndim == 1
        y2 = y.reshape(y.shape[0], -1).astype(np.complex128, copy=False)
        pade = np.array([a for a, _ in self._terms])
        if beside is None:
            z = solvers[key].solve(y2, weights=pade)
        else:
            weights = np.zeros((1 + len(pade), 2), complex)
            weights[0, 1], weights[1:, 0] = 1.0, pade
            z, other = solvers[key].solve([beside[1].reshape(y2.shape)] + [y2] * len(pade), weights)
        series = self.c0 * y2 - self._summed(self._device_stiffness @ z)
        series = series[:, 0] if flat else series
        return series if beside is None else (series, other.reshape(beside[1].shape))



class OsrcNtD(OsrcSquareRoot):
    """The OSRC NtD approximation on a P1 space, factorised once for wavenumber k.

    `apply(x)` is the strong form M^{-1} N_weak acting on coefficient vectors (n,) or
    (n, r); `weak(x) = M apply(x)` is the Galerkin form <φ_i, NtD u>.
    """

    def __init__(self, space, k: float, pade_terms: int = 8, branch_angle: float = np.pi / 3,
                 radius: float | None = None, mass=None, stiffness=None, group=None,
                 mass_factor: bool = False):
        super().__init__(space, k, pade_terms, branch_angle, radius, mass, stiffness, group,
                         mass_factor)
        self._inverse = self._more[0]  # (1+X)^-1

    def _more_matrices(self, mass, scaled_stiffness):
        return [mass - scaled_stiffness]

    def apply(self, x: np.ndarray) -> np.ndarray:
        return self.apply_to_weak(self.mass @ np.asarray(x))

    def apply_to_weak(self, y: np.ndarray) -> np.ndarray:
        """Ñ M^{-1} y for weak-form data y (y_i = <φ_i, u>): the mass matrices cancel, so
        Burton-Miller needs no mass solve for the hypersingular term or the Neumann data."""
        if not isinstance(y, np.ndarray):
            return self._inverse.solve(self._sqrt_weak_device(y)) / (1j * self.k)
        return self._inverse.solve(self.sqrt_weak(y)) / (1j * self.k)

    def apply_to_weak_beside(self, y, lu, b):
        """(apply_to_weak(y), lu^-1 b) for device blocks, `lu` a factor of this map's
        pattern (the mass matrix's): its solve rides in the launch of the Padé terms'."""
        try:
            series, other = self._sqrt_weak_device(y, beside=(lu, b))
        except ValueError:  # not one pattern: solved apart
            return self.apply_to_weak(y), lu.solve(b)
        return self._inverse.solve(series) / (1j * self.k), other

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
