// The far blocks' kernel products of the directional far field (farfield.py), on the GPU.
// Thread (b, nu) of tile z: target node nu of block b, columns [8 z, 8 z + 8) of the
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
