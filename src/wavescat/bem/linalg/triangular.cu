// Level-scheduled sparse triangular solves of factors sharing one pattern (triangular.py).
#define MAX_WARPS 32
// x = (x - s) / d (d the inverse diagonal entry dinv, or 1): a row's solution, in place
__device__ __forceinline__ void finish_row(double* x, double sr, double si, const double* dinv,
                                           int has_diag) {
    double tr = x[0] - sr, ti = x[1] - si;
    if (has_diag) {
        const double t = tr * dinv[0] - ti * dinv[1];
        ti = tr * dinv[1] + ti * dinv[0];
        tr = t;
    }
    x[0] = tr;
    x[1] = ti;
}

// Solve in place, in level order, T x = b for the rows `order` of a triangular factor T
// (strictly triangular part: ip, ix, vals of factor f; its inverse diagonal dinv, or a unit
// diagonal when has_diag is 0) and 32 columns of X (factor f's n x r block).
extern "C" __global__ void triangular_levels(const int* order, const int* lptr, int nlev,
                                             const int* ip, const int* ix, const double* vals,
                                             const double* dinv, int has_diag, long long nnz,
                                             int n, double* X, int r) {
    __shared__ double part[MAX_WARPS][32][2];
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32, W = blockDim.x / 32;
    const int f = blockIdx.y, c = blockIdx.x * 32 + lane;
    const bool live = c < r;
    double* Xf = X + 2 * ((long long)f * n * r + c);
    const double* vf = vals + 2 * (long long)f * nnz;
    const double* df = dinv + 2 * (long long)f * n;
    for (int lev = 0; lev < nlev; ++lev) {
        const int p0 = lptr[lev], rows = lptr[lev + 1] - p0;
        const int G = rows < W ? W / rows : 1;  // warps per row
        const int g = w / G, k = w % G;  // this warp: row p0 + g (+ W ...), entries k, k + G, ...
        for (int p = p0 + g; p < p0 + rows; p += W) {
            const int i = order[p];
            double sr = 0, si = 0;
            if (live) {
#pragma unroll 4
                for (int q = ip[i] + k; q < ip[i + 1]; q += G) {  // unrolled: loads in flight
                    const double ar = vf[2 * (long long)q], ai = vf[2 * (long long)q + 1];
                    const double* x = Xf + 2 * (long long)ix[q] * r;
                    const double xr = x[0], xi = x[1];
                    sr += ar * xr - ai * xi;
                    si += ar * xi + ai * xr;
                }
            }
            if (G > 1) {  // the row's partial sums meet in shared memory
                part[w][lane][0] = sr;
                part[w][lane][1] = si;
            }
            if (G == 1 && live) finish_row(Xf + 2 * (long long)i * r, sr, si, df + 2 * i, has_diag);
        }
        if (G > 1) {  // uniform over the block: every thread meets the barrier
            __syncthreads();
            if (k == 0 && g < rows && live) {
                const int i = order[p0 + g];
                double sr = 0, si = 0;
                for (int h = 0; h < G; ++h) {
                    sr += part[w + h][lane][0];
                    si += part[w + h][lane][1];
                }
                finish_row(Xf + 2 * (long long)i * r, sr, si, df + 2 * i, has_diag);
            }
        }
        __syncthreads();
    }
}
