/* Register form of the monolithic Hermite half step, a cell per thread (gpu_cell.py renders it
   after `typedef <real> T;`). Generated per (m, q, system), in place: __REGISTERS__ (every
   register of the cell); a line holding only a token becomes statements: __LAMS__ (the coupling
   factors), __LOADS__ (the 8 vertices' data), __BODY__ (the interpolation and the Taylor
   stages), __STORES__ (the centre data). */
extern "C" __global__ void __launch_bounds__(128)
hermite_cell(const T* __restrict__ src, T* __restrict__ dst, const T* __restrict__ lam,
             int shift, int n0, int n1, int n2) {
    const int cell = blockIdx.x * blockDim.x + threadIdx.x;
    const long long plane = (long long)n0 * n1 * n2;
    if (cell >= plane) return;
    const int i2 = cell % n2, i1 = (cell / n2) % n1, i0 = cell / (n2 * n1);
    int x0[2], x1[2], x2[2];
    #pragma unroll
    for (int a = 0; a < 2; ++a) {
        x0[a] = (i0 + shift + a + n0) % n0;
        x1[a] = (i1 + shift + a + n1) % n1;
        x2[a] = (i2 + shift + a + n2) % n2;
    }
    const int v000 = (x0[0] * n1 + x1[0]) * n2 + x2[0];
    const int v001 = (x0[0] * n1 + x1[0]) * n2 + x2[1];
    const int v010 = (x0[0] * n1 + x1[1]) * n2 + x2[0];
    const int v011 = (x0[0] * n1 + x1[1]) * n2 + x2[1];
    const int v100 = (x0[1] * n1 + x1[0]) * n2 + x2[0];
    const int v101 = (x0[1] * n1 + x1[0]) * n2 + x2[1];
    const int v110 = (x0[1] * n1 + x1[1]) * n2 + x2[0];
    const int v111 = (x0[1] * n1 + x1[1]) * n2 + x2[1];
    __LAMS__
    T __REGISTERS__;
    __LOADS__
    __BODY__
    __STORES__
}
