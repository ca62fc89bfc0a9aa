// The CUDA twin of green.py's green, radial and kernel (put before gpu.cu and
// hmatrix/kernels.cu); the including source defines IS_DOUBLE, OP, LAPLACE (k = 0) and
// DAMPED (Im k != 0): green.cuda_defines.
#define INV4PI 0.079577471545947667884441881686257181
#if IS_DOUBLE
typedef double T;
#else
typedef float T;
#endif
__device__ __forceinline__ double rsqrt_(double x) { return rsqrt(x); }
__device__ __forceinline__ float rsqrt_(float x) { return rsqrtf(x); }
__device__ __forceinline__ void sincos_(double x, double* s, double* c) { sincos(x, s, c); }
__device__ __forceinline__ void sincos_(float x, float* s, float* c) { sincosf(x, s, c); }
__device__ __forceinline__ double exp_(double x) { return exp(x); }
__device__ __forceinline__ float exp_(float x) { return expf(x); }

// G at r2 = |x - y|^2 (re, im), and 1/r, r.
template <typename R>
__device__ __forceinline__ void green(R r2, R kr, R ki, R& gre, R& gim, R& rinv, R& r) {
    rinv = rsqrt_(r2);
    r = r2 * rinv;
    R g = (R)INV4PI * rinv;
#if LAPLACE
    gre = g; gim = 0;
#else
#if DAMPED
    g *= exp_(-ki * r);
#endif
    R s, c;
    sincos_(kr * r, &s, &c);
    gre = g * c; gim = g * s;
#endif
}

// Kernel value of operator OP at d = x - y = (dx, dy, dz); na = n_x, nb = n_y.
// R: the arithmetic type (T, or double where the points are near-coincident).
template <typename R>
__device__ __forceinline__ void kernel_value(R dx, R dy, R dz, const R* na, const R* nb,
                                             R kr, R ki, R& re, R& im) {
    R gre, gim, rinv, r;
    green<R>(dx * dx + dy * dy + dz * dz, kr, ki, gre, gim, rinv, r);
#if OP == 0 || OP == 3
    re = gre; im = gim;
#else
#if OP == 1
    R proj = -(dx * nb[0] + dy * nb[1] + dz * nb[2]);  // (y - x).n_y
#else
    R proj = dx * na[0] + dy * na[1] + dz * na[2];  // (x - y).n_x
#endif
    R rinv2 = rinv * rinv;
#if LAPLACE
    R hre = -gre * rinv2, him = 0;
#else
    R fre = (-ki * r - 1) * rinv2, fim = kr * rinv;  // (ikr - 1)/r^2
    R hre = gre * fre - gim * fim, him = gre * fim + gim * fre;
#endif
    re = hre * proj; im = him * proj;
#endif
}
