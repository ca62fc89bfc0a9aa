"""CUDA kernels of the Hermite-Taylor half step (the GPU twin of cpu.py).

Layout (Vargas et al. 3.1): data u[f][k0][k1][k2][i0][i1][i2], grid index innermost,
so the threads of a warp, which take neighbouring cells along i2, read consecutive
addresses; the vertex shared by neighbouring cells comes from L1/L2 rather than DRAM.

Work split (their "two levels of parallelism"): a block takes CELLS cells; inside a cell
each thread owns one column of the (2m+2)^3 coefficient cube. The 1D operator H (in
constant memory) is applied along axis 0, 1, 2 in turn with the cube in shared memory;
in the Taylor stages the thread keeps its column along axis 2 in registers (d/dz_2 is
local) and reads the neighbouring columns for d/dz_0 and d/dz_1 from shared memory.

Two forms, as in the paper: `interpolate` + `evolve` (coefficients through global memory)
and one monolithic kernel. The source is generated per (m, q, system, dtype) so every
loop over a degree index has a compile-time trip count and is unrolled.

This shared form works for any m and any system. Faster monolithic forms for small cubes
hold the coefficients in registers: gpu_cell.py (a cell per thread) and gpu_warp.py (a
cell per 2m+2 lanes); `make_kernels` picks one (bench/bench_hermite.py times them all).
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from . import gpu_cell, gpu_propagator, gpu_warp
from .gpu_common import compile_module, interpolation_operator

#: the GPU half-step forms: "monolithic" picks the fastest recursion form that fits: register
#: (a cell per thread, gpu_cell.py), warp (a cell per 2m+2 lanes, gpu_warp.py), else shared (a
#: cell per block slice, here); "two-kernel" is the shared form split at the interpolation;
#: "propagator" (gpu_propagator.py) replaces the recursion by a translation: scalar advection only
FORMS = ("propagator", "monolithic", "monolithic-shared", "monolithic-register", "monolithic-warp",
         "two-kernel")
#: "monolithic" takes the register form while a thread holds at most this many values (faster
#: than the warp form there: bench/README.md)
REGISTER_AUTO = 216
_SHARED_LIMIT = 48 * 1024
#: cells per block of the shared form by degree (bench_hermite.py --cells-per-block)
_TUNED_CELLS = {1: 16, 2: 8, 3: 16}


def cells_per_block(m: int, n_fields: int, itemsize: int, cap: int | None = None) -> int:
    """Cells per thread block: up to a warp's worth, within 1024 threads and 48 KiB of shared
    memory, at most `cap` (default: the tuned count of the degree)."""
    n = 2 * m + 2
    fit = max(1, min(1024 // (n * n), _SHARED_LIMIT // (n_fields * n ** 3 * itemsize)))
    return min(fit, cap or _TUNED_CELLS.get(m, 32))


def _taylor_terms(couplings, f: int) -> str:
    """Right-hand side of d/dt u_f at (j0, j1, j2) in derivative form: a pure index shift."""
    terms = []
    for c, (d, ff, g, _) in enumerate(couplings):
        if ff != f:
            continue
        if d == 2:
            terms.append(f"(j2 + 1 < N ? w[{c}] * cur[{g}][j2 + 1 < N ? j2 + 1 : 0] : (T)0)")
        elif d == 1:
            terms.append(f"(j1 + 1 < N ? w[{c}] * SH({g}, j0, j1 + 1, j2) : (T)0)")
        else:
            terms.append(f"(j0 + 1 < N ? w[{c}] * SH({g}, j0 + 1, j1, j2) : (T)0)")
    return " + ".join(terms) if terms else "(T)0"


def kernel_source(m: int, q: int, couplings, n_fields: int, dtype, cells: int | None = None) -> str:
    """CUDA source of the shared and two-kernel forms, `cells` cells per block (default:
    cells_per_block's)."""
    ctype = "float" if np.dtype(dtype) == np.float32 else "double"
    cells = cells or cells_per_block(m, n_fields, np.dtype(dtype).itemsize)
    nc = len(couplings)
    rhs = "\n".join(f"                nxt[{f}][j2] = {_taylor_terms(couplings, f)};"
                    for f in range(n_fields))
    return f"""
typedef {ctype} T;
#define M {m}
#define M1 {m + 1}
#define N {2 * m + 2}
#define NF {n_fields}
#define Q {q}
#define NCPL {max(nc, 1)}
#define CELLS {cells}
#define TOP {3 * (2 * m + 1)}
#define SH(f, a, b, c) sh[((((f) * N + (a)) * N + (b)) * N + (c)) * CELLS + cl]

__constant__ T Hc[N * M1];   // H~ on the left-vertex data (see interpolation_operator)
__constant__ T Finv[N];      // 1 / j!

// one 1D interpolation: out = H~ r, with r = (left k = 0..m, right k = 0..m)
__device__ __forceinline__ void apply_h(const T r[N], T out[N]) {{
    T e[M1], o[M1];
    #pragma unroll
    for (int k = 0; k < M1; ++k) {{
        e[k] = (k % 2 == 0) ? r[k] + r[M1 + k] : r[k] - r[M1 + k];
        o[k] = (k % 2 == 0) ? r[k] - r[M1 + k] : r[k] + r[M1 + k];
    }}
    #pragma unroll
    for (int j = 0; j < N; ++j) {{
        T t = 0;
        #pragma unroll
        for (int k = 0; k < M1; ++k) t += Hc[j * M1 + k] * ((j % 2 == 0) ? e[k] : o[k]);
        out[j] = t;
    }}
}}

// axis-0 pass: thread (p1, p2) gathers its 2(m+1) vertex data along axis 0 and applies H
__device__ __forceinline__ void gather_interpolate(const T* __restrict__ src, T* sh, int cl, int col,
        long long cell, int shift, int n0, int n1, int n2) {{
    const int p1 = col / N, p2 = col % N;
    const int a1 = p1 / M1, k1 = p1 % M1, a2 = p2 / M1, k2 = p2 % M1;
    const unsigned int c32 = (unsigned int)cell;  // grids stay below 2^31 cells
    const int i2 = (int)(c32 % (unsigned)n2), i1 = (int)((c32 / (unsigned)n2) % (unsigned)n1),
              i0 = (int)(c32 / ((unsigned)n2 * (unsigned)n1));
    int v0[2], v1 = i1 + shift + a1, v2 = i2 + shift + a2;
    v1 += (v1 < 0) ? n1 : ((v1 >= n1) ? -n1 : 0);
    v2 += (v2 < 0) ? n2 : ((v2 >= n2) ? -n2 : 0);
    #pragma unroll
    for (int a0 = 0; a0 < 2; ++a0) {{
        int v = i0 + shift + a0;
        v0[a0] = v + ((v < 0) ? n0 : ((v >= n0) ? -n0 : 0));
    }}
    const long long plane = (long long)n0 * n1 * n2;
    #pragma unroll
    for (int f = 0; f < NF; ++f) {{
        T r[N];
        #pragma unroll
        for (int a0 = 0; a0 < 2; ++a0) {{
            #pragma unroll
            for (int k0 = 0; k0 < M1; ++k0) {{
                const long long dof = ((f * M1 + k0) * M1 + k1) * M1 + k2;
                r[a0 * M1 + k0] = __ldg(src + dof * plane + ((long long)v0[a0] * n1 + v1) * n2 + v2);
            }}
        }}
        T b[N];
        apply_h(r, b);
        #pragma unroll
        for (int j = 0; j < N; ++j) SH(f, j, p1, p2) = b[j];
    }}
}}

// axis-1 then axis-2 passes; afterwards thread (j0, j1) holds column j2 in cur
__device__ __forceinline__ void interpolate_axes12(T* sh, int cl, int col, T cur[NF][N]) {{
    __syncthreads();
    {{
        const int j0 = col / N, p2 = col % N;
        #pragma unroll
        for (int f = 0; f < NF; ++f) {{
            T r[N];
            #pragma unroll
            for (int i = 0; i < N; ++i) r[i] = SH(f, j0, i, p2);
            T b[N];
            apply_h(r, b);
            #pragma unroll
            for (int j = 0; j < N; ++j) SH(f, j0, j, p2) = b[j];
        }}
    }}
    __syncthreads();
    const int j0 = col / N, j1 = col % N;
    #pragma unroll
    for (int f = 0; f < NF; ++f) {{
        T r[N];
        #pragma unroll
        for (int i = 0; i < N; ++i) r[i] = SH(f, j0, j1, i);
        apply_h(r, cur[f]);
        #pragma unroll
        for (int j = 0; j < N; ++j) SH(f, j0, j1, j) = cur[f][j];
    }}
}}

// q-stage Taylor series, forward: cur_s = (1/s) L cur_(s-1); sum the centre data (index <= m)
__device__ __forceinline__ void evolve_store(T* sh, int cl, int col, T cur[NF][N],
        const T* __restrict__ lam_g, T* __restrict__ dst, long long cell, long long ncells) {{
    const int j0 = col / N, j1 = col % N;
    const int excess = (j0 > M ? j0 - M : 0) + (j1 > M ? j1 - M : 0);
    T lam[NCPL];
    #pragma unroll
    for (int c = 0; c < NCPL; ++c) lam[c] = lam_g[c];
    T acc[NF][M1];
    #pragma unroll
    for (int f = 0; f < NF; ++f)
        #pragma unroll
        for (int j2 = 0; j2 < M1; ++j2) acc[f][j2] = cur[f][j2];
    #pragma unroll 1
    for (int s = 1; s <= Q; ++s) {{
        T w[NCPL], nxt[NF][N];
        const T inv = (T)1 / (T)s;
        #pragma unroll
        for (int c = 0; c < NCPL; ++c) w[c] = lam[c] * inv;
        // a column is needed only while it can still reach the centre data (index <= m) in
        // the Q - s stages left (idle columns keep stage s-1, all that is read of them);
        // past total degree TOP - s it is zero (the interpolant has degree TOP)
        const bool needed = excess <= Q - s;
        const bool compute = needed && j0 + j1 <= TOP - s;
        __syncthreads();  // stage s-1 is in shared memory
        if (compute) {{
            #pragma unroll
            for (int j2 = 0; j2 < N; ++j2) {{
{rhs}
            }}
        }}
        __syncthreads();  // everyone has read stage s-1
        if (compute) {{
            #pragma unroll
            for (int f = 0; f < NF; ++f)
                #pragma unroll
                for (int j2 = 0; j2 < N; ++j2) {{
                    cur[f][j2] = nxt[f][j2];
                    SH(f, j0, j1, j2) = nxt[f][j2];
                    if (j2 < M1) acc[f][j2] += nxt[f][j2];
                }}
        }} else if (needed) {{
            #pragma unroll
            for (int f = 0; f < NF; ++f)
                #pragma unroll
                for (int j2 = 0; j2 < N; ++j2) {{
                    cur[f][j2] = (T)0;
                    SH(f, j0, j1, j2) = (T)0;
                }}
        }}
    }}
    if (j0 < M1 && j1 < M1 && cell < ncells) {{
        #pragma unroll
        for (int f = 0; f < NF; ++f)
            #pragma unroll
            for (int j2 = 0; j2 < M1; ++j2)
                dst[((long long)((f * M1 + j0) * M1 + j1) * M1 + j2) * ncells + cell] =
                    acc[f][j2] * (Finv[j0] * Finv[j1] * Finv[j2]);
    }}
}}

#define PROLOGUE \\
    extern __shared__ unsigned char sh_raw[]; \\
    T* sh = reinterpret_cast<T*>(sh_raw); \\
    const int cl = threadIdx.x % CELLS, col = threadIdx.x / CELLS; \\
    const long long ncells = (long long)n0 * n1 * n2; \\
    long long cell = (long long)blockIdx.x * CELLS + cl; \\
    const long long cell_in = cell < ncells ? cell : ncells - 1;

extern "C" __global__ void __launch_bounds__(CELLS * N * N)
hermite_monolithic(const T* __restrict__ src, T* __restrict__ dst, const T* __restrict__ lam,
                   int shift, int n0, int n1, int n2) {{
    PROLOGUE
    T cur[NF][N];
    gather_interpolate(src, sh, cl, col, cell_in, shift, n0, n1, n2);
    interpolate_axes12(sh, cl, col, cur);
    evolve_store(sh, cl, col, cur, lam, dst, cell, ncells);
}}

extern "C" __global__ void __launch_bounds__(CELLS * N * N)
hermite_interpolate(const T* __restrict__ src, T* __restrict__ coef, int shift, int n0, int n1, int n2) {{
    PROLOGUE
    T cur[NF][N];
    gather_interpolate(src, sh, cl, col, cell_in, shift, n0, n1, n2);
    interpolate_axes12(sh, cl, col, cur);
    if (cell < ncells) {{
        #pragma unroll
        for (int f = 0; f < NF; ++f)
            #pragma unroll
            for (int j2 = 0; j2 < N; ++j2)
                coef[((long long)(f * N * N + col) * N + j2) * ncells + cell] = cur[f][j2];
    }}
}}

extern "C" __global__ void __launch_bounds__(CELLS * N * N)
hermite_evolve(const T* __restrict__ coef, T* __restrict__ dst, const T* __restrict__ lam,
               int n0, int n1, int n2) {{
    PROLOGUE
    T cur[NF][N];
    const int j0 = col / N, j1 = col % N;
    #pragma unroll
    for (int f = 0; f < NF; ++f)
        #pragma unroll
        for (int j2 = 0; j2 < N; ++j2) {{
            cur[f][j2] = __ldg(coef + ((long long)(f * N * N + col) * N + j2) * ncells + cell_in);
            SH(f, j0, j1, j2) = cur[f][j2];
        }}
    evolve_store(sh, cl, col, cur, lam, dst, cell, ncells);
}}
"""


def make_kernels(xp, m: int, q: int, system, dtype, form: str = "monolithic", *,
                 cells_per_block: int | None = None, tile: gpu_propagator.Tile | None = None):
    """The half-step kernels of one form for (m, q, system, dtype); cells_per_block caps the
    shared forms' blocks, tile is the propagator's (None: their defaults)."""
    if form == "propagator":
        return gpu_propagator.PropagatorKernel(xp, m, q, system, dtype, tile)

    n = 2 * m + 2
    cube, plane = system.n_fields * n ** 3, system.n_fields * n ** 2
    if form == "monolithic":
        form = ("monolithic-register" if cube <= REGISTER_AUTO else
                "monolithic-warp" if plane <= gpu_warp.MAX_VALUES else "monolithic-shared")
    if form == "monolithic-register":
        if cube > gpu_cell.MAX_VALUES:
            raise InputError(f"hermite kernel = {form!r}: a cell of {cube} values does not fit in "
                              f"registers (at most {gpu_cell.MAX_VALUES}); use monolithic-shared")
        return gpu_cell.CellKernel(xp, m, q, system, dtype)
    if form == "monolithic-warp":
        if plane > gpu_warp.MAX_VALUES:
            raise InputError(f"hermite kernel = {form!r}: a plane of {plane} values does not fit in "
                              f"a lane's registers (at most {gpu_warp.MAX_VALUES}); use monolithic-shared")
        return gpu_warp.WarpKernel(xp, m, q, system, dtype)
    return HermiteKernels(xp, m, q, system, dtype, "two-kernel" if form == "two-kernel" else "monolithic",
                          cells_per_block)


class HermiteKernels:
    """Compiled kernels for one (m, q, system, dtype); `half_step` runs either form; max_cells
    caps the cells per block."""

    def __init__(self, xp, m: int, q: int, system, dtype, form: str = "monolithic",
                 max_cells: int | None = None):
        self.xp = xp
        self.m, self.q, self.form = m, q, form
        self.dtype = np.dtype(dtype)
        self.n_fields = system.n_fields
        self.couplings = system.couplings()
        self.cells = cells_per_block(m, self.n_fields, self.dtype.itemsize, max_cells)
        self.module = compile_module(xp, kernel_source(m, q, tuple(self.couplings), self.n_fields, self.dtype,
                                                       self.cells))
        n = 2 * m + 2
        hleft, finv = interpolation_operator(m)
        for name, values in (("Hc", hleft), ("Finv", finv)):
            const = xp.ndarray((values.size,), self.dtype, self.module.get_global(name))
            const[...] = xp.asarray(values.ravel(), dtype=self.dtype)
        self.threads = self.cells * n * n
        self.shared = self.n_fields * n ** 3 * self.cells * self.dtype.itemsize
        self._coef = None

    def half_step(self, src, dst, lam, shift: int) -> None:
        xp = self.xp
        n0, n1, n2 = src.shape[-3:]
        ncells = n0 * n1 * n2
        blocks = (ncells + self.cells - 1) // self.cells
        dims = (np.int32(n0), np.int32(n1), np.int32(n2))
        if self.form == "monolithic":
            self.module.get_function("hermite_monolithic")(
                (blocks,), (self.threads,), (src, dst, lam, np.int32(shift)) + dims, shared_mem=self.shared)
            return
        n = 2 * self.m + 2
        # (kept at the largest size asked: a box's surface passes take a block between whole steps)
        if self._coef is None or self._coef.size < self.n_fields * n ** 3 * ncells:
            self._coef = xp.empty(self.n_fields * n ** 3 * ncells, dtype=self.dtype)
        self.module.get_function("hermite_interpolate")(
            (blocks,), (self.threads,), (src, self._coef, np.int32(shift)) + dims, shared_mem=self.shared)
        self.module.get_function("hermite_evolve")(
            (blocks,), (self.threads,), (self._coef, dst, lam) + dims, shared_mem=self.shared)
