// The directional far field's product on the GPU (farfield.py): the far blocks' kernel
// products (dir_m2l) and the parent-child transfers (dir_transfer).
//
// dir_m2l: thread (b, nu) of tile z: target node nu of block b, columns [8 z, 8 z + 8) of the
// expansions; the modulated Green's function of each node pair is evaluated as it is used,
// and the block's product is added into its target expansion with atomics (several blocks
// share a target). Expansions are laid out (expansion, node, column), complex interleaved.
// IS_DOUBLE and DAMPED come as #defines (farfield.py).
#if IS_DOUBLE
typedef double real;
#define SQRT sqrt
#define SINCOS sincos
#define EXP exp
#else
typedef float real;
#define SQRT sqrtf
#define SINCOS sincosf
#define EXP expf
#endif
#define TILE 8

extern "C" __global__ void dir_m2l(
    long long nthreads, const int* tgt, const int* src, const real* delta, const real* ht,
    const real* hs, const real* c, const real* phase, const real* grid, int P, int ncols,
    real kr, real ki, const real* M, real* out)
{
    long long id = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (id >= nthreads) return;
    long long b = id / P;
    int nu = (int)(id % P);
    int col0 = blockIdx.y * TILE;
    int ncol = ncols - col0 < TILE ? ncols - col0 : TILE;
    const real c0 = c[3 * b], c1 = c[3 * b + 1], c2 = c[3 * b + 2];
    const real x0 = delta[3 * b] + ht[3 * b] * grid[3 * nu];
    const real x1 = delta[3 * b + 1] + ht[3 * b + 1] * grid[3 * nu + 1];
    const real x2 = delta[3 * b + 2] + ht[3 * b + 2] * grid[3 * nu + 2];
    const real s0 = hs[3 * b], s1 = hs[3 * b + 1], s2 = hs[3 * b + 2];
    const real* Ms = M + 2 * ((long long)src[b] * P * ncols + col0);
    real are[TILE], aim[TILE];
    for (int t = 0; t < TILE; ++t) { are[t] = 0; aim[t] = 0; }
    for (int mu = 0; mu < P; ++mu) {
        const real d0 = x0 - s0 * grid[3 * mu];
        const real d1 = x1 - s1 * grid[3 * mu + 1];
        const real d2 = x2 - s2 * grid[3 * mu + 2];
        const real r = SQRT(d0 * d0 + d1 * d1 + d2 * d2);
        const real cd = d0 * c0 + d1 * c1 + d2 * c2;
        const real p0 = d0 - cd * c0, p1 = d1 - cd * c1, p2 = d2 - cd * c2;
        const real lag = (p0 * p0 + p1 * p1 + p2 * p2) / (r + cd);  // r - c.d, no cancellation
        real amp = (real)0.0795774715459476678844 / r;  // 1 / (4 pi r)
#if DAMPED
        amp *= EXP(-ki * r);
#endif
        real sn, cs;
        SINCOS(kr * lag, &sn, &cs);
        const real sre = amp * cs, sim = amp * sn;
        const real* m = Ms + 2 * (long long)mu * ncols;
        for (int t = 0; t < ncol; ++t) {
            const real mre = m[2 * t], mim = m[2 * t + 1];
            are[t] += sre * mre - sim * mim;
            aim[t] += sre * mim + sim * mre;
        }
    }
    const real phr = phase[2 * b], phi = phase[2 * b + 1];
    real* o = out + 2 * (((long long)tgt[b] * P + nu) * ncols + col0);
    for (int t = 0; t < ncol; ++t) {
        atomicAdd(o + 2 * t, are[t] * phr - aim[t] * phi);
        atomicAdd(o + 2 * t + 1, are[t] * phi + aim[t] * phr);
    }
}

// dir_transfer: block (e, z) applies edge e of a level's transfers to columns
// [tk z, tk z + tk) of the expansions (expansion, node, column; complex interleaved).
//   up (sources):    Y[to[e]] += (A0 x A1 x A2) (phase . X[from[e]])
//   down (targets):  Y[to[e]] += phase . (A0 x A1 x A2)^T X[from[e]]
// A_a = lagrange[a, cluster[e]] ([parent node, child node], p x p, x slowest in a node's
// index), phase[n] = exp(i w[e].grid[n]) offset[e] on the child's nodes. The columns sit in
// shared memory while the three axes are swept one after another; several edges add into
// one expansion, hence the atomics.
extern "C" __global__ void dir_transfer(
    const int* from, const int* to, const int* cluster, const real* w, const real* offset,
    const real* lagrange, long long nclusters, const real* grid, int p, int ncols, int tk,
    int up, const real* X, real* Y)
{
    extern __shared__ double pool[];
    const int P = p * p * p, pp = p * p;
    real* a = (real*)pool;  // P x tk complex
    real* b = a + 2 * P * tk;  // P x tk complex
    real* A = b + 2 * P * tk;  // 3 x p x p
    const long long e = blockIdx.x;
    const int col0 = blockIdx.y * tk;
    const int ncol = ncols - col0 < tk ? ncols - col0 : tk;
    const long long cl = cluster[e];
    for (int i = threadIdx.x; i < 3 * pp; i += blockDim.x)
        A[i] = lagrange[((i / pp) * nclusters + cl) * pp + i % pp];
    const real w0 = w[3 * e], w1 = w[3 * e + 1], w2 = w[3 * e + 2];
    const real ore = offset[2 * e], oim = offset[2 * e + 1];
    const real* x = X + 2 * ((long long)from[e] * P * ncols + col0);
    for (int n = threadIdx.x; n < P; n += blockDim.x) {
        real pre = 1, pim = 0;
        if (up) {
            real sn, cs;
            SINCOS(w0 * grid[3 * n] + w1 * grid[3 * n + 1] + w2 * grid[3 * n + 2], &sn, &cs);
            pre = cs * ore - sn * oim;
            pim = cs * oim + sn * ore;
        }
        for (int t = 0; t < ncol; ++t) {
            const real xr = x[2 * ((long long)n * ncols + t)], xi = x[2 * ((long long)n * ncols + t) + 1];
            a[2 * (n * tk + t)] = xr * pre - xi * pim;
            a[2 * (n * tk + t) + 1] = xr * pim + xi * pre;
        }
    }
    __syncthreads();
    // sweep axis ax (stride s of its index in a node's): out[.. i ..] = sum_j F[i, j] in[.. j ..],
    // F = A_ax (up: parent i, child j) or its transpose (down)
    real* in = a;
    real* out = b;
    for (int ax = 2; ax >= 0; --ax) {
        const int s = ax == 2 ? 1 : (ax == 1 ? p : pp);
        const real* F = A + ax * pp;
        for (int item = threadIdx.x; item < P * ncol; item += blockDim.x) {
            const int n = item / ncol, t = item % ncol;
            const int i = (n / s) % p, base = n - i * s;
            real re = 0, im = 0;
            for (int j = 0; j < p; ++j) {
                const real f = up ? F[i * p + j] : F[j * p + i];
                const int m = base + j * s;
                re += f * in[2 * (m * tk + t)];
                im += f * in[2 * (m * tk + t) + 1];
            }
            out[2 * (n * tk + t)] = re;
            out[2 * (n * tk + t) + 1] = im;
        }
        __syncthreads();
        real* swap = in;
        in = out;
        out = swap;
    }
    real* y = Y + 2 * ((long long)to[e] * P * ncols + col0);
    for (int n = threadIdx.x; n < P; n += blockDim.x) {
        real pre = 1, pim = 0;
        if (!up) {
            real sn, cs;
            SINCOS(w0 * grid[3 * n] + w1 * grid[3 * n + 1] + w2 * grid[3 * n + 2], &sn, &cs);
            pre = cs * ore - sn * oim;
            pim = cs * oim + sn * ore;
        }
        for (int t = 0; t < ncol; ++t) {
            const real vr = in[2 * (n * tk + t)], vi = in[2 * (n * tk + t) + 1];
            atomicAdd(y + 2 * ((long long)n * ncols + t), vr * pre - vi * pim);
            atomicAdd(y + 2 * ((long long)n * ncols + t) + 1, vr * pim + vi * pre);
        }
    }
}
