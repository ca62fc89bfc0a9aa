"""CuPy RawKernels of the DG right-hand side (Kloeckner, Warburton & Hesthaven style): several
elements per block, element data staged in shared memory, the reference operators read through
the read-only cache or staged in shared memory.

- volume:  rhs = -A . grad q on each element (6 matrix-vector rows of length Np per node:
  grad p and div v = Dr (r_x . v) + Ds (s_x . v) + Dt (t_x . v), using affine factors),
  one template whose variants (`VolumeTuning`: register blocking over elements and nodes,
  operator packing and placement, unrolling, occupancy) are picked per order from
  `VOLUME_TUNING` and measured by `bench/bench_dg.py --tune`;
- surface: upwind flux at the 4 Nfp face nodes into shared memory, then rhs += LIFT flux;
- update:  the low-storage RK stage res = a res + dt rhs, q += b res.

The CPU twin is cpu_kernels.CpuKernels; tests check that both give the same rhs.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

_COMMON = r"""
typedef REAL real;
struct __align__(ALIGN4) real4 { real a, b, c, d; };
"""

_VOLUME = r"""
/* A block stages KBV = TE * EPT elements in shared memory as real4 (p, r_x.v, s_x.v, t_x.v),
   element stride SQS odd so that a warp reading several elements hits distinct banks. Its
   TE * NT threads form TE rows of NT: thread (e0, t) computes nodes t + i NT (i < NPT) of
   elements e0 + j TE (j < EPT) in 4 EPT NPT accumulators, so each operator entry it loads
   feeds EPT elements and each staged field value (a shared-memory broadcast) NPT nodes: per m
   a thread loads 3 NPT + 4 EPT values for 6 EPT NPT FMAs, and the SM delivers 32 values per
   clock against 128 FMAs. The operators are stored per thread: row (d, m) holds RV >= NT
   entries, thread t's NPT nodes side by side (one vector load), zero for padding nodes;
   DPACK: (dr, ds, dt, 0) of a node as one real4 instead. D_SHARED: operators staged in shared
   memory instead of read through the read-only cache. */
#if DPACK
typedef real4 dentry;
#define DSIZE (NP * RV * NPT)
#else
struct __align__(DVA) dentry { real v[NPT]; };
#define DSIZE (3 * NP * RV)
#endif

extern "C" __global__ void BOUNDS
dg_volume(const int K, const real* __restrict__ q, const real* __restrict__ geo,
          const dentry* __restrict__ D, const real* __restrict__ sigma, real* __restrict__ rhs,
          const real inv_rho, const real rhoc2)
{
    __shared__ real4 s_q[KBV * SQS];
    __shared__ real s_g[KBV * 9];  /* the staged elements' affine factors */
#if D_SHARED
    __shared__ dentry s_D[DSIZE];
    for (int i = threadIdx.x; i < DSIZE; i += TE * NT) s_D[i] = D[i];
    const dentry* Dm = s_D;
#else
    const dentry* __restrict__ Dm = D;
#endif
    const size_t KN = (size_t)K * NP;
    const int nbatch = (K + KBV - 1) / KBV;
    real4 raw[NSTAGE];
    real graw[NGEO];
    /* global loads of batch b (KBV elements) into registers; unrolled and branch-free, so that
       all of a thread's loads are in flight together: indices clamped into range (a thread
       past the last node or element stages an identical or unused value) */
    auto load = [&](int b) {
        const int k0 = b * KBV;
        #pragma unroll
        for (int s = 0; s < NSTAGE; ++s) {
            const int i1 = threadIdx.x + s * TE * NT, i = i1 < KBV * NP ? i1 : KBV * NP - 1;
            const int e = i / NP, k = k0 + e < K ? k0 + e : K - 1;
            const size_t id = (size_t)k * NP + (i - e * NP);
            raw[s].a = q[id]; raw[s].b = q[KN + id]; raw[s].c = q[2 * KN + id]; raw[s].d = q[3 * KN + id];
        }
        #pragma unroll
        for (int j = 0; j < NGEO; ++j) {
            const size_t g = (size_t)k0 * 9 + threadIdx.x + j * TE * NT;
            graw[j] = geo[g < (size_t)K * 9 ? g : (size_t)K * 9 - 1];
        }
    };
    /* registers -> shared memory as (p, r_x.v, s_x.v, t_x.v); callers sync before and after */
    auto stage = [&]() {
        #pragma unroll
        for (int j = 0; j < NGEO; ++j)
            if (threadIdx.x + j * TE * NT < KBV * 9) s_g[threadIdx.x + j * TE * NT] = graw[j];
        __syncthreads();
        #pragma unroll
        for (int s = 0; s < NSTAGE; ++s) {
            const int i1 = threadIdx.x + s * TE * NT, i = i1 < KBV * NP ? i1 : KBV * NP - 1;
            const int e = i / NP;
            const real* g = s_g + 9 * e;
            const real u = raw[s].b, v = raw[s].c, w = raw[s].d;
            real4 f;
            f.a = raw[s].a;
            f.b = g[0] * u + g[1] * v + g[2] * w;
            f.c = g[3] * u + g[4] * v + g[5] * w;
            f.d = g[6] * u + g[7] * v + g[8] * w;
            s_q[i + e * (SQS - NP)] = f;
        }
    };
    const int e0 = threadIdx.x / NT, t = threadIdx.x - e0 * NT;
    const real4* sq = s_q + e0 * SQS;
    int b = blockIdx.x;
    load(b);
    stage();
    __syncthreads();
    /* PREFETCH (a persistent grid, gridDim < nbatch): the next batch's loads are issued before
       this batch's arithmetic, which hides their latency */
#if PREFETCH
    for (;;) {
        const int next = b + gridDim.x;
        if (next < nbatch) load(next);
#endif
        real pr[EPT][NPT], ps[EPT][NPT], pt[EPT][NPT], dv[EPT][NPT];
        #pragma unroll
        for (int j = 0; j < EPT; ++j)
            #pragma unroll
            for (int i = 0; i < NPT; ++i) { pr[j][i] = 0; ps[j][i] = 0; pt[j][i] = 0; dv[j][i] = 0; }
        /* the operator rows as if they moved with the batch: otherwise the compiler hoists all
           3 NP NPT entries out of the batch loop into registers, and spills */
        const dentry* __restrict__ Db = Dm + (K < 0 ? b : 0);
        #pragma unroll __UNROLL__
        for (int m = 0; m < NP; ++m) {
            real dr[NPT], ds[NPT], dt[NPT];
#if DPACK
            #pragma unroll
            for (int i = 0; i < NPT; ++i) {
                const real4 o = Db[(m * RV + t) * NPT + i];
                dr[i] = o.a; ds[i] = o.b; dt[i] = o.c;
            }
#else
            const dentry er = Db[m * RV + t], es = Db[(NP + m) * RV + t], et = Db[(2 * NP + m) * RV + t];
            #pragma unroll
            for (int i = 0; i < NPT; ++i) { dr[i] = er.v[i]; ds[i] = es.v[i]; dt[i] = et.v[i]; }
#endif
            #pragma unroll
            for (int j = 0; j < EPT; ++j) {
                const real4 f = sq[j * TE * SQS + m];
                #pragma unroll
                for (int i = 0; i < NPT; ++i) {
                    pr[j][i] += dr[i] * f.a; ps[j][i] += ds[i] * f.a; pt[j][i] += dt[i] * f.a;
                    /* three accumulating FMAs: adding the sum dr f.b + ds f.c + dt f.d costs an FMUL and an FADD more */
                    dv[j][i] += dr[i] * f.b; dv[j][i] += ds[i] * f.c; dv[j][i] += dt[i] * f.d;
                }
            }
        }
        #pragma unroll
        for (int j = 0; j < EPT; ++j) {
            const int k = b * KBV + e0 + j * TE;
            if (k >= K) break;
            const real* g = s_g + 9 * (e0 + j * TE);
            #pragma unroll
            for (int i = 0; i < NPT; ++i) {
                const int n = t + i * NT;
                if (n >= NP) break;
                const size_t id = (size_t)k * NP + n;
                real rp = -rhoc2 * dv[j][i];
                real ru = -inv_rho * (g[0] * pr[j][i] + g[3] * ps[j][i] + g[6] * pt[j][i]);
                real rv = -inv_rho * (g[1] * pr[j][i] + g[4] * ps[j][i] + g[7] * pt[j][i]);
                real rw = -inv_rho * (g[2] * pr[j][i] + g[5] * ps[j][i] + g[8] * pt[j][i]);
#if SPONGE
                const real sg = sigma[id];
                rp -= sg * q[id]; ru -= sg * q[KN + id]; rv -= sg * q[2 * KN + id]; rw -= sg * q[3 * KN + id];
#endif
                rhs[id] = rp; rhs[KN + id] = ru; rhs[2 * KN + id] = rv; rhs[3 * KN + id] = rw;
            }
        }
#if PREFETCH
        if (next >= nbatch) break;
        b = next;
        __syncthreads();  /* every thread is done with this batch's shared data */
        stage();
        __syncthreads();
    }
#endif
}
"""

_SURFACE = r"""
#define NFN (4 * NFP)
__constant__ int c_fmask[NFN] = { FMASK };

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

STATIC_SHARED_LIMIT = 48 * 1024  # bytes of static shared memory a block may declare
NVRTC_OPTIONS = ("-std=c++17",)


class VolumeTuning(NamedTuple):
    """One variant of the volume kernel (see its comment in _VOLUME)."""

    kb_volume: int  # TE: rows of threads per block, one element per row and EPT step
    elements_per_thread: int = 1  # EPT: register blocking over elements (operator reuse)
    nodes_per_thread: int = 1  # NPT: register blocking over nodes (staged-field reuse)
    d_packed: bool = False  # (dr, ds, dt) of an entry as one 16-byte real4
    d_shared: bool = False  # operators staged in shared memory (else the read-only cache)
    unroll: int = 0  # m-loop unroll; 0: full when the body is small, else 4
    min_blocks: int = 0  # __launch_bounds__ minimum blocks per SM (caps registers); 0: none
    persistent: int = 0  # blocks per SM of a persistent grid that prefetches its next batch; 0: none
    warp_rows: bool = False  # threads per element row padded to a power of two (or a multiple of
    # 32), so that no row straddles two warps: a staged-field read is one address per warp row

    def __repr__(self) -> str:  # only what differs from the defaults: the tuning table's style
        changed = [f"{k}={v!r}" for k, v in zip(self._fields, self)
                   if k == "kb_volume" or v != self._field_defaults[k]]
        return f"VolumeTuning({', '.join(changed)})"


# Volume-kernel variant per Np (fp32; fp64 uses it too unless VOLUME_TUNING_FP64 has Np):
# the fastest settings of `bench/bench_dg.py --tune --precisions single` on an NVIDIA H200
# (1.2-1.4M nodes, 3x L2 of data cycled), pasted from its output (N = 1, 2: an earlier tune).
VOLUME_TUNING = {
    4: VolumeTuning(kb_volume=64, min_blocks=4),  # 60% of memory bound
    10: VolumeTuning(kb_volume=3, elements_per_thread=2),  # 50% of memory bound
    20: VolumeTuning(kb_volume=6, elements_per_thread=3, min_blocks=7),  # 42% of memory bound
    35: VolumeTuning(kb_volume=14, elements_per_thread=4, nodes_per_thread=2, d_shared=True, unroll=35,
                     persistent=1),  # 30% of compute bound
    56: VolumeTuning(kb_volume=4, elements_per_thread=3, nodes_per_thread=4, d_shared=True, unroll=8,
                     persistent=4),  # 38% of compute bound
    84: VolumeTuning(kb_volume=2, elements_per_thread=4, nodes_per_thread=2, unroll=84),  # 44% of compute bound
}
# fp64 overrides, same format (`--tune --precisions double`, H200)
VOLUME_TUNING_FP64: dict[int, VolumeTuning] = {
    20: VolumeTuning(kb_volume=6, elements_per_thread=2, min_blocks=7),  # 42% of memory bound
    35: VolumeTuning(kb_volume=5, elements_per_thread=3, nodes_per_thread=3, d_shared=True,
                     persistent=6),  # 38% of compute bound
    56: VolumeTuning(kb_volume=2, elements_per_thread=4, nodes_per_thread=4, unroll=8,
                     warp_rows=True),  # 43% of compute bound
    84: VolumeTuning(kb_volume=3, elements_per_thread=4, nodes_per_thread=2, unroll=84),  # 51% of compute bound
}


def default_elements_per_block(n_nodes: int, target_threads: int = 256) -> int:
    return max(1, target_threads // n_nodes)


def default_volume_tuning(n_nodes: int, dtype) -> VolumeTuning:
    """The table's variant for Np, with fewer rows per block where it does not fit (fp64
    staging needs twice the shared memory of fp32)."""
    itemsize = np.dtype(dtype).itemsize
    table = VOLUME_TUNING_FP64 if itemsize == 8 else {}
    tuning = table.get(n_nodes) or VOLUME_TUNING.get(n_nodes) or VolumeTuning(default_elements_per_block(n_nodes))
    while tuning.kb_volume > 1:
        try:
            volume_layout(n_nodes, tuning, itemsize)
            break
        except ValueError:
            tuning = tuning._replace(kb_volume=tuning.kb_volume // 2)
    return tuning


class VolumeLayout(NamedTuple):
    nt: int  # threads per element row
    rv: int  # thread slots per operator row (>= nt)
    dva: int  # alignment of a thread's NPT operator entries (bytes): their vector load width
    sqs: int  # element stride of the staged fields in shared memory
    threads: int  # per block
    elements: int  # per block
    unroll: int
    shared_bytes: int


def warp_row_width(nt: int) -> int:
    """Threads per element row with warp_rows: a power of two up to 32, else a multiple of 32."""
    return 1 << (nt - 1).bit_length() if nt <= 32 else -(-nt // 32) * 32


def volume_layout(n_nodes: int, tuning: VolumeTuning, itemsize: int) -> VolumeLayout:
    """Thread and memory layout of a volume-kernel variant; ValueError if it cannot launch."""
    te, ept, npt = tuning.kb_volume, tuning.elements_per_thread, tuning.nodes_per_thread
    if min(te, ept, npt) < 1 or tuning.unroll < 0 or tuning.min_blocks < 0:
        raise ValueError(f"{tuning}: counts must be positive")
    nt = -(-n_nodes // npt)
    if tuning.warp_rows:  # the node map t + i NT still covers every node once (NT NPT >= Np)
        nt = warp_row_width(nt)
    entry = (4 if tuning.d_packed else 1) * npt * itemsize  # bytes per thread and row
    dva = min(16, entry & -entry)
    # rows in global memory start on 128-byte lines; in shared memory they need no padding
    line = 128 // np.gcd(128, entry)
    rv = nt if tuning.d_shared else -(-nt // line) * line
    sqs = n_nodes | 1
    threads = te * nt
    unroll = tuning.unroll or (n_nodes if n_nodes * 6 * ept * npt <= 1536 else 4)
    shared = te * ept * (sqs * 4 + 9) * itemsize
    if tuning.persistent < 0:
        raise ValueError(f"{tuning}: persistent must be >= 0")
    if tuning.d_shared:
        shared += (1 if tuning.d_packed else 3) * n_nodes * rv * entry
    if threads > 1024 or shared > STATIC_SHARED_LIMIT:
        raise ValueError(f"{tuning} for Np={n_nodes}: {threads} threads, {shared} bytes of shared "
                         f"memory per block (limits 1024, {STATIC_SHARED_LIMIT})")
    return VolumeLayout(nt, rv, dva, sqs, threads, te * ept, unroll, shared)


def volume_node_map(n_nodes: int, layout: VolumeLayout, npt: int) -> np.ndarray:
    """(rv, npt) node computed by thread slot t, entry i: t + i NT, or -1 (padding)."""
    n = np.arange(layout.rv)[:, None] + layout.nt * np.arange(npt)[None, :]
    return np.where((n < n_nodes) & (np.arange(layout.rv)[:, None] < layout.nt), n, -1)


def volume_operators(Dr, Ds, Dt, layout: VolumeLayout, npt: int, packed: bool, xp=np):
    """The operators as the volume kernel reads them, zero at padding nodes: D[d, m, t, i] =
    D_d[n, m] with n = t + i NT, or packed D[m, t, i, :3] = (Dr, Ds, Dt)[n, m]."""
    npn = Dr.shape[0]
    nodes = volume_node_map(npn, layout, npt)
    d = xp.stack([Dr.T, Ds.T, Dt.T])  # [d, m, n]
    d = xp.concatenate([d, xp.zeros_like(d[:, :, :1])], axis=2)  # index -1: zero
    out = d[:, :, xp.asarray(nodes)]  # [d, m, t, i]
    if packed:
        out = xp.concatenate([out, xp.zeros_like(out[:1])]).transpose(1, 2, 3, 0)
    return xp.ascontiguousarray(out)


def volume_grid(layout: VolumeLayout, tuning: VolumeTuning, k: int, sms: int) -> int:
    """Blocks of a volume launch on k elements: one per batch of layout.elements, or a
    persistent grid of tuning.persistent blocks per SM, each looping over batches."""
    batches = -(-k // layout.elements)
    return min(batches, tuning.persistent * sms) if tuning.persistent else batches


TUNING_STAGES = ("tile", "prefetch", "rows", "refine", "block", "operators", "codegen")


def tuning_candidates(stage: str, n_nodes: int, base: VolumeTuning, itemsize: int) -> list[VolumeTuning]:
    """Variants that `bench_dg.py --tune` tries in one stage of its greedy search around `base`
    (the best so far): register tiles (EPT, NPT) at about the base's threads per block, their
    neighbours, rows per block, operator packing and placement, unrolling and occupancy."""
    nt_of = lambda npt: -(-n_nodes // npt)  # noqa: E731
    threads = base.kb_volume * nt_of(base.nodes_per_thread)
    rows = lambda npt, t=threads: max(1, round(t / nt_of(npt)))  # noqa: E731
    cap = 24 if itemsize == 4 else 16  # EPT NPT: the 4 EPT NPT accumulators stay in registers
    npts = [n for n in range(1, 7) if nt_of(n) * n <= 1.1 * n_nodes]  # <= 10% padding nodes
    ept, npt = base.elements_per_thread, base.nodes_per_thread

    def fit(t):  # the most rows up to t's that fit the shared memory, or None
        for kb in range(t.kb_volume, 0, -1):
            try:
                volume_layout(n_nodes, t._replace(kb_volume=kb), itemsize)
                return t._replace(kb_volume=kb)
            except ValueError:
                pass
        return None

    def tiles(pairs):  # as many rows as fit the shared memory, up to the base's threads
        fit = lambda e: STATIC_SHARED_LIMIT // (e * ((n_nodes | 1) * 4 + 9) * itemsize)  # noqa: E731
        return [base._replace(kb_volume=max(1, min(rows(n), fit(e))), elements_per_thread=e,
                              nodes_per_thread=n, unroll=0)
                for e, n in pairs if e >= 1 and n in npts and e * n <= cap]

    if stage == "tile":
        out = tiles([(1, 1)] + [(e, n) for e in (2, 4) for n in npts])
    elif stage == "rows":  # rows aligned to warps, where that pads at most 15% of the nodes
        padded = lambda n: warp_row_width(nt_of(n)) * n <= 1.15 * n_nodes  # noqa: E731
        cands = [base] + [base._replace(kb_volume=rows(n), elements_per_thread=e, nodes_per_thread=n, unroll=0)
                          for e in (1, 2, 3, 4) for n in range(1, 8) if e * n <= cap]
        out = [fit(t._replace(warp_rows=True, d_packed=pk)) for t in cands if padded(t.nodes_per_thread)
               for pk in (False, True)]
    elif stage == "prefetch":  # large tiles hide their load latency with a persistent grid
        big = [base] + tiles([(e, n) for e, n in ((3, 3), (4, 2), (4, 3), (3, 4), (4, 4), (6, 2))])
        out = [fit(t._replace(persistent=p, d_shared=ds)) for t in big for p in (1, 2, 4) for ds in (False, True)]
    elif stage == "refine":
        i = npts.index(npt) if npt in npts else 0
        near = npts[max(0, i - 1):i + 2]
        out = tiles([(ept - 1, npt), (ept + 1, npt)] + [(ept, n) for n in near])
    elif stage == "block":
        nt = nt_of(npt)
        out = [base._replace(kb_volume=r) for r in
               {rows(npt, t) for t in (32, 64, 128, 256)} | {32 // int(np.gcd(nt, 32))}]
    elif stage == "operators":
        out = [base._replace(d_packed=p, d_shared=s) for p in (False, True) for s in (False, True)]
    elif stage == "codegen":
        body = 6 * ept * npt  # FMAs per m; a full unroll of a large body compiles slowly
        unrolls = [u for u in [2, 4, 8] + ([n_nodes] if n_nodes * body <= 4096 else [])
                   if u != volume_layout(n_nodes, base, itemsize).unroll]
        blocks = {min(32, -(-t // (base.kb_volume * nt_of(npt)))) for t in (1024, 1536)}  # >= 50, 75% occupancy
        out = [base._replace(unroll=u) for u in unrolls] + [base._replace(min_blocks=b) for b in blocks]
        if base.persistent:  # blocks per SM of the persistent grid
            out += [base._replace(persistent=p) for p in (1, 2, 3, 4, 6, 8)]
    else:
        raise ValueError(f"unknown tuning stage {stage!r}")
    keep = []
    for t in out:
        if t is None:
            continue
        try:
            volume_layout(n_nodes, t, itemsize)
        except ValueError:
            continue
        if t != base and t not in keep:
            keep.append(t)
    return keep


def _defines(defs: dict) -> str:
    return "".join(f"#define {k} {v}\n" for k, v in defs.items())


def _real(dtype) -> dict:
    itemsize = np.dtype(dtype).itemsize
    return {"REAL": "double" if itemsize == 8 else "float", "ALIGN4": str(4 * itemsize)}


def volume_source(n_nodes: int, dtype, tuning: VolumeTuning, sponge: bool) -> str:
    lay = volume_layout(n_nodes, tuning, np.dtype(dtype).itemsize)
    bounds = f"__launch_bounds__({lay.threads}" + (f", {tuning.min_blocks})" if tuning.min_blocks else ")")
    defs = {**_real(dtype), "NP": n_nodes, "NT": lay.nt, "NPT": tuning.nodes_per_thread,
            "NSTAGE": -(-lay.elements * n_nodes // lay.threads), "NGEO": -(-lay.elements * 9 // lay.threads),
            "PREFETCH": int(tuning.persistent > 0),
            "TE": tuning.kb_volume, "EPT": tuning.elements_per_thread, "KBV": lay.elements,
            "SQS": lay.sqs, "RV": lay.rv, "DVA": lay.dva, "DPACK": int(tuning.d_packed),
            "D_SHARED": int(tuning.d_shared), "SPONGE": int(sponge), "BOUNDS": bounds}
    return _defines(defs) + _COMMON + _VOLUME.replace("__UNROLL__", str(lay.unroll))


def surface_source(n_nodes: int, face_nodes: int, face_mask, dtype, kb_surface: int) -> str:
    defs = {**_real(dtype), "NP": n_nodes, "NFP": face_nodes, "KBS": kb_surface}
    fmask = ", ".join(str(int(i)) for i in np.ravel(face_mask))
    return _defines(defs) + _COMMON + _SURFACE.replace("FMASK", fmask)


class GpuKernels:
    """The three kernels compiled for one space, precision and tuning. Volume-kernel options
    left None come from the tuning table (`default_volume_tuning`)."""

    def __init__(self, ops, xp, kb_surface: int | None = None, **volume_tuning):
        """volume_tuning: VolumeTuning fields; those left out or None come from the table."""
        self.ops, self.xp = ops, xp
        npn, nfn = ops.Dr.shape[0], ops.lift.shape[1]
        self.dtype = np.dtype(ops.geo.dtype)
        unknown = set(volume_tuning) - set(VolumeTuning._fields)
        if unknown:
            raise TypeError(f"GpuKernels: unknown volume-kernel options {sorted(unknown)}")
        self.tuning = default_volume_tuning(npn, self.dtype)._replace(
            **{k: v for k, v in volume_tuning.items() if v is not None})
        self.layout = volume_layout(npn, self.tuning, self.dtype.itemsize)
        self.kbs = kb_surface or default_elements_per_block(max(npn, nfn))
        vol = xp.RawModule(code=volume_source(npn, self.dtype, self.tuning, ops.sigma is not None),
                           options=NVRTC_OPTIONS)
        surf = xp.RawModule(code=surface_source(npn, nfn // 4, ops.face_mask, self.dtype, self.kbs),
                            options=NVRTC_OPTIONS)
        self._vol = vol.get_function("dg_volume")
        self._surf = surf.get_function("dg_surface")
        self._upd = surf.get_function("lserk_update")
        self.D = volume_operators(ops.Dr, ops.Ds, ops.Dt, self.layout, self.tuning.nodes_per_thread,
                                  self.tuning.d_packed, xp)
        self.L = xp.ascontiguousarray(ops.lift.T)  # L[m, n]
        self.surf_threads = min(1024, 32 * -(-self.kbs * max(npn, nfn) // 32))
        self.scalar = self.dtype.type
        self.sms = xp.cuda.Device().attributes["MultiProcessorCount"]
        self._empty = xp.zeros(1, dtype=self.dtype)

    def volume(self, q, out):
        o, k = self.ops, self.ops.geo.shape[0]
        sigma = o.sigma if o.sigma is not None else self._empty
        self._vol((volume_grid(self.layout, self.tuning, k, self.sms),), (self.layout.threads,),
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
