"""CuPy RawKernels of the DG right-hand side (Kloeckner, Warburton & Hesthaven style):
one thread per output node (of EPT elements), several elements per block, element data staged in shared memory,
the reference operators read through the read-only cache or staged in shared memory.

- volume:  rhs = -A . grad q on each element (6 matrix-vector rows of length Np per node:
  grad p and div v = Dr (r_x . v) + Ds (s_x . v) + Dt (t_x . v), using affine factors);
- surface: upwind flux at the 4 Nfp face nodes into shared memory, then rhs += LIFT flux;
- update:  the low-storage RK stage res = a res + dt rhs, q += b res.

The CPU twin is cpu_kernels.CpuKernels; tests check that both give the same rhs.
"""
from __future__ import annotations

import numpy as np

_SOURCE = r"""
typedef REAL real;
struct __align__(ALIGN4) real4 { real a, b, c, d; };
#define NFN (4 * NFP)
__constant__ int c_fmask[NFN] = { FMASK };

/* Volume kernel: TE * NP threads, KBV = TE * EPT elements per block; thread (e0, n) computes
   node n of the EPT elements e0, e0 + TE, ...: each operator entry fetched is reused EPT times
   (register blocking over elements), each staged field value is a 16-byte broadcast. */
extern "C" __global__ void __launch_bounds__(TE * NP)
dg_volume(const int K, const real* __restrict__ q, const real* __restrict__ geo,
          const real* __restrict__ D, const real* __restrict__ sigma, real* __restrict__ rhs,
          const real inv_rho, const real rhoc2)
{
    __shared__ real4 s_q[KBV * NP];
#if D_SHARED
    __shared__ real s_D[3 * NP * NP];
    for (int i = threadIdx.x; i < 3 * NP * NP; i += blockDim.x) s_D[i] = D[i];
    const real* Dm = s_D;
#else
    const real* __restrict__ Dm = D;
#endif
    const int k0 = blockIdx.x * KBV;
    const size_t KN = (size_t)K * NP;
    for (int i = threadIdx.x; i < KBV * NP; i += TE * NP) {
        const int k = k0 + i / NP;
        if (k >= K) break;
        const size_t id = (size_t)k0 * NP + i;
        const real* g = geo + 9 * (size_t)k;
        const real u = q[KN + id], v = q[2 * KN + id], w = q[3 * KN + id];
        real4 f;
        f.a = q[id];
        f.b = __ldg(g + 0) * u + __ldg(g + 1) * v + __ldg(g + 2) * w;
        f.c = __ldg(g + 3) * u + __ldg(g + 4) * v + __ldg(g + 5) * w;
        f.d = __ldg(g + 6) * u + __ldg(g + 7) * v + __ldg(g + 8) * w;
        s_q[i] = f;
    }
    __syncthreads();
    const int e0 = threadIdx.x / NP, n = threadIdx.x - e0 * NP;
    real pr[EPT], ps[EPT], pt[EPT], dv[EPT];
    #pragma unroll
    for (int j = 0; j < EPT; ++j) { pr[j] = 0; ps[j] = 0; pt[j] = 0; dv[j] = 0; }
    #pragma unroll __UNROLL__
    for (int m = 0; m < NP; ++m) {
#if D_SHARED
        const real dr = Dm[m * NP + n], ds = Dm[(NP + m) * NP + n], dt = Dm[(2 * NP + m) * NP + n];
#else
        const real dr = __ldg(Dm + m * NP + n), ds = __ldg(Dm + (NP + m) * NP + n),
                   dt = __ldg(Dm + (2 * NP + m) * NP + n);
#endif
        #pragma unroll
        for (int j = 0; j < EPT; ++j) {
            const real4 f = s_q[(e0 + j * TE) * NP + m];
            pr[j] += dr * f.a; ps[j] += ds * f.a; pt[j] += dt * f.a;
            dv[j] += dr * f.b + ds * f.c + dt * f.d;
        }
    }
    #pragma unroll
    for (int j = 0; j < EPT; ++j) {
        const int k = k0 + e0 + j * TE;
        if (k >= K) break;
        const size_t id = (size_t)k * NP + n;
        const real* g = geo + 9 * (size_t)k;
        real rp = -rhoc2 * dv[j];
        real ru = -inv_rho * (__ldg(g + 0) * pr[j] + __ldg(g + 3) * ps[j] + __ldg(g + 6) * pt[j]);
        real rv = -inv_rho * (__ldg(g + 1) * pr[j] + __ldg(g + 4) * ps[j] + __ldg(g + 7) * pt[j]);
        real rw = -inv_rho * (__ldg(g + 2) * pr[j] + __ldg(g + 5) * ps[j] + __ldg(g + 8) * pt[j]);
#if SPONGE
        const real sg = sigma[id];
        rp -= sg * q[id]; ru -= sg * q[KN + id]; rv -= sg * q[2 * KN + id]; rw -= sg * q[3 * KN + id];
#endif
        rhs[id] = rp; rhs[KN + id] = ru; rhs[2 * KN + id] = rv; rhs[3 * KN + id] = rw;
    }
}

extern "C" __global__ void
dg_surface(const int K, const real* __restrict__ q, const long long* __restrict__ vmapP,
           const real* __restrict__ face_geo, const real* __restrict__ bvn,
           const real* __restrict__ LIFT, real* __restrict__ rhs,
           const real rho, const real c, const real rhoc2, const real alpha)
{
    __shared__ real4 s_f[KBS * NFN];
    const int k0 = blockIdx.x * KBS;
    const size_t KN = (size_t)K * NP;
    for (int i = threadIdx.x; i < KBS * NFN; i += blockDim.x) {
        const int e = i / NFN, fn = i - e * NFN, k = k0 + e;
        if (k >= K) break;
        const int f = fn / NFP;
        const real* fg = face_geo + 16 * (size_t)k + 4 * f;
        const real nx = fg[0], ny = fg[1], nz = fg[2], fs = fg[3];
        const size_t idM = (size_t)k * NP + c_fmask[fn];
        const real pM = q[idM];
        const real vnM = nx * q[KN + idM] + ny * q[2 * KN + idM] + nz * q[3 * KN + idM];
        const long long idP = vmapP[(size_t)k * NFN + fn];
        real dp, dvn;
        if (idP >= 0) {
            dp = pM - q[idP];
            dvn = vnM - (nx * q[KN + idP] + ny * q[2 * KN + idP] + nz * q[3 * KN + idP]);
        } else {
            const long long dec = -1 - idP;
            const int code = (int)(dec & 3);
            if (code == 2) {            /* absorbing: zero exterior state */
                dp = pM; dvn = vnM;
            } else {                    /* rigid wall, scatterer: mirrored normal velocity */
                dp = 0; dvn = 2 * vnM;
                if (code == 1) dvn += 2 * bvn[dec >> 2];
            }
        }
        const real fp = (real)0.5 * (rhoc2 * dvn - alpha * c * dp) * fs;
        const real fv = (real)0.5 * (dp / rho - alpha * c * dvn) * fs;
        real4 r; r.a = fp; r.b = nx * fv; r.c = ny * fv; r.d = nz * fv;
        s_f[i] = r;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < KBS * NP; i += blockDim.x) {
        const int e = i / NP, n = i - e * NP, k = k0 + e;
        if (k >= K) break;
        const real4* sf = s_f + e * NFN;
        real a0 = 0, a1 = 0, a2 = 0, a3 = 0;
        #pragma unroll 4
        for (int m = 0; m < NFN; ++m) {
            const real L = __ldg(LIFT + m * NP + n);
            const real4 f = sf[m];
            a0 += L * f.a; a1 += L * f.b; a2 += L * f.c; a3 += L * f.d;
        }
        const size_t id = (size_t)k * NP + n;
        rhs[id] += a0; rhs[KN + id] += a1; rhs[2 * KN + id] += a2; rhs[3 * KN + id] += a3;
    }
}

extern "C" __global__ void
lserk_update(const size_t n, real* __restrict__ q, real* __restrict__ res,
             const real* __restrict__ rhs, const real a, const real b, const real dt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const real r = a * res[i] + dt * rhs[i];
        res[i] = r;
        q[i] += b * r;
    }
}
"""


# (thread rows of elements per block, elements per thread) of the volume kernel, keyed by Np:
# the fastest fp32 settings of `bench/bench_dg.py --tune` on an H100 (1.2M nodes per order)
VOLUME_TUNING = {4: (64, 1), 10: (25, 1), 20: (3, 2), 35: (7, 4), 56: (1, 2), 84: (1, 4)}


def default_elements_per_block(n_nodes: int, target_threads: int = 256) -> int:
    return max(1, target_threads // n_nodes)


def kernel_source(order_nodes: int, face_nodes: int, face_mask, dtype, kb_volume: int,
                  kb_surface: int, d_shared: bool, sponge: bool, ept: int = 1) -> str:
    real = "double" if np.dtype(dtype) == np.float64 else "float"
    defs = {"REAL": real, "ALIGN4": str(4 * np.dtype(dtype).itemsize), "NP": str(order_nodes),
            "NFP": str(face_nodes), "TE": str(kb_volume), "EPT": str(ept),
            "KBV": f"({kb_volume} * {ept})", "KBS": str(kb_surface),

            "D_SHARED": str(int(d_shared)), "SPONGE": str(int(sponge))}
    head = "".join(f"#define {k} {v}\n" for k, v in defs.items())
    unroll = str(order_nodes if order_nodes <= 56 else 4)
    return head + _SOURCE.replace("FMASK", ", ".join(str(int(i)) for i in np.ravel(face_mask))) \
        .replace("__UNROLL__", unroll)


class GpuKernels:
    """The three kernels compiled for one space, precision and tuning (KB, D in shared)."""

    def __init__(self, ops, xp, kb_volume: int | None = None, kb_surface: int | None = None,
                 d_shared: bool = False, elements_per_thread: int | None = None):
        self.ops, self.xp = ops, xp
        npn, nfn = ops.Dr.shape[0], ops.lift.shape[1]
        self.dtype = np.dtype(ops.geo.dtype)
        kbv, ept = VOLUME_TUNING.get(npn, (default_elements_per_block(npn), 1))
        self.ept = elements_per_thread or ept
        # kbv: element rows of threads per block (the block holds kbv * ept elements)
        self.kbv = kb_volume or kbv
        self.kbs = kb_surface or default_elements_per_block(max(npn, nfn))
        # operators through the read-only (L1/texture) cache by default: measured as fast as
        # staging them in shared memory for N <= 3 and faster above; shared needs <= 48 KB
        self.d_shared = bool(d_shared)
        src = kernel_source(npn, nfn // 4, ops.face_mask, self.dtype, self.kbv, self.kbs,
                            self.d_shared, ops.sigma is not None, self.ept)
        module = xp.RawModule(code=src, options=("-std=c++17",))
        self._vol = module.get_function("dg_volume")
        self._surf = module.get_function("dg_surface")
        self._upd = module.get_function("lserk_update")
        self.D = xp.ascontiguousarray(xp.stack([ops.Dr.T, ops.Ds.T, ops.Dt.T]))  # D[d, m, n]
        self.L = xp.ascontiguousarray(ops.lift.T)  # L[m, n]
        self.surf_threads = min(1024, 32 * -(-self.kbs * max(npn, nfn) // 32))
        self.scalar = self.dtype.type
        self._empty = xp.zeros(1, dtype=self.dtype)

    def volume(self, q, out):
        o, k = self.ops, self.ops.geo.shape[0]
        npn = o.Dr.shape[0]
        sigma = o.sigma if o.sigma is not None else self._empty
        self._vol((-(-k // (self.kbv * self.ept)),), (self.kbv * npn,),
                  (np.int32(k), q, o.geo, self.D, sigma, out, self.scalar(1 / o.rho), self.scalar(o.rhoc2)))

    def surface(self, q, out, boundary_vn):
        o, k = self.ops, self.ops.geo.shape[0]
        bvn = boundary_vn if boundary_vn is not None and boundary_vn.size else self._empty
        s = self.scalar
        self._surf((-(-k // self.kbs),), (self.surf_threads,),
                   (np.int32(k), q, o.vmap_p, o.face_geo, bvn, self.L, out,
                    s(o.rho), s(o.c), s(o.rhoc2), s(o.alpha)))

    def update(self, q, res, rhs, a, b, dt):
        s = self.scalar
        n = q.size
        self._upd((min(65535, -(-n // 256)),), (256,), (np.uint64(n), q, res, rhs, s(a), s(b), s(dt)))
