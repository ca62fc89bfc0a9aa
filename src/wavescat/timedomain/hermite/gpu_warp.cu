/* Warp form of the monolithic Hermite half step, a cell per N lanes (gpu_warp.py renders it
   after `typedef <real> T;` and the #defines M, M1, N, Q, TOP). Generated per (m, q, system),
   in place: __HTAB__, __FTAB__ (H~ and 1/j!), __CELLS__ (cells per warp), __LAST_SLOT__,
   __BUSY_LANES__ and the register lists __PLANES__, __ACCS__, __TEMPS__, __WEIGHTS__,
   __OPERATOR__; a line holding only a token becomes statements: __LAMS__, __LOADS__,
   __OPERATOR_INIT__, __INTERPOLATE__, __ACCS_INIT__, __WEIGHTS_SET__, __STAGES__, __STORES__. */
#define FULL 0xffffffffu
__constant__ T Hw[N * M1] = {__HTAB__};
__constant__ T Fw[N] = {__FTAB__};

extern "C" __global__ void __launch_bounds__(128)
hermite_warp(const T* __restrict__ src, T* __restrict__ dst, const T* __restrict__ lam,
             int shift, int n0, int n1, int n2) {
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int slot = lane / N < __CELLS__ ? lane / N : __LAST_SLOT__;   // idle lanes shadow the last cell
    const int t = lane - slot * N < N ? lane - slot * N : N - 1;
    const int base = slot * N;
    const int ncells = n0 * n1 * n2;
    const long long plane = ncells;
    int cell = warp * __CELLS__ + slot;
    const bool store = cell < ncells && lane < __BUSY_LANES__;
    cell = cell < ncells ? cell : ncells - 1;
    const int i2 = cell % n2, i1 = (cell / n2) % n1, i0 = cell / (n2 * n1);
    const int a0 = t / M1, k0 = t % M1;
    const int x0 = (i0 + shift + a0 + n0) % n0;
    int x1[2], x2[2];
    #pragma unroll
    for (int a = 0; a < 2; ++a) {
        x1[a] = (i1 + shift + a + n1) % n1;
        x2[a] = (i2 + shift + a + n2) % n2;
    }
    T __PLANES__;
    T __ACCS__;
    T __TEMPS__;
    T __WEIGHTS__;
    T __OPERATOR__;
    __LAMS__
    const T last = (t + 1 < N) ? (T)1 : (T)0;
    const T ft = Fw[t];
    {
        __LOADS__
    }
    __OPERATOR_INIT__
    {
        __INTERPOLATE__
    }
    __ACCS_INIT__
    #pragma unroll 1
    for (int s = 1; s <= Q; ++s) {
        const T inv = (T)1 / (T)s;
        __WEIGHTS_SET__
        __STAGES__
    }
    if (store && t < M1) {
        __STORES__
    }
}
