"""Block-triangular preconditioner of the Müller transmission system (transmission.py).

Why not a local (OSRC) preconditioner: a gas body (g -> 0) many interior wavelengths across
is a weakly damped cavity. On a sphere, per spherical-harmonic degree l, the Müller system
tends to the lower block triangle [[A_DD, 0], [A_ND, A_NN]] whose Dirichlet block
A_DD = 1 + 2 K1 has the eigenvalues 2 i x1^2 j_l'(x1) h_l(x1) (x1 = k1 a), close to
1 + exp(2 i theta_l) for the propagating interior modes: spread around the circle through 0
and 2, touching 0 at the interior Neumann (rigid-cavity) resonances, with a phase theta_l
that oscillates in l (a wave crossing the body and back). No function of the surface
Laplacian of low rational degree (a Padé DtN/NtD map) follows that phase, and an absorption
of Q = 20 shrinks the circle only by exp(-2 Im(x1)) per crossing. The exterior block
A_NN = 1 + 2 K0' has the same circle at k0 (fewer modes). Measured on the sphere's exact
spectra (bench/bench_fluid_preconditioner.py --symbol): unpreconditioned, up to 29 of the
modes lie farther than 0.3 from 1 (gas sphere of 1 cm, 120 kHz); with the exact inverse of
the block triangle every eigenvalue lies within 0.06 of 1 at 12-120 kHz (0.16 at 200 kHz),
undamped or with Q = 20; with the inverse of A_DD alone, 2-6 modes (those of A_NN) stay
spread. On the 10 x 10 x 70 mm gas spheroid (6,110 unknowns, 12-50 kHz, three incidences,
bench/README.md): 21-139 iterations plain, 2-4 preconditioned.

The preconditioner P = [[A_DD, 0], [A_ND, A_NN]] (the system with its Dirichlet row's
coupling to w dropped, the O(g) term g k (V0 - V1)), applied exactly: the diagonal blocks in
weak form,
    M A_DD = M + a (K1 - g K0),     M A_NN = M + a (K0 - g K1)^T,
are dense LU-factorised once per frequency, so P^{-1} (x_D, x_N) needs no mass solve:
    y_D = (M A_DD)^{-1} M x_D,      y_N = (M A_NN)^{-1} (M x_N - a (W0 - W1) y_D / k).
With right preconditioning (GMRES on A P^{-1}, unknowns x = P^{-1} z, residuals those of
the unpreconditioned system) and A = P + [[0, A_DN], [0, 0]], a product is
    A P^{-1} z = z + [A_DN y_N, 0],   A_DN = a g k M^{-1} (V0 - V1),
four boundary-operator products (W0, W1, V0, V1) and two dense triangular solve pairs in
place of the system's eight products. The factors cost O(n^3) once and 2 n^2 entries,
built where the solve runs (the GPU for a GPU solve) in the operators' storage precision,
with no other n x n array: K0 and K1 densified (`dense_of`: the H-matrix's blocks copied on
the host, its products with unit columns on the GPU), each then turned into its factor in
place. The winner while 2 n^2
entries fit: some 40,000 vertices in complex64 on an 80 GB GPU beside the H-matrices.

Per surface: P is built from the diagonal (self-interaction) blocks of one interface only,
so a nested body composes it block-diagonally over its interfaces (block Jacobi/Gauss-Seidel
in the interface ordering), leaving the coupling between interfaces to GMRES.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg

from ...backend import array_module, to_host
from ...errors import InputError
from ...memory import available_gpu_bytes, available_host_bytes

PRECONDITIONERS = ("auto", "none", "block_triangular")

# `auto` factorises the blocks while their 2 n^2 entries take at most this share of the
# memory free where they live (after the operators' assembly): the rest keeps room for the
# solve's Krylov basis and the LU's workspace.
AUTO_SHARE = 0.5


def factor_dtype(op) -> np.dtype:
    """The dtype of the factors made from operator `op`: the precision its entries are
    stored in (an H-matrix's `storage_dtype`, solver.hmatrix.storage), complex. Single
    precision halves their memory and their LU's time; the preconditioner stays the same
    linear map in every GMRES step, so the answer keeps the accuracy of the operators
    (right preconditioning: the residual GMRES drives down is the system's own)."""
    local = getattr(op, "local", op)  # a rank's share of a DistributedHMatrix
    return np.result_type(getattr(local, "storage_dtype", local.dtype), np.complex64)


class Restricted:
    """Operator `op` of a region (square, on the region's dofs) between the dofs at
    `positions` only, e.g. an interface's own block of a region that several surfaces bound:
    a product pads x with zeros and keeps the rows at `positions`."""

    def __init__(self, op, positions):
        self.op, self.positions = op, np.asarray(positions)
        self.shape = (len(self.positions),) * 2
        self.dtype = op.dtype

    def __matmul__(self, x):
        if isinstance(self.op, np.ndarray):  # a host operator takes host vectors
            x = to_host(x)
        xp = array_module(x)
        positions = xp.asarray(self.positions)
        full = xp.zeros((self.op.shape[1],) + x.shape[1:], x.dtype)
        full[positions] = x
        return (self.op @ full)[positions]


def restricted(op, positions):
    """`op` between the dofs at `positions` (op itself where they are all of its dofs)."""
    positions = np.asarray(positions)
    if len(positions) == op.shape[0] and np.array_equal(positions, np.arange(op.shape[0])):
        return op
    return Restricted(op, positions)


def dense_of(op, xp, dtype, width=1024):
    """`op` (a dense array, an H-matrix, a rank's share of one, or one of them Restricted) as
    a new dense array of backend `xp` in `dtype`, with no other n x n array made: on the
    host an H-matrix copies its blocks' entries (HMatrix.dense_part); on the GPU, and for a
    rank's share whose other blocks the other ranks hold, the operator is multiplied by
    `width` unit columns at a time where its blocks live (the fish at 120 kHz measured this
    way, bench/README.md)."""
    positions = None
    if isinstance(op, Restricted):
        op, positions = op.op, op.positions
    if hasattr(op, "dense_part") and xp is np:  # an H-matrix: its blocks' entries, copied
        return op.dense_part(positions, positions, dtype)
    if not hasattr(op, "matvec"):  # a dense array, on the host or the device
        out = xp.asarray(op)
        if positions is not None:
            p = xp.asarray(positions)
            out = out[p[:, None], p]
        return out.astype(dtype)
    n = op.shape[1]
    columns = np.arange(n) if positions is None else positions
    rows = xp.asarray(columns)
    out = xp.empty((len(columns), len(columns)), dtype)
    for start in range(0, len(columns), width):
        chunk = columns[start:start + width]
        unit = xp.zeros((n, len(chunk)), op.dtype)
        unit[xp.asarray(chunk), xp.arange(len(chunk))] = 1
        out[:, start:start + len(chunk)] = (op @ unit)[rows]
    return out


def _combine(out, alpha, other, beta, rows=1024):
    """out = alpha out + beta other in place, `rows` rows at a time (no n x n temporary)."""
    for r in range(0, out.shape[0], rows):
        slab = out[r:r + rows]
        slab *= alpha
        slab += beta * other[r:r + rows]


def _add_mass(xp, out, mass, factor):
    """out += factor M (mass a SciPy COO matrix with summed duplicates)."""
    out[xp.asarray(mass.row), xp.asarray(mass.col)] += xp.asarray(
        (factor * mass.data).astype(out.dtype))


def _lu_module(xp):
    """CuPy's dense LU for CuPy arrays, else SciPy's (NumPy arrays, the CUDA emulation's)."""
    if getattr(xp, "__name__", "") == "cupy":
        import cupyx.scipy.linalg as cla  # noqa: PLC0415

        return cla
    return scipy.linalg


# `auto` preconditions bodies whose impedance g h differs from the medium's by at least this
# factor either way: an interior Q of order max(g h, 1 / (g h)), a cavity whose modes spread
# the plain system's spectrum (a gas: g h = 0.0003); a weak scatterer or fish flesh (g h near
# 1) converges in 5 to 10 plain iterations, less than the factors cost on large meshes.
AUTO_IMPEDANCE_CONTRAST = 5.0


def chosen(setting: str, n_dofs: int, itemsize: int = 16, free_bytes: float = np.inf,
           impedance_ratio: float = 0.0) -> str:
    """The preconditioner that `solver.fluid_preconditioner = setting` gives for n_dofs
    vertices: `auto` is block_triangular for a body of high impedance contrast
    (`impedance_ratio` g h at most 1 / AUTO_IMPEDANCE_CONTRAST or at least
    AUTO_IMPEDANCE_CONTRAST) while its factors (2 n^2 entries of `itemsize` bytes) take at
    most AUTO_SHARE of `free_bytes`, else none."""
    if setting not in PRECONDITIONERS:
        raise InputError(f"fluid preconditioner = {setting!r}: must be one of "
                          f"{', '.join(PRECONDITIONERS)}")
    if setting != "auto":
        return setting
    contrast = max(impedance_ratio, 1.0 / impedance_ratio) if impedance_ratio > 0 else np.inf
    fits = 2 * n_dofs**2 * itemsize <= AUTO_SHARE * free_bytes
    return "block_triangular" if fits and contrast >= AUTO_IMPEDANCE_CONTRAST else "none"


def free_bytes(xp) -> int:
    """Bytes free where the factors of backend `xp` live (host or GPU)."""
    return available_host_bytes() if xp is np else available_gpu_bytes(xp)


class BlockTriangular:
    """P^{-1} of the module docstring for one surface's Müller block: `operators` holds K0,
    K1 (dense, H-matrix or Restricted: densified by dense_of) and W0, W1 of that surface,
    `mass` its P1 mass matrix, k the outside wavenumber, g the density ratio inside over
    outside; `apply(op, x)` returns op @ x on the host (a StrongForm's `_applied_on_host`).
    Factorised on the backend `xp`, in `dtype` (default: factor_dtype of K0). A nested body
    composes one per interface, each from its own blocks (Restricted) and solving its own
    slice."""

    name = "block_triangular"

    def __init__(self, operators: dict, mass, k: float, density_ratio: float, apply, xp=np,
                 dtype=None):
        self.xp, self.k, self.g, self._apply = xp, float(k), float(density_ratio), apply
        self.scale = a = 2.0 / (1.0 + self.g)
        self.w0, self.w1 = operators["W0"], operators["W1"]
        self.mass = mass.tocsr()
        self.n_dofs = self.mass.shape[0]
        dtype = factor_dtype(operators["K0"]) if dtype is None else np.dtype(dtype)
        coo = self.mass.tocoo()
        coo.sum_duplicates()
        lu = _lu_module(xp)
        self._lu, self.dtype = lu, dtype
        # Two n x n arrays in all, the factors themselves: D = M A_DD = M + a K1 - a g K0
        # built in K1's place, then M A_NN^T = M + a K0 - a g K1 = a (1 - g^2) K0 - g D +
        # (1 + g) M in K0's (solved transposed)
        g = self.g
        k0 = dense_of(operators["K0"], xp, dtype)
        dirichlet = dense_of(operators["K1"], xp, dtype)
        _combine(dirichlet, a, k0, -a * g)
        _add_mass(xp, dirichlet, coo, 1.0)
        _combine(k0, a * (1 - g * g), dirichlet, -g)
        _add_mass(xp, k0, coo, 1.0 + g)
        self._dirichlet = lu.lu_factor(dirichlet, overwrite_a=True, check_finite=False)
        self._neumann_t = lu.lu_factor(k0, overwrite_a=True, check_finite=False)

    @classmethod
    def for_system(cls, system):
        """The preconditioner of a MullerTransmission system (one surface)."""
        return cls(system.ops, system.mass, system.k, system.g,
                   system._applied_on_host, system.xp)  # noqa: SLF001

    def _solve(self, factors, y, trans=0):
        y = self.xp.asarray(y)
        return self._lu.lu_solve(factors, y.astype(self.dtype, copy=False), trans=trans,
                                 check_finite=False)

    def solve(self, z):
        """P^{-1} z for z (2n, r) on the backend: (y_D, y_N) stacked."""
        n = self.n_dofs
        zd, zn = to_host(z[:n]), to_host(z[n:])
        yd = self._solve(self._dirichlet, self.mass @ zd)
        wy = self._apply(self.w0, yd) - self._apply(self.w1, yd)
        yn = self._solve(self._neumann_t, self.mass @ zn - (self.scale / self.k) * wy, trans=1)
        return self.xp.concatenate([self.xp.asarray(yd), self.xp.asarray(yn)]).astype(
            z.dtype, copy=False)
