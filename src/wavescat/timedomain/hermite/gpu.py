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
and one monolithic kernel, both in gpu_shared.cu. Its #defines are set per (m, q, system,
dtype) so every loop over a degree index has a compile-time trip count and is unrolled.

This shared form works for any m and any system. Faster monolithic forms for small cubes
hold the coefficients in registers: gpu_cell.py (a cell per thread) and gpu_warp.py (a
cell per 2m+2 lanes); `make_kernels` picks one (bench/bench_hermite.py times them all).
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from . import gpu_cell, gpu_propagator, gpu_warp
from .gpu_common import compile_module, interpolation_operator, render

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
    """CUDA source of the shared and two-kernel forms (gpu_shared.cu), `cells` cells per block
    (default: cells_per_block's)."""
    cells = cells or cells_per_block(m, n_fields, np.dtype(dtype).itemsize)
    defines = {"M": m, "M1": m + 1, "N": 2 * m + 2, "NF": n_fields, "Q": q, "NCPL": max(len(couplings), 1),
               "CELLS": cells, "TOP": 3 * (2 * m + 1)}
    # one statement per field: which couplings feed it is the system's, known only here
    rhs = [f"nxt[{f}][j2] = {_taylor_terms(couplings, f)};" for f in range(n_fields)]
    return render("gpu_shared.cu", dtype, defines, RHS=rhs)


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
