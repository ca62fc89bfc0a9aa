"""The generated CUDA volume and surface kernels, compiled for the CPU through a small CUDA
shim (one std::thread per CUDA thread, std::barrier for __syncthreads, `static` for
__shared__, blocks one after another), agree with the Numba twin without a GPU.

This checks the index arithmetic of every volume-kernel variant (which thread computes which
element and node, padding nodes, the operator layout, partly filled blocks), and that no
kernel writes outside its output, before the same comparison runs on the device
(test_kernels_gpu.py). It cannot see device-only faults: races the host schedule hides,
shared-memory limits, NVRTC dialect (test_kernels_nvcc.py compiles the sources for sm_90).
"""
import ctypes
import itertools
import re
import shutil
import subprocess

import numpy as np
import pytest

from wavescat.timedomain.dg import gpu_kernels as gk
from wavescat.timedomain.dg.reference import reference_tetrahedron

CXX = shutil.which("g++") or shutil.which("clang++")
pytestmark = pytest.mark.skipif(CXX is None, reason="no C++ compiler on PATH")
PRECISIONS = {"single": np.float32, "double": np.float64}
GUARD = 64  # NaN elements either side of every floating-point array

SHIM = r"""
#include <barrier>
#include <cstddef>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>
#define WAVESCAT_EMULATION 1
/* the shared pool between two guard bands that every launch checks (a pool sized too small,
   or an index past it, breaks them) */
#define SHARED_POOL(name, bytes) \
    static __attribute__((aligned(32))) unsigned char name##_raw[(bytes) + 2 * GUARD_BYTES]; \
    static const bool name##_guarded = guard_pool(name##_raw, (bytes)); \
    unsigned char* const name = name##_raw + GUARD_BYTES
struct uint3_ { unsigned x, y, z; };
static thread_local uint3_ threadIdx, blockIdx;
static uint3_ blockDim, gridDim;
static std::barrier<>* g_barrier;
static std::vector<std::unique_ptr<std::barrier<>>> g_warp_barriers;  /* one per warp of the block */
#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline void __syncthreads() { g_barrier->arrive_and_wait(); }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
struct alignas(8) float2 { float x, y; };

/* A warp's mma: every lane posts its fragments, the warp meets, each lane sums its C entries
   from all lanes' fragments (the PTX layouts), the warp meets again before the next one. */
static double g_frag_a[32][32][4], g_frag_b[32][32][2];
template <class T, class U>
static void warp_mma(T* c, const U* a, const U* b, int ar, int br, int cr, int k, double (*value)(U)) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32, g = l / 4, t = l % 4;
    for (int r = 0; r < ar; ++r) g_frag_a[w][l][r] = value(a[r]);
    for (int r = 0; r < br; ++r) g_frag_b[w][l][r] = value(b[r]);
    g_warp_barriers[w]->arrive_and_wait();
    for (int r = 0; r < cr; ++r) {
        const int row = g + 8 * (r >> 1), col = 2 * t + (r & 1);
        double s = c[r];
        for (int kk = 0; kk < k; ++kk)  /* A (row, kk): lane (row % 8, kk % 4), register row / 8 + 2 (kk / 4) */
            s += g_frag_a[w][(row % 8) * 4 + kk % 4][row / 8 + 2 * (kk / 4)]
                 * g_frag_b[w][col * 4 + kk % 4][kk / 4];  /* B (kk, col): lane (col, kk % 4), register kk / 4 */
        c[r] = (T)s;
    }
    g_warp_barriers[w]->arrive_and_wait();
}
static double tf32_value(unsigned u) { return __uint_as_float(u & 0xFFFFE000u); }  /* the mma reads 19 bits */
static double f64_value(double x) { return x; }
static inline void mma_tf32(float* c, const unsigned* a, const unsigned* b) { warp_mma(c, a, b, 4, 2, 4, 8, tf32_value); }
static inline void mma_tf32_k4(float* c, const unsigned* a, const unsigned* b) { warp_mma(c, a, b, 2, 1, 4, 4, tf32_value); }
static inline void mma_f64(double* c, const double* a, const double* b) { warp_mma(c, a, b, 1, 1, 2, 4, f64_value); }

#define GUARD_BYTES 64
#include <mutex>
static std::mutex g_guard_lock;
static std::vector<std::pair<unsigned char*, size_t>> g_guards;  /* (raw pool, bytes) */
static bool guard_pool(unsigned char* raw, size_t bytes) {
    std::lock_guard<std::mutex> lock(g_guard_lock);
    for (int i = 0; i < GUARD_BYTES; ++i) raw[i] = raw[GUARD_BYTES + bytes + i] = 0xA5;
    g_guards.emplace_back(raw, bytes);
    return true;
}
static int g_guard_broken = 0;
extern "C" int guard_broken() { const int b = g_guard_broken; g_guard_broken = 0; return b; }  /* and clear */
template <class F> static void launch(int grid, int block, F kernel) {
    blockDim = {(unsigned)block, 1, 1}; gridDim = {(unsigned)grid, 1, 1};
    g_warp_barriers.clear();
    for (int w = 0; w * 32 < block; ++w)
        g_warp_barriers.emplace_back(new std::barrier<>(block - 32 * w < 32 ? block - 32 * w : 32));
    for (int b = 0; b < grid; ++b) {
        std::barrier<> bar(block);
        g_barrier = &bar;
        std::vector<std::thread> threads;
        for (int t = 0; t < block; ++t)
            threads.emplace_back([&, t, b] {
                threadIdx = {(unsigned)t, 0, 0}; blockIdx = {(unsigned)b, 0, 0};
                kernel(); bar.arrive_and_drop(); });
        for (auto& th : threads) th.join();
    }
    for (auto& [raw, bytes] : g_guards)
        for (int i = 0; i < GUARD_BYTES; ++i)
            if (raw[i] != 0xA5 || raw[GUARD_BYTES + bytes + i] != 0xA5) {
                g_guard_broken = 1;
                raw[i] = raw[GUARD_BYTES + bytes + i] = 0xA5;  /* re-armed for the next launch */
            }
}
"""

VOLUME_ENTRY = r"""
extern "C" void NAME(int grid, int block, int K, const void* q, const void* geo, const void* D,
                     const void* sigma, void* rhs, double inv_rho, double rhoc2) {
    launch(grid, block, [=] { dg_volume(K, (const real*)q, (const real*)geo, (const dentry*)D,
                                        (const real*)sigma, (real*)rhs, (real)inv_rho, (real)rhoc2); });
}
"""

SURFACE_ENTRY = r"""
extern "C" void NAME(int grid, int block, int K, const void* q, const void* vmapP, const void* face_geo,
                     const void* bvn, const void* lift, void* rhs, double rho, double c, double rhoc2,
                     double alpha) {
    launch(grid, block, [=] { dg_surface(K, (const real*)q, (const long long*)vmapP, (const real*)face_geo,
                                         (const real*)bvn, (const real*)lift, (real*)rhs, (real)rho, (real)c,
                                         (real)rhoc2, (real)alpha); });
}
"""


def _unit(name, source, entry):
    """A generated source in its own namespace, with a C entry point that launches it."""
    macros = sorted(set(re.findall(r"#define (\w+)", source)) - set(re.findall(r"#define (\w+)", SHIM)))
    body = source.replace('extern "C" ', "")
    return (f"namespace {name} {{\n{body}\n{entry.replace('NAME', name)}}}\n"
            + "".join(f"#undef {m}\n" for m in macros))


@pytest.fixture(scope="module")
def emulated(tmp_path_factory, volume_variants):
    """Every kernel of the tests below built into one shared library: key -> C function."""
    units, names = [], {}
    cases = [(order, None) for order in range(1, 7)] + volume_variants
    for (order, tuning), precision in itertools.product(cases, PRECISIONS):
        ref = reference_tetrahedron(order)
        dtype = PRECISIONS[precision]
        # 32-bit indices for the defaults (as GpuKernels on any mesh below 2^32 / 4 Np nodes), both for the variants
        index32 = tuning is None or len(units) % 2 == 0
        tuning = tuning or gk.default_volume_tuning(ref.n_nodes, dtype)
        name = f"v{len(units)}"
        units.append(_unit(name, gk.volume_source(ref.n_nodes, dtype, tuning, True, index32), VOLUME_ENTRY))
        names[("volume", order, tuning, precision)] = name
        key = ("surface", order, precision)
        if key not in names:
            kbs = gk.default_elements_per_block(max(ref.n_nodes, 4 * ref.n_face_nodes))
            src = gk.surface_source(ref.n_nodes, ref.n_face_nodes, ref.face_mask, dtype, kbs)
            names[key] = f"s{len(units)}"
            units.append(_unit(names[key], src, SURFACE_ENTRY))
    path = tmp_path_factory.mktemp("cuda_emulation")
    (path / "kernels.cpp").write_text(SHIM + "".join(units))
    cmd = [CXX, "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-o", str(path / "kernels.so"),
           str(path / "kernels.cpp")]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    lib = ctypes.CDLL(str(path / "kernels.so"))
    return {key: getattr(lib, name) for key, name in names.items()} | {"guard_broken": lib.guard_broken}


def _guarded(a):
    buf = np.full(a.size + 2 * GUARD, np.nan, dtype=a.dtype)
    buf[GUARD:-GUARD] = a.ravel()
    return buf


def _ptr(buf):
    return ctypes.c_void_p(buf[GUARD:].ctypes.data)


def emulated_rhs(kernels, dg, order, tuning, precision, t):
    """rhs of the solver's state by the emulated volume and surface kernels."""
    o = dg.ops
    npn, k = o.Dr.shape[0], o.geo.shape[0]
    tuning = tuning or gk.default_volume_tuning(npn, dg.dtype)
    lay = gk.volume_layout(npn, tuning, np.dtype(dg.dtype).itemsize)
    D = gk.volume_operators(o.Dr, o.Ds, o.Dt, tuning, lay)
    q, geo, sigma, rhs = (_guarded(a) for a in (dg.q, o.geo, o.sigma, np.zeros_like(dg.q)))
    D = _guarded(D)
    kernels[("volume", order, tuning, precision)](
        gk.volume_grid(lay, tuning, k, sms=2), lay.threads, k, _ptr(q), _ptr(geo), _ptr(D), _ptr(sigma), _ptr(rhs),
        ctypes.c_double(1 / o.rho), ctypes.c_double(o.rhoc2))
    kbs = gk.default_elements_per_block(max(npn, o.lift.shape[1]))
    face_geo, lift = _guarded(o.face_geo), _guarded(np.ascontiguousarray(o.lift.T))
    bvn = _guarded(np.asarray(dg.boundary_velocity(t), dtype=dg.dtype))
    kernels[("surface", order, precision)](
        -(-k // kbs), min(1024, 32 * -(-kbs * max(npn, o.lift.shape[1]) // 32)), k, _ptr(q),
        ctypes.c_void_p(o.vmap_p.ctypes.data), _ptr(face_geo), _ptr(bvn), _ptr(lift), _ptr(rhs),
        *(ctypes.c_double(x) for x in (o.rho, o.c, o.rhoc2, o.alpha)))
    assert np.isnan(rhs[:GUARD]).all() and np.isnan(rhs[-GUARD:]).all(), "write outside rhs"
    assert not kernels["guard_broken"](), "write outside a block's shared memory"
    return rhs[GUARD:-GUARD].reshape(dg.q.shape)


def check(emulated, dg_solver, order, tuning, precision):
    dg = dg_solver(order, "cpu", precision)
    want = dg.rhs(dg.q, 0.3).copy()
    got = emulated_rhs(emulated, dg, order, tuning, precision, 0.3)
    tol = 1e-11 if precision == "double" else 1e-5  # 3xTF32 included: one TF32 product fails
    np.testing.assert_allclose(got, want, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("order", range(1, 7))
def test_default_kernels_match_cpu_twin(emulated, dg_solver, order, precision):
    check(emulated, dg_solver, order, None, precision)


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_volume_variants_match_cpu_twin(emulated, dg_solver, volume_variant, precision):
    order, tuning = volume_variant
    check(emulated, dg_solver, order, tuning, precision)


@pytest.mark.parametrize("order", range(1, 7))
def test_node_map_covers_each_node_once(order, volume_variants):
    """Thread slot -> node map of the default and every variant: each node exactly once."""
    npn = reference_tetrahedron(order).n_nodes
    tunings = [gk.default_volume_tuning(npn, np.float32)] + [t for o, t in volume_variants if o == order]
    for tuning in (t for t in tunings if not t.tensor):
        lay = gk.volume_layout(npn, tuning, 4)
        nodes = gk.volume_node_map(npn, lay, tuning.nodes_per_thread)
        assert np.array_equal(np.sort(nodes[nodes >= 0]), np.arange(npn)), tuning
        assert (nodes[lay.nt:] < 0).all() and lay.threads == tuning.kb_volume * lay.nt


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_shared_pool_holds_exactly_the_staged_operators(precision, volume_variants):
    """With d_shared the pool's operator part is the size of the table the kernel copies in
    (too small overruns the pool, too large costs occupancy)."""
    itemsize = np.dtype(PRECISIONS[precision]).itemsize
    for order, tuning in volume_variants:
        if not tuning.d_shared:
            continue
        ref = reference_tetrahedron(order)
        lay = gk.volume_layout(ref.n_nodes, tuning, itemsize)
        D = gk.volume_operators(*(a.astype(PRECISIONS[precision]) for a in (ref.Dr, ref.Ds, ref.Dt)), tuning, lay)
        assert lay.shared_bytes - lay.operator_offset == D.nbytes, tuning
