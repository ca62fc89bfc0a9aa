// dense_blocks and lowrank_blocks (block_products.py), after the typedefs of REAL (the
// vectors' and the sums' precision) and STORE (the blocks').
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

// One vector (r = 1), as GMRES's single right-hand side multiplies: one thread block per block
// of the stack, its warps over the block's rows and their lanes along a row, so every warp
// reads 32 consecutive entries of a row (coalesced), where the kernels above, one lane per
// column of X, would leave 31 lanes idle. X (n_cols,) and Y (n_rows,) complex, interleaved.
#define VEC_RANKS 128  // the slice of a low-rank block's rank that one pass holds in shared memory

// the sum over the warp's lanes, in lane 0
__device__ __forceinline__ void warp_sum(REAL& re, REAL& im) {
    for (int d = 16; d > 0; d /= 2) {
        re += __shfl_down_sync(0xffffffffu, re, d);
        im += __shfl_down_sync(0xffffffffu, im, d);
    }
}

// Y[r0_b + i] += sum_j D[b, i, j] X[c0_b + j]
extern "C" __global__ void dense_vector(const STORE* D, const int* r0, const int* c0,
                                        const int* m, const int* n, int B, int Lr, int Lc,
                                        const REAL* X, REAL* Y) {
    const int b = blockIdx.x, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    if (b >= B) return;
    const STORE* Db = D + 2 * (long long)b * Lr * Lc;
    const REAL* Xb = X + 2 * (long long)c0[b];
    REAL* Yb = Y + 2 * (long long)r0[b];
    const int mb = m[b], nb = n[b];
    for (int i = threadIdx.x / 32; i < mb; i += warps) {
        REAL yr = 0, yi = 0;
        for (int j = lane; j < nb; j += 32) {
            const REAL ar = __ldg(Db + 2 * ((long long)i * Lc + j)), ai = __ldg(Db + 2 * ((long long)i * Lc + j) + 1);
            const REAL xr = __ldg(Xb + 2 * j), xi = __ldg(Xb + 2 * j + 1);
            yr += ar * xr - ai * xi;
            yi += ar * xi + ai * xr;
        }
        warp_sum(yr, yi);
        if (lane == 0) {
            atomicAdd(Yb + 2 * i, yr);
            atomicAdd(Yb + 2 * i + 1, yi);
        }
    }
}

// t_l = sum_j V[b, j, l0 + l] X[c0_b + j] over the rows j0 <= j < j1, for l < kc (<= VEC_RANKS):
// each warp sums its rows j into lane-held partial sums, which the block adds up in shared
// memory (blockDim.x / 32 warps, at most 8) into t (2 kc reals)
__device__ __forceinline__ void vt_slice(const STORE* Vb, int K, int l0, int kc, const REAL* Xb,
                                         int j0, int j1, REAL (*part)[2 * VEC_RANKS], REAL* t) {
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, warps = blockDim.x / 32;
    REAL sr[VEC_RANKS / 32], si[VEC_RANKS / 32];
    for (int s = 0; s < VEC_RANKS / 32; ++s) sr[s] = si[s] = 0;
    for (int j = j0 + w; j < j1; j += warps) {
        const REAL xr = __ldg(Xb + 2 * j), xi = __ldg(Xb + 2 * j + 1);
        const STORE* v = Vb + 2 * ((long long)j * K + l0);
        for (int s = 0; s < VEC_RANKS / 32; ++s) {
            const int l = lane + 32 * s;
            if (l < kc) {
                const REAL ar = __ldg(v + 2 * l), ai = __ldg(v + 2 * l + 1);
                sr[s] += ar * xr - ai * xi;
                si[s] += ar * xi + ai * xr;
            }
        }
    }
    for (int s = 0; s < VEC_RANKS / 32; ++s) {
        part[w][2 * (lane + 32 * s)] = sr[s];
        part[w][2 * (lane + 32 * s) + 1] = si[s];
    }
    __syncthreads();
    for (int l = threadIdx.x; l < kc; l += blockDim.x) {
        REAL tr = 0, ti = 0;
        for (int q = 0; q < warps; ++q) {
            tr += part[q][2 * l];
            ti += part[q][2 * l + 1];
        }
        t[2 * l] = tr;
        t[2 * l + 1] = ti;
    }
    __syncthreads();
}

// Y[r0_b + i] += sum_l U[b, i, l0 + l] t_l over l < kc, for the rows i0 <= i < i1: warps over
// the rows, lanes along a row of U (t in shared or global memory)
__device__ __forceinline__ void u_times_t(const STORE* Ub, int K, int l0, int kc, const REAL* t,
                                          int i0, int i1, REAL* Yb) {
    const int lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int i = i0 + threadIdx.x / 32; i < i1; i += warps) {
        const STORE* u = Ub + 2 * ((long long)i * K + l0);
        REAL yr = 0, yi = 0;
        for (int l = lane; l < kc; l += 32) {
            const REAL ar = __ldg(u + 2 * l), ai = __ldg(u + 2 * l + 1);
            yr += ar * t[2 * l] - ai * t[2 * l + 1];
            yi += ar * t[2 * l + 1] + ai * t[2 * l];
        }
        warp_sum(yr, yi);
        if (lane == 0) {
            atomicAdd(Yb + 2 * i, yr);
            atomicAdd(Yb + 2 * i + 1, yi);
        }
    }
}

// Y[r0_b + i] += sum_l U[b, i, l] t_l,  t_l = sum_j V[b, j, l] X[c0_b + j]: t a slice of
// VEC_RANKS at a time, one thread block per block of the stack
extern "C" __global__ void lowrank_vector(const STORE* U, const STORE* V, const int* r0,
                                          const int* c0, const int* m, const int* n, int B,
                                          int Lu, int Lv, int K, const REAL* X, REAL* Y) {
    __shared__ REAL part[8][2 * VEC_RANKS];
    __shared__ REAL t[2 * VEC_RANKS];
    const int b = blockIdx.x;
    if (b >= B) return;
    const STORE* Ub = U + 2 * (long long)b * Lu * K;
    const STORE* Vb = V + 2 * (long long)b * Lv * K;
    for (int l0 = 0; l0 < K; l0 += VEC_RANKS) {
        const int kc = K - l0 < VEC_RANKS ? K - l0 : VEC_RANKS;
        vt_slice(Vb, K, l0, kc, X + 2 * (long long)c0[b], 0, n[b], part, t);
        u_times_t(Ub, K, l0, kc, t, 0, m[b], Y + 2 * (long long)r0[b]);
        __syncthreads();  // part and t are refilled by the next slice
    }
}

// The same product for blocks too large for one thread block each (admissible blocks many
// wavelengths wide: tens of thousands of rows, where one block would keep one SM busy while
// the others idle) in two launches over (block, SPLIT_ROWS rows): T[b] = V_b^T X, added into
// T (B x K complex, zero on entry), then Y += U_b T[b].
#define SPLIT_ROWS 256
extern "C" __global__ void lowrank_vt(const STORE* V, const int* c0, const int* n, int B, int Lv,
                                      int K, const REAL* X, REAL* T) {
    __shared__ REAL part[8][2 * VEC_RANKS];
    __shared__ REAL t[2 * VEC_RANKS];
    const int b = blockIdx.x, j0 = blockIdx.y * SPLIT_ROWS;
    if (b >= B || j0 >= n[b]) return;
    const int j1 = n[b] - j0 < SPLIT_ROWS ? n[b] : j0 + SPLIT_ROWS;
    const STORE* Vb = V + 2 * (long long)b * Lv * K;
    for (int l0 = 0; l0 < K; l0 += VEC_RANKS) {
        const int kc = K - l0 < VEC_RANKS ? K - l0 : VEC_RANKS;
        vt_slice(Vb, K, l0, kc, X + 2 * (long long)c0[b], j0, j1, part, t);
        for (int l = threadIdx.x; l < kc; l += blockDim.x) {
            atomicAdd(T + 2 * ((long long)b * K + l0 + l), t[2 * l]);
            atomicAdd(T + 2 * ((long long)b * K + l0 + l) + 1, t[2 * l + 1]);
        }
        __syncthreads();
    }
}

extern "C" __global__ void lowrank_ut(const STORE* U, const int* r0, const int* m, int B, int Lu,
                                      int K, const REAL* T, REAL* Y) {
    const int b = blockIdx.x, i0 = blockIdx.y * SPLIT_ROWS;
    if (b >= B || i0 >= m[b]) return;
    const int i1 = m[b] - i0 < SPLIT_ROWS ? m[b] : i0 + SPLIT_ROWS;
    u_times_t(U + 2 * (long long)b * Lu * K, K, 0, K, T + 2 * (long long)b * K, i0, i1,
              Y + 2 * (long long)r0[b]);
}
