"""Products of the stored block stacks with wide blocks of vectors on the GPU, reading the
vectors in place.

The batched-GEMM product (hmatrix.DevicePart.apply) gathers, for every block, the rows of X
its columns touch into a (B, L, r) copy and scatters the (B, L, r) results back with a sparse
product; for r in the hundreds (aspect sweeps) those copies are tens of GB per product and
take most of its time. Here one warp takes one block and 32 of the r columns: it reads its
block's rows of X where they are (32 consecutive entries of a row: one coalesced load), keeps
the partial sums in registers (16 rows of a dense block, or 16 columns of V^T X of a low-rank
one, at a time) and adds its rows of Y with atomics (blocks sharing rows add in any order).
The block entries are the same for the 32 lanes: one broadcast load each (through the
read-only cache, as X's: nothing a launch reads is written by it).

Complex blocks and vectors only, interleaved (re, im). The blocks are read in their stored
precision (STORE: complex64 blocks are half the bytes to read) and every sum is formed in the
vectors' precision (REAL: double for a double solve); Y must be zero (or hold what the
products add to) on entry.
"""
from __future__ import annotations

import numpy as np

_SOURCE = r"""
#define CHUNK 16
// the warp of this thread: block b of the stack, columns tile * 32 + lane of X and Y
#define WARP_SETUP                                                                       \
    const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / 32;      \
    const int lane = threadIdx.x % 32, tiles = (r + 31) / 32;                             \
    if (warp >= (long long)B * tiles) return;                                             \
    const int b = (int)(warp / tiles), c = (int)(warp % tiles) * 32 + lane;               \
    if (c >= r) return;                                                                   \
    const REAL* Xb = X + 2 * ((long long)c0[b] * r + c);                                  \
    REAL* Yb = Y + 2 * ((long long)r0[b] * r + c);                                        \
    const int mb = m[b], nb = n[b];

// s[q] = sum_j a[q qs + j js] X[c0_b + j, c] over the block's columns j < nb, for q < count:
// CHUNK partial sums in registers, the entries a the same for every lane (broadcast loads)
__device__ __forceinline__ void sums_times_x(REAL* sr, REAL* si, const STORE* a, int qs, int js,
                                             int count, const REAL* Xb, int nb, int r) {
    for (int q = 0; q < CHUNK; ++q) sr[q] = si[q] = 0;
    for (int j = 0; j < nb; ++j) {
        const REAL xr = __ldg(Xb + 2 * (long long)j * r), xi = __ldg(Xb + 2 * (long long)j * r + 1);
        const STORE* aj = a + (long long)j * js;
        for (int q = 0; q < CHUNK; ++q) {
            if (q < count) {
                const REAL ar = __ldg(aj + q * qs), ai = __ldg(aj + q * qs + 1);
                sr[q] += ar * xr - ai * xi;
                si[q] += ar * xi + ai * xr;
            }
        }
    }
}

// Y[r0_b + i, c] += sum_j D[b, i, j] X[c0_b + j, c]   (D: B x Lr x Lc, rows beyond m_b unused)
extern "C" __global__ void dense_blocks(const STORE* D, const int* r0, const int* c0,
                                        const int* m, const int* n, int B, int Lr, int Lc,
                                        const REAL* X, REAL* Y, int r) {
    WARP_SETUP
    const STORE* Db = D + 2 * (long long)b * Lr * Lc;
    for (int i0 = 0; i0 < mb; i0 += CHUNK) {
        const int rows = mb - i0 < CHUNK ? mb - i0 : CHUNK;
        REAL sr[CHUNK], si[CHUNK];
        sums_times_x(sr, si, Db + 2 * (long long)i0 * Lc, 2 * Lc, 2, rows, Xb, nb, r);
        for (int q = 0; q < rows; ++q) {
            atomicAdd(Yb + 2 * (long long)(i0 + q) * r, sr[q]);
            atomicAdd(Yb + 2 * (long long)(i0 + q) * r + 1, si[q]);
        }
    }
}

// Y[r0_b + i, c] += sum_l U[b, i, l] (sum_j V[b, j, l] X[c0_b + j, c])
// (U: B x Lu x K, V: B x Lv x K; V^T X taken CHUNK columns of the rank at a time)
extern "C" __global__ void lowrank_blocks(const STORE* U, const STORE* V, const int* r0,
                                          const int* c0, const int* m, const int* n, int B,
                                          int Lu, int Lv, int K, const REAL* X, REAL* Y, int r) {
    WARP_SETUP
    const STORE* Ub = U + 2 * (long long)b * Lu * K;
    const STORE* Vb = V + 2 * (long long)b * Lv * K;
    for (int l0 = 0; l0 < K; l0 += CHUNK) {
        const int ranks = K - l0 < CHUNK ? K - l0 : CHUNK;
        REAL tr[CHUNK], ti[CHUNK];
        sums_times_x(tr, ti, Vb + 2 * l0, 2, 2 * K, ranks, Xb, nb, r);
        for (int i = 0; i < mb; ++i) {
            const STORE* u = Ub + 2 * ((long long)i * K + l0);
            REAL yr = 0, yi = 0;
            for (int q = 0; q < CHUNK; ++q) {
                if (q < ranks) {
                    const REAL ar = __ldg(u + 2 * q), ai = __ldg(u + 2 * q + 1);
                    yr += ar * tr[q] - ai * ti[q];
                    yi += ar * ti[q] + ai * tr[q];
                }
            }
            atomicAdd(Yb + 2 * (long long)i * r, yr);
            atomicAdd(Yb + 2 * (long long)i * r + 1, yi);
        }
    }
}
"""

THREADS = 128  # four warps per thread block


class BlockProducts:
    """The two kernels for one pair of precisions of one array module: the vectors' `dtype`
    (the sums') and the stored blocks' `store` (default the same); compiled once per pair."""

    _compiled: dict = {}

    def __init__(self, xp, dtype, store=None):
        self.xp = xp
        self.dtype = np.dtype(dtype)
        self.store = np.dtype(store or dtype)
        for dt in (self.dtype, self.store):
            if dt.kind != "c":
                raise TypeError(f"block products take complex stacks, not {dt}")
        real, stored = ("double" if dt == np.complex128 else "float" for dt in (self.dtype, self.store))
        key = (id(xp), real, stored)
        if key not in self._compiled:
            module = xp.RawModule(code=f"typedef {real} REAL;\ntypedef {stored} STORE;\n" + _SOURCE)
            self._compiled[key] = (module.get_function("dense_blocks"),
                                   module.get_function("lowrank_blocks"))
        self._dense, self._lowrank = self._compiled[key]

    def _launch(self, kernel, B, r, args):
        warps = B * (-(-r // 32))
        kernel(((warps * 32 + THREADS - 1) // THREADS,), (THREADS,), args)

    def add(self, group, places, X, Y):
        """Y += (the blocks of `group`, stored in `store`) X for X (n_cols, r) and Y
        (n_rows, r), C-contiguous arrays of `dtype`; `places` = (r0, c0, m, n) of the group as
        int32 arrays."""
        r = np.int32(X.shape[1])
        B = int(places[0].shape[0])
        if B == 0:
            return
        xp = self.xp  # the kernels index the stacks as packed arrays: no copy when they are
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
