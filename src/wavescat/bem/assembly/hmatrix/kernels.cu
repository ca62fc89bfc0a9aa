// hm_pairs, the CUDA twin of kernels.py's _pairs_cpu; after green.cuda_defines' #defines
// (OP, LAPLACE, ...) and green.cu (the real type T, kernel_value).
// One point pair's term of an entry: x (test point, its normal na, weight wa, weighted curl
// ca) against y (trial point: nb, wb, cb).
__device__ __forceinline__ void pair_term(const T* x, const T* na, T wa, const T* ca,
    const T* y, const T* nb, T wb, const T* cb, T kr, T ki, T& acc_re, T& acc_im)
{
    const T d0 = x[0] - y[0], d1 = x[1] - y[1], d2 = x[2] - y[2];
    if (d0*d0 + d1*d1 + d2*d2 == (T)0) return;  // coincident points: a touching pair's
    T gre, gim;
    kernel_value<T>(d0, d1, d2, na, nb, kr, ki, gre, gim);
    const T ww = wa * wb;
#if OP == 3
    const T cc = ca[0]*cb[0] + ca[1]*cb[1] + ca[2]*cb[2];
    const T nn = (na[0]*nb[0] + na[1]*nb[1] + na[2]*nb[2]) * ww;
    const T fre = cc - (kr*kr - ki*ki) * nn, fim = -2*kr*ki * nn;
    acc_re += gre * fre - gim * fim;
    acc_im += gre * fim + gim * fre;
#else
    acc_re += gre * ww;
    acc_im += gim * ww;
#endif
}

struct Point { T x[3], n[3], w, c[3]; };

__device__ __forceinline__ Point load_point(const T* pos, const T* nrm, const T* w,
                                            const T* curl, long long s)
{
    Point p;
    for (int c = 0; c < 3; ++c) { p.x[c] = pos[3*s+c]; p.n[c] = nrm[3*s+c]; }
    p.w = w[s];
#if OP == 3
    for (int c = 0; c < 3; ++c) p.c[c] = curl[3*s+c];
#endif
    return p;
}

// Entry p = (test dof ti[p], trial dof sj[p]): the sum over the real (unpadded) points of
// both supports, tcnt[i] and scnt[j] of them. The points a thread does not share with its
// neighbours stay in registers in the outer loop and the shared ones (an ACA row: one test
// dof for a whole row of threads; a column: one trial dof) are read in the inner loop.
extern "C" __global__ void hm_pairs(const long long npairs, const int* __restrict__ ti,
    const int* __restrict__ sj,
    const T* __restrict__ tpos, const T* __restrict__ tnrm, const T* __restrict__ tw,
    const T* __restrict__ tcurl, const int qt, const int* __restrict__ tcnt,
    const T* __restrict__ spos, const T* __restrict__ snrm, const T* __restrict__ sw,
    const T* __restrict__ scurl, const int qs, const int* __restrict__ scnt,
    const T kr, const T ki, T* __restrict__ out)
{
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const long long i = ti[p], j = sj[p];
    const int na = tcnt[i], nb = scnt[j];
    const bool row = (p > 0 && ti[p - 1] == i) || (p + 1 < npairs && ti[p + 1] == i);
    T acc_re = 0, acc_im = 0;
    if (row) {
        for (int b = 0; b < nb; ++b) {
            const Point y = load_point(spos, snrm, sw, scurl, j * qs + b);
            for (int a = 0; a < na; ++a) {
                const Point x = load_point(tpos, tnrm, tw, tcurl, i * qt + a);
                pair_term(x.x, x.n, x.w, x.c, y.x, y.n, y.w, y.c, kr, ki, acc_re, acc_im);
            }
        }
    } else {
        for (int a = 0; a < na; ++a) {
            const Point x = load_point(tpos, tnrm, tw, tcurl, i * qt + a);
            for (int b = 0; b < nb; ++b) {
                const Point y = load_point(spos, snrm, sw, scurl, j * qs + b);
                pair_term(x.x, x.n, x.w, x.c, y.x, y.n, y.w, y.c, kr, ki, acc_re, acc_im);
            }
        }
    }
#if LAPLACE
    out[p] = acc_re;
#else
    out[2*p] = acc_re; out[2*p+1] = acc_im;
#endif
}
