"""Products of the stored block stacks with wide blocks of vectors on the GPU, reading the
vectors in place (the kernels: block_products.cu).

The batched-GEMM product (hmatrix.DevicePart.apply) gathers, for every block, the rows of X
its columns touch into a (B, L, r) copy and scatters the (B, L, r) results back with a sparse
product; for r in the hundreds (aspect sweeps) those copies are tens of GB per product and
take most of its time. Here one warp takes one block and 32 of the r columns: it reads its
block's rows of X where they are (32 consecutive entries of a row: one coalesced load), keeps
the partial sums in registers (16 rows of a dense block, or 16 columns of V^T X of a low-rank
one, at a time) and adds its rows of Y with atomics (blocks sharing rows add in any order).
The block entries are the same for the 32 lanes: one broadcast load each (through the
read-only cache, as X's: nothing a launch reads is written by it).

One vector (GMRES's single right-hand side) goes through `dense_vector` and `lowrank_vector`
instead: one thread block per block, its warps over the block's rows and their lanes along a
row (coalesced reads of the stored entries, no lane idle), sums across lanes by shuffles.
Low-rank blocks of more than SPLIT_ABOVE rows (those of an unbounded admissibility, many
wavelengths wide) split their rows over thread blocks of SPLIT_ROWS (`lowrank_vt`, then
`lowrank_ut` through the ranks' sums T): one thread block each would leave most of the
GPU idle while the largest blocks finish.

Complex blocks and vectors only, interleaved (re, im). The blocks are read in their stored
precision (STORE: complex64 blocks are half the bytes to read) and every sum is formed in the
vectors' precision (REAL: double for a double solve); Y must be zero (or hold what the
products add to) on entry.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

_SOURCE = Path(__file__).with_name("block_products.cu").read_text()

THREADS = 128  # four warps per thread block
VECTOR_THREADS = 128  # one vector: four warps over a block's rows (lowrank_vector holds at most 8)
SPLIT_ROWS = 256  # as in block_products.cu
SPLIT_ABOVE = 4 * SPLIT_ROWS


class BlockProducts:
    """The two kernels for one pair of precisions of one array module: the vectors' `dtype`
    (the sums') and the stored blocks' `store` (default the same); compiled once per pair
    and device."""

    _compiled: dict = {}

    def __init__(self, xp, dtype, store=None):
        self.xp = xp
        self.dtype = np.dtype(dtype)
        self.store = np.dtype(store or dtype)
        for dt in (self.dtype, self.store):
            if dt.kind != "c":
                raise TypeError(f"block products take complex stacks, not {dt}")
        real, stored = ("double" if dt == np.complex128 else "float" for dt in (self.dtype, self.store))
        # a function is loaded on the device current when it was fetched: one per device
        # (launched from another, device 0's read its memory: illegal address on 2 GPUs)
        device = getattr(xp.cuda.Device(), "id", 0) if hasattr(xp, "cuda") else 0
        key = (id(xp), device, real, stored)
        if key not in self._compiled:
            module = xp.RawModule(code=f"typedef {real} REAL;\ntypedef {stored} STORE;\n" + _SOURCE)
            self._compiled[key] = tuple(module.get_function(name) for name in (
                "dense_blocks", "lowrank_blocks", "dense_vector", "lowrank_vector",
                "lowrank_vt", "lowrank_ut"))
        (self._dense, self._lowrank, self._dense_vector, self._lowrank_vector,
         self._lowrank_vt, self._lowrank_ut) = self._compiled[key]

    def _launch(self, kernel, B, r, args):
        warps = B * (-(-r // 32))
        kernel(((warps * 32 + THREADS - 1) // THREADS,), (THREADS,), args)

    def add(self, group, places, X, Y):
        """Y += (the blocks of `group`, stored in `store`) X for X (n_cols, r) and Y
        (n_rows, r), or X (n_cols,) and Y (n_rows,), C-contiguous arrays of `dtype`; `places`
        = (r0, c0, m, n) of the group as int32 arrays."""
        B = int(places[0].shape[0])
        if B == 0:
            return
        xp = self.xp  # the kernels index the stacks as packed arrays: no copy when they are
        if X.ndim == 1:  # one thread block per block of the stack
            if group.D is not None:
                D = xp.ascontiguousarray(group.D)
                self._dense_vector((B,), (VECTOR_THREADS,),
                                   (D, *places, np.int32(B), *(np.int32(s) for s in D.shape[1:]), X, Y))
            else:
                U, V = xp.ascontiguousarray(group.U), xp.ascontiguousarray(group.V)
                if max(U.shape[1], V.shape[1]) > SPLIT_ABOVE:
                    self._split_lowrank_vector(U, V, places, B, X, Y)
                    return
                self._lowrank_vector((B,), (VECTOR_THREADS,),
                                     (U, V, *places, np.int32(B), np.int32(U.shape[1]),
                                      np.int32(V.shape[1]), np.int32(U.shape[2]), X, Y))
            return
        r = np.int32(X.shape[1])
        if group.D is not None:
            D = xp.ascontiguousarray(group.D)
            _, Lr, Lc = D.shape
            self._launch(self._dense, B, int(r),
                         (D, *places, np.int32(B), np.int32(Lr), np.int32(Lc), X, Y, r))
        else:
            U, V = xp.ascontiguousarray(group.U), xp.ascontiguousarray(group.V)
            self._launch(self._lowrank, B, int(r),
                         (U, V, *places, np.int32(B), np.int32(U.shape[1]), np.int32(V.shape[1]),
                          np.int32(U.shape[2]), X, Y, r))

    def _split_lowrank_vector(self, U, V, places, B, X, Y):
        r0, c0, m, n = places
        (_, Lu, K), Lv = U.shape, V.shape[1]
        T = self.xp.zeros((B, K), self.dtype)
        chunks = lambda rows: -(-rows // SPLIT_ROWS)  # noqa: E731
        self._lowrank_vt((B, chunks(Lv)), (VECTOR_THREADS,),
                         (V, c0, n, np.int32(B), np.int32(Lv), np.int32(K), X, T))
        self._lowrank_ut((B, chunks(Lu)), (VECTOR_THREADS,),
                         (U, r0, m, np.int32(B), np.int32(Lu), np.int32(K), T, Y))
