/* Shared form of the Hermite half step, monolithic and split at the interpolation (gpu.py renders
   it after `typedef <real> T;` and the #defines M, M1, N, NF, Q, NCPL, CELLS, TOP). The line
   __RHS__ becomes the Taylor right-hand sides of the system, one statement per field. */
#define SH(f, a, b, c) sh[((((f) * N + (a)) * N + (b)) * N + (c)) * CELLS + cl]

__constant__ T Hc[N * M1];   // H~ on the left-vertex data (see interpolation_operator)
__constant__ T Finv[N];      // 1 / j!

// one 1D interpolation: out = H~ r, with r = (left k = 0..m, right k = 0..m)
__device__ __forceinline__ void apply_h(const T r[N], T out[N]) {
    T e[M1], o[M1];
    #pragma unroll
    for (int k = 0; k < M1; ++k) {
        e[k] = (k % 2 == 0) ? r[k] + r[M1 + k] : r[k] - r[M1 + k];
        o[k] = (k % 2 == 0) ? r[k] - r[M1 + k] : r[k] + r[M1 + k];
    }
    #pragma unroll
    for (int j = 0; j < N; ++j) {
        T t = 0;
        #pragma unroll
        for (int k = 0; k < M1; ++k) t += Hc[j * M1 + k] * ((j % 2 == 0) ? e[k] : o[k]);
        out[j] = t;
    }
}

// axis-0 pass: thread (p1, p2) gathers its 2(m+1) vertex data along axis 0 and applies H
__device__ __forceinline__ void gather_interpolate(const T* __restrict__ src, T* sh, int cl, int col,
        long long cell, int shift, int n0, int n1, int n2) {
    const int p1 = col / N, p2 = col % N;
    const int a1 = p1 / M1, k1 = p1 % M1, a2 = p2 / M1, k2 = p2 % M1;
    const unsigned int c32 = (unsigned int)cell;  // grids stay below 2^31 cells
    const int i2 = (int)(c32 % (unsigned)n2), i1 = (int)((c32 / (unsigned)n2) % (unsigned)n1),
              i0 = (int)(c32 / ((unsigned)n2 * (unsigned)n1));
    int v0[2], v1 = i1 + shift + a1, v2 = i2 + shift + a2;
    v1 += (v1 < 0) ? n1 : ((v1 >= n1) ? -n1 : 0);
    v2 += (v2 < 0) ? n2 : ((v2 >= n2) ? -n2 : 0);
    #pragma unroll
    for (int a0 = 0; a0 < 2; ++a0) {
        int v = i0 + shift + a0;
        v0[a0] = v + ((v < 0) ? n0 : ((v >= n0) ? -n0 : 0));
    }
    const long long plane = (long long)n0 * n1 * n2;
    #pragma unroll
    for (int f = 0; f < NF; ++f) {
        T r[N];
        #pragma unroll
        for (int a0 = 0; a0 < 2; ++a0) {
            #pragma unroll
            for (int k0 = 0; k0 < M1; ++k0) {
                const long long dof = ((f * M1 + k0) * M1 + k1) * M1 + k2;
                r[a0 * M1 + k0] = __ldg(src + dof * plane + ((long long)v0[a0] * n1 + v1) * n2 + v2);
            }
        }
        T b[N];
        apply_h(r, b);
        #pragma unroll
        for (int j = 0; j < N; ++j) SH(f, j, p1, p2) = b[j];
    }
}

// axis-1 then axis-2 passes; afterwards thread (j0, j1) holds column j2 in cur
__device__ __forceinline__ void interpolate_axes12(T* sh, int cl, int col, T cur[NF][N]) {
    __syncthreads();
    {
        const int j0 = col / N, p2 = col % N;
        #pragma unroll
        for (int f = 0; f < NF; ++f) {
            T r[N];
            #pragma unroll
            for (int i = 0; i < N; ++i) r[i] = SH(f, j0, i, p2);
            T b[N];
            apply_h(r, b);
            #pragma unroll
            for (int j = 0; j < N; ++j) SH(f, j0, j, p2) = b[j];
        }
    }
    __syncthreads();
    const int j0 = col / N, j1 = col % N;
    #pragma unroll
    for (int f = 0; f < NF; ++f) {
        T r[N];
        #pragma unroll
        for (int i = 0; i < N; ++i) r[i] = SH(f, j0, j1, i);
        apply_h(r, cur[f]);
        #pragma unroll
        for (int j = 0; j < N; ++j) SH(f, j0, j1, j) = cur[f][j];
    }
}

// q-stage Taylor series, forward: cur_s = (1/s) L cur_(s-1); sum the centre data (index <= m)
__device__ __forceinline__ void evolve_store(T* sh, int cl, int col, T cur[NF][N],
        const T* __restrict__ lam_g, T* __restrict__ dst, long long cell, long long ncells) {
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
    for (int s = 1; s <= Q; ++s) {
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
        if (compute) {
            #pragma unroll
            for (int j2 = 0; j2 < N; ++j2) {
                __RHS__
            }
        }
        __syncthreads();  // everyone has read stage s-1
        if (compute) {
            #pragma unroll
            for (int f = 0; f < NF; ++f)
                #pragma unroll
                for (int j2 = 0; j2 < N; ++j2) {
                    cur[f][j2] = nxt[f][j2];
                    SH(f, j0, j1, j2) = nxt[f][j2];
                    if (j2 < M1) acc[f][j2] += nxt[f][j2];
                }
        } else if (needed) {
            #pragma unroll
            for (int f = 0; f < NF; ++f)
                #pragma unroll
                for (int j2 = 0; j2 < N; ++j2) {
                    cur[f][j2] = (T)0;
                    SH(f, j0, j1, j2) = (T)0;
                }
        }
    }
    if (j0 < M1 && j1 < M1 && cell < ncells) {
        #pragma unroll
        for (int f = 0; f < NF; ++f)
            #pragma unroll
            for (int j2 = 0; j2 < M1; ++j2)
                dst[((long long)((f * M1 + j0) * M1 + j1) * M1 + j2) * ncells + cell] =
                    acc[f][j2] * (Finv[j0] * Finv[j1] * Finv[j2]);
    }
}

#define PROLOGUE \
    extern __shared__ unsigned char sh_raw[]; \
    T* sh = reinterpret_cast<T*>(sh_raw); \
    const int cl = threadIdx.x % CELLS, col = threadIdx.x / CELLS; \
    const long long ncells = (long long)n0 * n1 * n2; \
    long long cell = (long long)blockIdx.x * CELLS + cl; \
    const long long cell_in = cell < ncells ? cell : ncells - 1;

extern "C" __global__ void __launch_bounds__(CELLS * N * N)
hermite_monolithic(const T* __restrict__ src, T* __restrict__ dst, const T* __restrict__ lam,
                   int shift, int n0, int n1, int n2) {
    PROLOGUE
    T cur[NF][N];
    gather_interpolate(src, sh, cl, col, cell_in, shift, n0, n1, n2);
    interpolate_axes12(sh, cl, col, cur);
    evolve_store(sh, cl, col, cur, lam, dst, cell, ncells);
}

extern "C" __global__ void __launch_bounds__(CELLS * N * N)
hermite_interpolate(const T* __restrict__ src, T* __restrict__ coef, int shift, int n0, int n1, int n2) {
    PROLOGUE
    T cur[NF][N];
    gather_interpolate(src, sh, cl, col, cell_in, shift, n0, n1, n2);
    interpolate_axes12(sh, cl, col, cur);
    if (cell < ncells) {
        #pragma unroll
        for (int f = 0; f < NF; ++f)
            #pragma unroll
            for (int j2 = 0; j2 < N; ++j2)
                coef[((long long)(f * N * N + col) * N + j2) * ncells + cell] = cur[f][j2];
    }
}

extern "C" __global__ void __launch_bounds__(CELLS * N * N)
hermite_evolve(const T* __restrict__ coef, T* __restrict__ dst, const T* __restrict__ lam,
               int n0, int n1, int n2) {
    PROLOGUE
    T cur[NF][N];
    const int j0 = col / N, j1 = col % N;
    #pragma unroll
    for (int f = 0; f < NF; ++f)
        #pragma unroll
        for (int j2 = 0; j2 < N; ++j2) {
            cur[f][j2] = __ldg(coef + ((long long)(f * N * N + col) * N + j2) * ncells + cell_in);
            SH(f, j0, j1, j2) = cur[f][j2];
        }
    evolve_store(sh, cl, col, cur, lam, dst, cell, ncells);
}
