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

Beyond that size (`hodlr`, HierarchicalBlockTriangular): the same two blocks D = M A_DD and
N = (M A_NN)^T as HODLR matrices (bem/linalg/hodlr.py: dense leaves, one low-rank block
between sibling clusters of a vertex cluster tree, truncated at HODLR_TOL of their norms)
inverted by recursive Woodbury. Where K0 and K1 are H-matrices (or an interface's block of
one) each HODLR block is sampled from the H-matrix blocks inside it (hodlr_parts.py, on the
H-matrix's own cluster tree cut at leaf_size), all levels together costing about one
whole-operator product per sample column; other operators (dense, a rank's share,
directional) by randomised peeling from products with K0, K1, K0', K1' (hodlr.py), whole
products for every level and each side of it (4 times slower at 2,562 vertices):
memory n (leaf + 2 sum of ranks), measured about n^1.5 entries on gas spheres, where the
dense factors take 2 n^2. An approximate P no longer leaves A P^{-1} = I + the coupling, so
a product is A applied to P^{-1} z (eight operator products, not four); truncated at 1e-2 it
costs a step or two more than the exact P (bench/bench_gas_preconditioner.py). `auto` keeps
the dense factors where they fit and, on the host, up to DENSE_MAX_HOST vertices, where
their O(n^3) LU is the quicker set-up.

Per surface: P is built from the diagonal (self-interaction) blocks of one interface only,
so a nested body composes it block-diagonally over its interfaces (block Jacobi/Gauss-Seidel
in the interface ordering), leaving the coupling between interfaces to GMRES.
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np
import scipy.linalg

from ...backend import array_module, sparse_module, to_host
from ..assembly.hmatrix import HMatrix
from ..assembly.hmatrix.cluster_tree import build_cluster_tree
from ..assembly.hmatrix.tree_parts import HMatrixParts, SparseParts
from ..linalg.hodlr import hodlr_inverses
from ..linalg.hodlr_parts import hodlr_from_parts
from ...errors import InputError
from ...memory import available_gpu_bytes, available_host_bytes

log = logging.getLogger(__name__)

PRECONDITIONERS = ("auto", "none", "block_triangular", "hodlr")

# The HODLR blocks' truncation, relative to each diagonal block's norm (measured:
# bench/bench_gas_preconditioner.py)
HODLR_TOL = 1e-2

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

# `auto` on the host: dense factors up to this many vertices, HODLR inverses above: at 2,562
# vertices the dense LU set up in 9 to 44 s, the HODLR inverses in 142 to 207 s (70 and
# 120 kHz, the shared 2-core machine, bench/bench_gas_preconditioner.py); the LU grows like
# n^3, the HODLR like n^1.5 log n: they cross between about 7,000 and 16,000 vertices
DENSE_MAX_HOST = 8000


def chosen(setting: str, n_dofs: int, itemsize: int = 16, free_bytes: float = np.inf,
           impedance_ratio: float = 0.0, dense_max: float = np.inf) -> str:
    """The preconditioner that `solver.fluid_preconditioner = setting` gives for n_dofs
    vertices: `auto` preconditions a body of high impedance contrast (`impedance_ratio`
    g h at most 1 / AUTO_IMPEDANCE_CONTRAST or at least AUTO_IMPEDANCE_CONTRAST), by the
    dense factors (block_triangular) while their 2 n^2 entries of `itemsize` bytes take
    at most AUTO_SHARE of `free_bytes` and n_dofs is at most `dense_max` (dense_limit:
    where their O(n^3) LU is the quicker set-up), else by HODLR inverses (hodlr); a body
    of low contrast gets none."""
    if setting not in PRECONDITIONERS:
        raise InputError(f"fluid preconditioner = {setting!r}: must be one of "
                          f"{', '.join(PRECONDITIONERS)}")
    if setting != "auto":
        return setting
    contrast = max(impedance_ratio, 1.0 / impedance_ratio) if impedance_ratio > 0 else np.inf
    if contrast < AUTO_IMPEDANCE_CONTRAST:
        return "none"
    fits = 2 * n_dofs**2 * itemsize <= AUTO_SHARE * free_bytes
    return "block_triangular" if fits and n_dofs <= dense_max else "hodlr"


def dense_limit(xp) -> float:
    """The most vertices `auto` gives dense factors on backend `xp` (where they fit): on
    the host DENSE_MAX_HOST, past which the HODLR inverses set up sooner than the dense LU
    (bench/bench_gas_preconditioner.py); on a GPU no limit but memory (its dense LU is
    quick: 39,102 vertices measured, bench/README.md)."""
    return DENSE_MAX_HOST if xp is np else np.inf


# The HODLR blocks' ranks at HODLR_TOL, measured on the 1 cm gas sphere at 70 kHz, 2,562
# vertices (bench/bench_gas_preconditioner.py; 176, 83, 39, 30 by level): the root's
# 3.5 sqrt(n), their sum 6.5 sqrt(n), counted here as HODLR_TOP_RANK and HODLR_RANK_SUM
# times sqrt(n); while they are built the peeling holds about HODLR_WORK_ARRAYS complex128
# arrays of n x (the root's rank + oversampling) (the operators' products take
# hodlr.CHUNK columns at a time)
HODLR_TOP_RANK = 4.0
HODLR_RANK_SUM = 8.0
HODLR_WORK_ARRAYS = 5


def hodlr_bytes(n_dofs: int, itemsize: int) -> tuple[float, float]:
    """(bytes held, bytes of the set-up's work arrays) of a HODLR preconditioner of n_dofs
    vertices, factors of `itemsize`: per diagonal block the leaves (n x leaf) and per
    level V and What (n x r each); the peeling's sketches while they are built."""
    root, leaf = math.sqrt(n_dofs), HierarchicalBlockTriangular.leaf_size
    held = 2 * itemsize * n_dofs * (leaf + 2 * HODLR_RANK_SUM * root)
    work = HODLR_WORK_ARRAYS * 16 * n_dofs * max(leaf, HODLR_TOP_RANK * root + 16)
    return held, work


def estimated_bytes(setting: str, n_dofs: int, itemsize: int, impedance_ratio: float,
                    gpu: bool) -> tuple[float, float]:
    """(bytes held, bytes of the set-up's work arrays, freed before GMRES) of a fluid
    interface's preconditioner, before anything runs (planning/resources.py): what `chosen` gives
    without knowing the free memory. On a GPU `auto` is counted as the HODLR inverses: the
    dense factors are made only where they fit beside the rest."""
    name = chosen(setting, n_dofs, itemsize, np.inf, impedance_ratio,
                  np.inf if gpu else DENSE_MAX_HOST)
    if name == "none":
        return 0.0, 0.0
    if name == "block_triangular" and not (gpu and setting == "auto"):
        return 2.0 * n_dofs**2 * itemsize, 0.0
    return hodlr_bytes(n_dofs, itemsize)


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
    exact = True  # P itself: A P^{-1} z = z + [A_DN y_N, 0] (transmission.py)

    def __init__(self, operators: dict, mass, k: float, density_ratio: float, apply, xp=np,
                 dtype=None):
        self.xp, self.k, self.g, self._apply = xp, float(k), float(density_ratio), apply
        self.scale = 2.0 / (1.0 + self.g)
        self.w0, self.w1 = operators["W0"], operators["W1"]
        self.mass = mass.tocsr()
        self.n_dofs = self.mass.shape[0]
        self.dtype = factor_dtype(operators["K0"]) if dtype is None else np.dtype(dtype)
        self._factorise(operators)

    def _factorise(self, operators):
        """The dense LU factors of D = M A_DD and N = (M A_NN)^T."""
        coo = self.mass.tocoo()
        coo.sum_duplicates()
        xp, a, g = self.xp, self.scale, self.g
        lu = self._lu = _lu_module(xp)
        # Two n x n arrays in all, the factors themselves: D = M A_DD = M + a K1 - a g K0
        # built in K1's place, then M A_NN^T = M + a K0 - a g K1 = a (1 - g^2) K0 - g D +
        # (1 + g) M in K0's (solved transposed)
        k0 = dense_of(operators["K0"], xp, self.dtype)
        dirichlet = dense_of(operators["K1"], xp, self.dtype)
        _combine(dirichlet, a, k0, -a * g)
        _add_mass(xp, dirichlet, coo, 1.0)
        _combine(k0, a * (1 - g * g), dirichlet, -g)
        _add_mass(xp, k0, coo, 1.0 + g)
        self._dirichlet = lu.lu_factor(dirichlet, overwrite_a=True, check_finite=False)
        self._neumann_t = lu.lu_factor(k0, overwrite_a=True, check_finite=False)

    @classmethod
    def for_system(cls, system, **options):
        """The preconditioner of a MullerTransmission system (one surface)."""
        return cls(system.ops, system.mass, system.k, system.g,
                   system._applied_on_host, system.xp, **options)  # noqa: SLF001

    def _solve_dirichlet(self, y):
        """D^{-1} y."""
        return self._lu.lu_solve(self._dirichlet, y.astype(self.dtype, copy=False),
                                 check_finite=False)

    def _solve_neumann(self, y):
        """(M A_NN)^{-1} y = N^{-T} y."""
        return self._lu.lu_solve(self._neumann_t, y.astype(self.dtype, copy=False), trans=1,
                                 check_finite=False)

    def solve(self, z):
        """P^{-1} z for z (2n, r) on the backend: (y_D, y_N) stacked."""
        n, xp = self.n_dofs, self.xp
        zd, zn = to_host(z[:n]), to_host(z[n:])
        yd = self._solve_dirichlet(xp.asarray(self.mass @ zd))
        wy = self._apply(self.w0, yd) - self._apply(self.w1, yd)
        yn = self._solve_neumann(xp.asarray(self.mass @ zn - (self.scale / self.k) * wy))
        return xp.concatenate([xp.asarray(yd), xp.asarray(yn)]).astype(z.dtype, copy=False)


def _product(op, x):
    """op @ x on x's backend (a host operator takes host vectors), in op's precision."""
    xp = array_module(x)
    if isinstance(op, np.ndarray):
        x = to_host(x)
    dtype = getattr(op, "dtype", x.dtype)
    return xp.asarray(op @ x.astype(np.result_type(dtype, x.dtype), copy=False))


class HierarchicalBlockTriangular(BlockTriangular):
    """The same P^{-1}, its two diagonal blocks D and N inverted as HODLR matrices
    (bem/linalg/hodlr.py) on a cluster tree of the surface's vertices `points`, from
    products with K0, K1 and their transposes (operators Kp0, Kp1): memory O(n r log n)
    in place of 2 n^2, set-up O(n r^2 log^2 n) in place of O(n^3). Truncated at HODLR_TOL
    of each block's norm, an approximate inverse: GMRES sees P^{-1} as a fixed linear map,
    so its answer keeps the system's accuracy, and a few more iterations at most
    (bench/bench_gas_preconditioner.py). Stored in single precision (the operators'
    single storage) its products carry a rounding of about 1e-7, which bounds the residual
    GMRES can reach (the default tolerance 1e-5 is far above it)."""

    name = "hodlr"
    exact = False  # A P^{-1} z needs all of A's products
    leaf_size = 256  # the HODLR leaves: dense blocks of at most this many vertices
    # "leaves": from the H-matrices' blocks where K0 and K1 are H-matrices (hodlr_parts.py),
    # else (or "peeling") by peeling from whole-operator products (hodlr.py)
    build = "leaves"

    def __init__(self, operators: dict, mass, k: float, density_ratio: float, apply, xp=np,
                 dtype=None, points=None):
        if points is None:
            raise ValueError("the hodlr preconditioner needs the surface's vertices")
        self.points = np.asarray(points, float)
        super().__init__(operators, mass, k, density_ratio, apply, xp, dtype)

    def _factorise(self, operators):
        hmatrices = [_hmatrix_of(operators[name]) for name in ("K0", "K1")]
        leaves = self.build == "leaves" and all(hmatrices)
        t = time.perf_counter()
        inverses, self.stats = self._from_leaves(hmatrices) if leaves else \
            self._peeled(operators)
        self.stats["build"] = "leaves" if leaves else "peeling"
        self._dirichlet, self._neumann_t = inverses
        log.info("HODLR inverses of %d vertices (%s) in %.1f s: ranks by level %s, %.3g GB",
                 self.n_dofs, self.stats["build"], time.perf_counter() - t,
                 self.stats["ranks"], self.stats["bytes"] / 1e9)

    def _from_leaves(self, hmatrices):
        """D, N = M + a (K1 - g K0), M + a (K0 - g K1) from the blocks of M, K0, K1."""
        xp, a, g = self.xp, self.scale, self.g
        tree = self._tree(hmatrices)
        parts = [SparseParts(self.mass, tree, xp, self.dtype)] + [
            HMatrixParts(op, tree, xp, positions) for op, positions in hmatrices]
        return hodlr_from_parts(parts, [[1.0, -a * g, a], [1.0, a, -a * g]], tree, xp,
                                self.dtype, HODLR_TOL)

    def _peeled(self, operators):
        """D and N from products with M, K0, K1, K0', K1' (any operators)."""
        xp, a, g = self.xp, self.scale, self.g
        mass = self.mass if xp is np else sparse_module(xp.zeros(0)).csr_matrix(
            self.mass.astype(complex))  # cuSPARSE: one dtype
        k0, k1, kp0, kp1 = (operators[name] for name in ("K0", "K1", "Kp0", "Kp1"))

        def apply(x):  # [D x, N x]: M + a (K1 - g K0) and M + a (K0 - g K1)
            mx, y0, y1 = mass @ x, _product(k0, x), _product(k1, x)
            return [mx + a * (y1 - g * y0), mx + a * (y0 - g * y1)]

        def apply_t(xs):  # [D^T x_D, N^T x_N], both from one product of each K'
            both = xp.concatenate(xs, axis=1)
            mx, y0, y1 = mass @ both, _product(kp0, both), _product(kp1, both)
            r = xs[0].shape[1]
            return [(mx + a * (y1 - g * y0))[:, :r], (mx + a * (y0 - g * y1))[:, r:]]

        return hodlr_inverses(apply, apply_t, 2,
                              build_cluster_tree(self.points, self.points, self.leaf_size), xp,
                              self.dtype, HODLR_TOL)

    def _tree(self, hmatrices):
        """The HODLR tree: an unrestricted H-matrix's own cluster tree cut at leaf_size (its
        blocks then lie in one HODLR block each), else one of the vertices (the blocks of a
        region's operator restricted to this interface are split by tree_parts)."""
        for op, positions in hmatrices:
            if positions is None and op.block_tree is not None:
                return op.block_tree.rows.truncated(self.leaf_size)
        return build_cluster_tree(self.points, self.points, self.leaf_size)

    def _solve_dirichlet(self, y):
        return self._dirichlet.solve(y)

    def _solve_neumann(self, y):
        return self._neumann_t.solve(y, transpose=True)


PRECONDITIONER_CLASSES = {cls.name: cls for cls in (BlockTriangular, HierarchicalBlockTriangular)}


def _hmatrix_of(op):
    """(H-matrix, positions or None) of a one-device H-matrix or its Restricted, else None
    (dense arrays, a rank's share, directional operators: peeled from products)."""
    positions = None
    if isinstance(op, Restricted):
        op, positions = op.op, op.positions
    if isinstance(op, HMatrix) and len(op.parts) == 1:
        return op, positions
    return None


def dof_points(space) -> np.ndarray:
    """The positions of a P1 space's dofs: the vertices its triangles use, in order."""
    return space.mesh.vertices[np.unique(space.mesh.triangles)]
