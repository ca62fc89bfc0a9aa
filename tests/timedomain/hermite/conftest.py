"""`cuda_host`: run a generated CUDA kernel on the CPU (g++, one std::thread per CUDA thread).

The kernel source is compiled as C++ after a prelude that maps the CUDA built-ins it uses
onto threads: __shared__ becomes static (blocks run one at a time), __syncthreads a block
barrier, and __shfl_down_sync an exchange through a block-wide buffer between two barriers
(valid for kernels whose whole block runs every shuffle, as gpu_propagator's does).
"""
import ctypes
import hashlib
import re
import subprocess

import numpy as np
import pytest

from ...cuda_emulation import compiler

PRELUDE = r"""
#include <barrier>
#include <thread>
#include <vector>
struct dim3 { unsigned x, y, z; };
static thread_local dim3 threadIdx;
static dim3 blockIdx, blockDim;
static std::barrier<>* block_barrier;
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
static inline void __syncthreads() { block_barrier->arrive_and_wait(); }
template <class T> static inline T __ldg(const T* p) { return *p; }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned delta, int width) {
    static std::vector<T> lanes(1024);
    const unsigned t = threadIdx.x;
    lanes[t] = v;
    __syncthreads();
    const T out = t % width + delta < (unsigned)width ? lanes[t + delta] : v;
    __syncthreads();
    return out;
}
"""

LAUNCHER = r"""
extern "C" void launch(unsigned gx, unsigned gy, unsigned gz, unsigned threads, void** a) {
    blockDim = {threads, 1, 1};
    for (unsigned z = 0; z < gz; ++z) for (unsigned y = 0; y < gy; ++y) for (unsigned x = 0; x < gx; ++x) {
        blockIdx = {x, y, z};
        std::barrier<> bar(threads);
        block_barrier = &bar;
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < threads; ++t)
            pool.emplace_back([=] { threadIdx = {t, 0, 0}; KERNEL(CALL); });
        for (auto& th : pool) th.join();
    }
}
"""


def _signature(source: str, kernel: str) -> list[str]:
    """C types of the kernel's parameters, from its definition."""
    params = re.search(rf"{kernel}\(([^)]*)\)", source).group(1)
    return [p.rsplit(None, 1)[0].replace("__restrict__", "").strip() for p in params.split(",")]


@pytest.fixture(scope="session")
def cuda_host(tmp_path_factory):
    """run(source, kernel, grid, threads, args): launch `kernel` of `source` on the CPU.

    args: NumPy arrays (passed as device pointers) and NumPy scalars, in parameter order."""
    cxx = compiler()  # skips without one, fails on CI
    libs = {}
    workdir = tmp_path_factory.mktemp("cuda_host")

    def run(source, kernel, grid, threads, args):
        types = _signature(source, kernel)
        call = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(types))
        code = PRELUDE + source + LAUNCHER.replace("KERNEL", kernel).replace("CALL", call)
        key = hashlib.sha1(code.encode()).hexdigest()[:16]
        if key not in libs:
            cpp, lib = workdir / f"{key}.cpp", workdir / f"{key}.so"
            cpp.write_text(code)
            subprocess.run([cxx, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o", str(lib),
                            str(cpp)], check=True)
            libs[key] = ctypes.CDLL(str(lib))
        keep = [ctypes.c_void_p(a.ctypes.data) if isinstance(a, np.ndarray)
                else np.ctypeslib.as_ctypes_type(a.dtype)(a.item()) for a in args]
        ptrs = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(k) for k in keep])
        gx, gy, gz = grid
        libs[key].launch(ctypes.c_uint(gx), ctypes.c_uint(gy), ctypes.c_uint(gz), ctypes.c_uint(threads), ptrs)

    return run
