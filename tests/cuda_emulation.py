"""CUDA sources run on the CPU: a stand-in for CuPy that compiles RawKernel/RawModule sources
with g++ after a shim of the CUDA built-ins, and launches them with the grid, block and
arguments the production code passes, so CI (which has no GPU) runs the GPU code paths.

The shim runs the CUDA threads of a block as fibers (made by ucontext, switched by
_setjmp/_longjmp, kept from block to block) on the launching thread, and
the blocks (of 1-D, 2-D or 3-D grids) one after another: a thread runs until it reaches a
barrier or ends, then the next one runs (in index order, and in reverse order every other
round, so which of two threads runs first between two barriers changes from round to round);
a barrier lets its threads go on once all the threads still running have reached it (one
that has returned counts as arrived), and a block whose threads all wait at barriers the
others never reach fails the launch instead of hanging.
`__syncthreads` is a block barrier, `__shared__` is `static` (`extern __shared__` a pool of
the launch's size), warp shuffles and a warp's `mma` exchange values between two warp
barriers (the mma summed lane by lane from every lane's fragments, in the PTX layouts),
`atomicAdd` takes a lock, and `__constant__` arrays are reachable through get_global. Every array
argument is copied between two guard bands that each launch checks, and so is the shared
pool (SHARED_POOL), so a write outside an array or a block's shared memory fails the test.
It cannot see device-only faults: races the host schedule hides, shared-memory limits, the
NVRTC dialect (the nvcc tests compile the sources for the device).
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from types import SimpleNamespace

import numpy as np
import pytest


def compiler() -> str:
    """The host C++ compiler; without one the emulation tests skip, except on CI (where g++ is
    installed, so a missing compiler is a broken runner and must not pass as skipped tests)."""
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        message = "no C++ compiler (g++ or clang++) on PATH: cannot run CUDA sources on the host"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: the emulation tests must run there)", pytrace=False)
        pytest.skip(message)
    return cxx


SHIM = r"""
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>
#include <csetjmp>
#include <ucontext.h>
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
/* Fibers: the threads of the block being run, each with its own stack, and the barriers
   (the block's, one per warp) they wait at. */
struct Fiber { ucontext_t context; std::jmp_buf resume; bool started, done, waiting, parked; };
struct Barrier { unsigned live, arrived; std::vector<unsigned> waiting; };
static std::vector<Fiber> g_fibers;
static std::vector<std::unique_ptr<char[]>> g_stacks;
static const size_t STACK_BYTES = 512 * 1024;
static std::jmp_buf g_scheduler;
static unsigned g_current;
static Barrier g_block_barrier;
static std::vector<Barrier> g_warp_barriers;
static void (*g_body)(void*);
static void* g_body_arg;
static int g_deadlock = 0;
extern "C" int deadlocked() { const int d = g_deadlock; g_deadlock = 0; return d; }  /* and clear */
static void release(Barrier& b) {
    for (unsigned t : b.waiting) g_fibers[t].waiting = false;
    b.waiting.clear(); b.arrived = 0;
}
static void arrive_and_wait(Barrier& b) {
    if (++b.arrived == b.live) { release(b); return; }  /* the last one goes on */
    b.waiting.push_back(g_current);
    g_fibers[g_current].waiting = true;
    if (!_setjmp(g_fibers[g_current].resume)) _longjmp(g_scheduler, 1);
}
static void arrive_and_drop(Barrier& b) {  /* a thread that returns */
    --b.live;
    if (b.arrived && b.arrived == b.live) release(b);
}
static void fiber_main() {
    for (;;) {  /* a thread of a block, then parked to be the same thread of the next block */
        g_body(g_body_arg);
        g_fibers[g_current].done = true;
        arrive_and_drop(g_block_barrier);
        arrive_and_drop(g_warp_barriers[g_current / 32]);
        g_fibers[g_current].parked = true;
        if (!_setjmp(g_fibers[g_current].resume)) _longjmp(g_scheduler, 1);
    }
}
/* Run fiber t until it waits at a barrier or ends. A fiber is made (makecontext) and started
   on its own stack by setcontext once; every later switch is _setjmp/_longjmp, which (unlike
   swapcontext) make no signal-mask system call: most of the emulation's time went to those. */
static __attribute__((noinline)) void run_fiber(unsigned t) {
    if (_setjmp(g_scheduler)) return;
    Fiber& f = g_fibers[t];
    if (!f.started) { f.started = true; setcontext(&f.context); }
    _longjmp(f.resume, 1);
}
#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__
#define __shared__ static
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
template <class T> static inline T __ldg(const T* p) { return *p; }
static inline void __syncthreads() { arrive_and_wait(g_block_barrier); }
static inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
static inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
struct alignas(8) float2 { float x, y; };

/* device math (sincos, sincosf, exp, fmax come from glibc); the _rn intrinsics round like the
   plain operations (no FMA contraction: -ffp-contract=off) */
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static std::mutex g_atomic_lock;
template <class T> static inline T atomicAdd(T* p, T v) {
    std::lock_guard<std::mutex> lock(g_atomic_lock);
    const T old = *p; *p = old + v; return old;
}

/* A warp's mma: every lane posts its fragments, the warp meets, each lane sums its C entries
   from all lanes' fragments (the PTX layouts), the warp meets again before the next one. */
static double g_frag_a[32][32][4], g_frag_b[32][32][2];
template <class T, class U>
static void warp_mma(T* c, const U* a, const U* b, int ar, int br, int cr, int k, double (*value)(U)) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32, g = l / 4, t = l % 4;
    for (int r = 0; r < ar; ++r) g_frag_a[w][l][r] = value(a[r]);
    for (int r = 0; r < br; ++r) g_frag_b[w][l][r] = value(b[r]);
    arrive_and_wait(g_warp_barriers[w]);
    for (int r = 0; r < cr; ++r) {
        const int row = g + 8 * (r >> 1), col = 2 * t + (r & 1);
        double s = c[r];
        for (int kk = 0; kk < k; ++kk)  /* A (row, kk): lane (row % 8, kk % 4), register row / 8 + 2 (kk / 4) */
            s += g_frag_a[w][(row % 8) * 4 + kk % 4][row / 8 + 2 * (kk / 4)]
                 * g_frag_b[w][col * 4 + kk % 4][kk / 4];  /* B (kk, col): lane (col, kk % 4), register kk / 4 */
        c[r] = (T)s;
    }
    arrive_and_wait(g_warp_barriers[w]);
}
static double tf32_value(unsigned u) { return __uint_as_float(u & 0xFFFFE000u); }  /* the mma reads 19 bits */
static double f64_value(double x) { return x; }
static inline void mma_tf32(float* c, const unsigned* a, const unsigned* b) { warp_mma(c, a, b, 4, 2, 4, 8, tf32_value); }
static inline void mma_tf32_k4(float* c, const unsigned* a, const unsigned* b) { warp_mma(c, a, b, 2, 1, 4, 4, tf32_value); }
static inline void mma_f64(double* c, const double* a, const double* b) { warp_mma(c, a, b, 1, 1, 2, 4, f64_value); }

/* Warp shuffles through a per-warp exchange buffer between two warp barriers (every lane of
   the warp takes part, as the full masks the kernels use require). */
static unsigned char g_shfl[32][32][8];
template <class T> static T shfl_from(T v, int (*source)(int lane, int arg, int width), int arg, int width) {
    const int w = threadIdx.x / 32, l = threadIdx.x % 32;
    std::memcpy(g_shfl[w][l], &v, sizeof(T));
    arrive_and_wait(g_warp_barriers[w]);
    T out;
    std::memcpy(&out, g_shfl[w][source(l, arg, width)], sizeof(T));
    arrive_and_wait(g_warp_barriers[w]);
    return out;
}
static int lane_of(int l, int src, int width) { return l - l % width + src % width; }
static int lane_below(int l, int delta, int width) { return l % width + delta < width ? l + delta : l; }
template <class T> static T __shfl_sync(unsigned, T v, int src, int width = 32) { return shfl_from(v, lane_of, src, width); }
template <class T> static T __shfl_down_sync(unsigned, T v, unsigned delta, int width = 32) {
    return shfl_from(v, lane_below, (int)delta, width);
}

#define GUARD_BYTES 64
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
/* extern __shared__ (dynamic shared memory): a pool of the launch's size between guard bands */
static std::vector<unsigned char> g_dynamic_raw;
static unsigned char* g_dynamic_shared;
static size_t g_dynamic_bytes;
static void dynamic_pool(size_t bytes) {
    g_dynamic_raw.assign(bytes + 2 * GUARD_BYTES + 64, 0xA5);
    g_dynamic_shared = g_dynamic_raw.data() + GUARD_BYTES + (64 - (size_t)g_dynamic_raw.data() % 64) % 64;
    g_dynamic_bytes = bytes;
}
static void check_dynamic_pool() {
    for (int i = 0; i < GUARD_BYTES; ++i)
        if (g_dynamic_shared[-1 - i] != 0xA5 || g_dynamic_shared[g_dynamic_bytes + i] != 0xA5) g_guard_broken = 1;
}
template <class F> static void launch(uint3_ grid, unsigned block, F kernel) {
    blockDim = {block, 1, 1}; gridDim = grid;
    while (g_stacks.size() < block) g_stacks.emplace_back(new char[STACK_BYTES]);
    g_fibers.resize(block);
    g_body = [](void* k) { (*static_cast<F*>(k))(); };
    g_body_arg = &kernel;
    for (unsigned b = 0; b < grid.x * grid.y * grid.z && !g_deadlock; ++b) {
        blockIdx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
        g_block_barrier = {block, 0, {}};
        g_warp_barriers.assign((block + 31) / 32, Barrier{32, 0, {}});
        if (block % 32) g_warp_barriers.back().live = block % 32;
        for (unsigned t = 0; t < block; ++t) {
            Fiber& f = g_fibers[t];
            f.done = f.waiting = false;
            f.started = f.parked;  /* one that ended its last block goes on from there */
            f.parked = false;
            if (f.started) continue;  /* a new fiber (or one a deadlock left half way) */
            getcontext(&f.context);
            f.context.uc_stack.ss_sp = g_stacks[t].get();
            f.context.uc_stack.ss_size = STACK_BYTES;
            f.context.uc_link = nullptr;  /* fiber_main never returns: it jumps back */
            makecontext(&f.context, fiber_main, 0);
        }
        unsigned running = block;
        for (bool reverse = false; running; reverse = !reverse) {
            bool moved = false;
            for (unsigned i = 0; i < block; ++i) {
                const unsigned t = reverse ? block - 1 - i : i;
                if (g_fibers[t].done || g_fibers[t].waiting) continue;
                g_current = t;
                threadIdx = {t, 0, 0};
                run_fiber(t);
                moved = true;
                running -= g_fibers[t].done;
            }
            if (!moved) { g_deadlock = 1; break; }  /* all wait at barriers the others never reach */
        }
    }
    check_dynamic_pool();
    for (auto& [raw, bytes] : g_guards)
        for (int i = 0; i < GUARD_BYTES; ++i)
            if (raw[i] != 0xA5 || raw[GUARD_BYTES + bytes + i] != 0xA5) {
                g_guard_broken = 1;
                raw[i] = raw[GUARD_BYTES + bytes + i] = 0xA5;  /* re-armed for the next launch */
            }
}
"""

_KERNEL = re.compile(r"__global__\s+void\s+(?:__launch_bounds__\([^)]*\)\s+|[A-Z_]+\s+)?(\w+)\s*\(([^)]*)\)")
_DYNAMIC_SHARED = re.compile(r"extern\s+__shared__\s+([\w ]+?)\s+(\w+)\[\];")
_CONSTANT = re.compile(r"__constant__\s+[\w ]+?\s+(\w+)\[")


def kernels(source: str) -> dict[str, list[str]]:
    """Kernel name -> C types of its parameters, from the source's __global__ definitions."""
    return {name: [p.replace("__restrict__", "").strip().rsplit(None, 1)[0] for p in params.split(",")]
            for name, params in _KERNEL.findall(source)}


def unit(name: str, source: str) -> str:
    """A source in its own namespace (its macros undefined after it), with a C entry point
    `<name>_<kernel>(grid, block, args)` per kernel that launches it over the grid."""
    macros = sorted(set(re.findall(r"#define (\w+)", source)) - set(re.findall(r"#define (\w+)", SHIM)))
    entries = ""
    for kernel, types in kernels(source).items():
        call = ", ".join(f"*({t}*)a[{i}]" for i, t in enumerate(types))
        entries += (f'extern "C" void {name}_{kernel}(unsigned gx, unsigned gy, unsigned gz, unsigned block, '
                    f"size_t shared, void** a) {{ dynamic_pool(shared); "
                    f"launch({{gx, gy, gz}}, block, [=] {{ {kernel}({call}); }}); }}\n")
    for constant in _CONSTANT.findall(source):  # get_global: address and size
        entries += (f'extern "C" void* {name}_{constant}(size_t* bytes) '
                    f"{{ *bytes = sizeof({constant}); return (void*){constant}; }}\n")
    body = _DYNAMIC_SHARED.sub(r"\1* const \2 = (\1*)g_dynamic_shared;", source).replace('extern "C" ', "")
    return f"namespace {name} {{\n{body}\n{entries}}}\n" + "".join(f"#undef {m}\n" for m in macros)


GUARD = 256  # bytes either side of every array argument


def _guard_band(dtype) -> np.ndarray:
    """NaNs for floating-point arrays (a read past the end spoils the result), else 0xA5 bytes."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc":
        return np.full(GUARD // dtype.itemsize, np.nan, dtype).view(np.uint8)
    return np.full(GUARD, 0xA5, np.uint8)


def _guarded(a: np.ndarray):
    """(buffer, interior, band): a's bytes between two guard bands, the interior 64-byte aligned."""
    raw = np.empty(a.nbytes + 2 * GUARD + 64, np.uint8)
    start = -raw.ctypes.data % 64
    buf = raw[start:start + a.nbytes + 2 * GUARD]
    band = _guard_band(a.dtype)
    buf[:GUARD] = buf[-GUARD:] = band
    inner = buf[GUARD:GUARD + a.nbytes]
    inner[:] = a.reshape(-1).view(np.uint8)
    return buf, inner, band


class _Device(SimpleNamespace):
    """cupy.cuda.Device(): the device's memory is the host's (free, total), as CuPy's mem_info."""

    def synchronize(self):  # launches return when done
        pass

    def __enter__(self):  # `with cupy.cuda.Device(i):` - one device
        return self

    def __exit__(self, *exc):
        return False

    @property
    def mem_info(self):
        import psutil

        memory = psutil.virtual_memory()
        return memory.available, memory.total


class EmulatedCuda:
    """A stand-in for the `cupy` module: NumPy's functions, and RawKernel / RawModule whose
    kernels run on the CPU. Sources are compiled together into one library when a kernel of
    one not yet built is first launched (or at `build()`), so register many, then build once."""

    def __init__(self, workdir=None, compute_capability: int = 90, multiprocessors: int = 2,
                 shared_optin: int = 227 * 1024):
        self._workdir = workdir or tempfile.mkdtemp(prefix="cuda_emulation")
        self._units: dict[str, str] = {}  # source -> unit name
        self._built: dict[str, ctypes.CDLL] = {}  # unit name -> its library
        self.launches = []  # (kernel, grid, block) of every launch, in order
        attributes = {"MultiProcessorCount": multiprocessors, "MaxSharedMemoryPerBlockOptin": shared_optin}
        device = _Device(compute_capability=str(compute_capability), attributes=attributes)
        runtime = SimpleNamespace(memGetInfo=lambda: device.mem_info, deviceSynchronize=lambda: None)
        self.cuda = SimpleNamespace(Device=lambda *_: device, runtime=runtime)

    @staticmethod
    def get_default_memory_pool():
        """CuPy's pool as the memory checks see it: the emulation holds nothing in one."""
        return SimpleNamespace(total_bytes=lambda: 0, used_bytes=lambda: 0, free_bytes=lambda: 0)

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def asnumpy(a):
        return np.asarray(a)

    def RawKernel(self, code, name, options=()):  # noqa: N802 - CuPy's name
        return _Kernel(self, self._register(code), name)

    def RawModule(self, code, options=()):  # noqa: N802 - CuPy's name
        unit_name = self._register(code)
        return SimpleNamespace(get_function=lambda name: _Kernel(self, unit_name, name),
                               get_global=lambda name: self.global_(unit_name, name))

    def _register(self, code: str) -> str:
        if code not in self._units:
            self._units[code] = f"u{len(self._units)}_{hashlib.sha1(code.encode()).hexdigest()[:8]}"
        return self._units[code]

    def build(self):
        """Compile every registered source not yet built into one shared library."""
        todo = {code: name for code, name in self._units.items() if name not in self._built}
        if not todo:
            return
        text = SHIM + "".join(unit(name, code) for code, name in todo.items())
        key = hashlib.sha1(text.encode()).hexdigest()[:16]
        cpp, lib = os.path.join(self._workdir, f"{key}.cpp"), os.path.join(self._workdir, f"{key}.so")
        with open(cpp, "w") as fh:
            fh.write(text)
        cmd = [compiler(), "-std=c++20", "-O1", "-U_FORTIFY_SOURCE", "-ffp-contract=off", "-shared", "-fPIC", "-pthread", "-w",
               "-o", lib, cpp]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"the emulated CUDA source does not compile ({cpp}):\n{done.stderr[-4000:]}")
        library = ctypes.CDLL(lib)
        self._built.update({name: library for name in todo.values()})

    def global_(self, unit_name, name):
        """A module's __constant__ array as a ctypes buffer (what cupy.ndarray takes as memptr)."""
        if unit_name not in self._built:
            self.build()
        accessor = getattr(self._built[unit_name], f"{unit_name}_{name}")
        accessor.restype = ctypes.c_void_p
        size = ctypes.c_size_t()
        address = accessor(ctypes.byref(size))
        return (ctypes.c_char * size.value).from_address(address)

    def ndarray(self, shape, dtype, memptr=None):
        return np.ndarray(shape, dtype, buffer=memptr)

    def launch(self, unit_name, kernel, grid, block, args, shared_mem=0):
        if unit_name not in self._built:
            self.build()
        grid, block = (tuple(grid) + (1, 1))[:3], (tuple(block) + (1, 1))[:3]
        if block[1:] != (1, 1):
            raise NotImplementedError(f"{kernel}: the emulation launches 1-D blocks only")
        self.launches.append((kernel, grid, block[0]))
        keep, copies = [], []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise TypeError(f"{kernel}: argument {len(keep)} is not C-contiguous")
                buf, inner, band = _guarded(a)
                copies.append((len(keep), a, buf, inner, band))
                keep.append(ctypes.c_void_p(inner.ctypes.data))
            elif isinstance(a, np.generic):
                keep.append(np.ctypeslib.as_ctypes_type(a.dtype)(a.item()))
            else:
                raise TypeError(f"{kernel}: argument {a!r} is neither an array nor a NumPy scalar")
        ptrs = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(k) for k in keep])
        library = self._built[unit_name]
        getattr(library, f"{unit_name}_{kernel}")(*(ctypes.c_uint(int(g)) for g in grid), ctypes.c_uint(int(block[0])),
                                                  ctypes.c_size_t(int(shared_mem)), ptrs)
        for i, a, buf, inner, band in copies:
            assert (buf[:GUARD] == band).all() and (buf[-GUARD:] == band).all(), \
                f"{kernel}: write outside array argument {i}"
            if a.flags.writeable:
                a.reshape(-1).view(np.uint8)[:] = inner
        assert not library.guard_broken(), f"{kernel}: write outside a block's shared memory"
        assert not library.deadlocked(), \
            f"{kernel}: threads of a block wait at barriers that the others never reach"


class _Kernel:
    def __init__(self, cuda, unit_name, name):
        self._cuda, self._unit, self.name = cuda, unit_name, name
        self.max_dynamic_shared_size_bytes = 0

    def __call__(self, grid, block, args, shared_mem=0):
        self._cuda.launch(self._unit, self.name, grid, block, args, shared_mem)
