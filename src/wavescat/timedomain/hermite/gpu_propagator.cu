/* Propagator form of the Hermite half step (gpu_propagator.py renders it after `typedef <real> T;`
   and the #defines LANES, ROWS, THREADS, NDOF, BUFFERS). Generated per m, in place: __OPERATORS__
   (the parameters p<d>_<k>_<i> of P_0, P_1, P_2), the register lists __NODES__ and __TEMPS__; a
   line holding only a token becomes statements: __LOADS__ (the first node plane), __AXES02__
   (one node plane's axis-0 and axis-2 passes), __AXIS1__ (the axis-1 pass and the stores). */

__device__ __forceinline__ int wrap(int v, int n) {
    v %= n;
    return v < 0 ? v + n : v;
}

// One half step of scalar advection as P_0 (x) P_1 (x) P_2 on the 8 vertices of every cell.
// Thread (ty, tx) owns node column (i1 + shift, i2 + shift) and cell column (i1, i2); the
// block marches along i0 through cell planes [first, last).
extern "C" __global__ void __launch_bounds__(THREADS)
hermite_propagator(const T* __restrict__ src, T* __restrict__ dst, int shift, int n0, int n1, int n2,
                   int planes, __OPERATORS__) {
    __shared__ T sm[BUFFERS * NDOF * THREADS];
    const int tx = threadIdx.x % LANES, ty = threadIdx.x / LANES;
    const int i2 = blockIdx.x * (LANES - 1) + tx, i1 = blockIdx.y * (ROWS - 1) + ty;
    const int first = blockIdx.z * planes;
    const int last = first + planes < n0 ? first + planes : n0;
    // the last lane and row are halo; lanes past the grid wrap around and store nothing
    const bool store = tx < LANES - 1 && ty < ROWS - 1 && i1 < n1 && i2 < n2;
    const long long plane = (long long)n0 * n1 * n2;
    const int column = wrap(i1 + shift, n1) * n2 + wrap(i2 + shift, n2);
    int z = wrap(first + shift, n0);  // node plane left of cell plane `first`
    T __NODES__;
    T __TEMPS__;
    {
        const T* s = src + (long long)z * n1 * n2 + column;
        __LOADS__
    }
    #pragma unroll 1
    for (int cell = first; cell < last; ++cell) {
        z = z + 1 == n0 ? 0 : z + 1;
        const T* s = src + (long long)z * n1 * n2 + column;
        T* sb = sm + (BUFFERS == 2 ? (cell & 1) * (NDOF * THREADS) : 0) + threadIdx.x;
        __AXES02__
        __syncthreads();  // the axis-2 results of the row below are in shared memory
        if (store) {
            T* d = dst + ((long long)cell * n1 + i1) * n2 + i2;
            __AXIS1__
        }
        if (BUFFERS == 1) __syncthreads();  // everyone has read sb before it is refilled
    }
}
