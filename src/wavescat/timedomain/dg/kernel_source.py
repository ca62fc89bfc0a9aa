"""CUDA source of the DG right-hand side (Kloeckner, Warburton & Hesthaven style): several
elements per block, element data staged in shared memory, the reference operators read through
the read-only cache or staged in shared memory.

- volume:  rhs = -A . grad q on each element (6 matrix-vector rows of length Np per node:
  grad p and div v = Dr (r_x . v) + Ds (s_x . v) + Dt (t_x . v), using affine factors),
  one frame (staging, prefetching persistent grids) around two layouts: rows of threads
  with register tiles over elements and nodes (FMA units), or warp matrix products on the
  tensor cores (DMMA in fp64, 3xTF32 in fp32; fields as the mma's A, or transposed as its B);
  the variant is a layout.VolumeTuning;
- surface: upwind flux at the 4 Nfp face nodes into shared memory (boundary conditions as
  exterior states, media of different impedance), then rhs += LIFT flux;
- update:  the low-storage RK stage res = a res + dt rhs, q += b res.

gpu_kernels.GpuKernels compiles and launches them; its CPU twin is cpu_kernels.CpuKernels.
"""
from __future__ import annotations

import numpy as np

from .layout import MMA_GEO_STRIDE, STATIC_SHARED_LIMIT, VolumeTuning, mma_tiles, volume_layout

NVRTC_OPTIONS = ("-std=c++17",)

_COMMON = r"""
typedef REAL real;
struct __align__(ALIGN4) real4 { real a, b, c, d; };
#ifndef SHARED_POOL  /* static up to 48 KB (the row layout measured faster so), dynamic above */
#if STATIC_POOL
#define SHARED_POOL(name, bytes) __shared__ __align__(32) unsigned char name[bytes]
#else
#define SHARED_POOL(name, bytes) extern __shared__ __align__(32) unsigned char name[]
#endif
#endif
"""

_VOLUME = r"""
#if INDEX32  /* every index into the state (4 K Np) and the affine factors (9 K) below 2^32 */
typedef unsigned index_t;
#else
typedef size_t index_t;
#endif
/* The frame both volume layouts share. A block stages KBV elements of (p, r_x.v, s_x.v, t_x.v)
   and their affine factors in shared memory (STAGE_FIELD: the layout's order), computes their
   rhs (the layout's batch code) and writes it with write_rhs. PREFETCH (a persistent grid, gridDim < nbatch):
   each block loops over batches and issues the next batch's global loads before this batch's
   arithmetic, which hides their latency. */
#ifndef STAGE_NODE  /* staging thread i's element and node: element-major unless the layout says */
#define STAGE_NODE(i, e, n) { e = (i) / NSN; n = (i) - e * NSN; }
#endif

/* a staged element's 9 affine factors (GEO_STRIDE 12: rows of three real4, vector loads) */
#if GEO_STRIDE == 12
#define GEO_ROW(i) ((i) / 9 * 12 + (i) % 9)
#else
#define GEO_ROW(i) (i)
#endif
__device__ __forceinline__ void load_geo(real (&G)[9], const real* g)
{
#if GEO_STRIDE == 12
    const real4* g4 = reinterpret_cast<const real4*>(g);
    const real4 a = g4[0], b = g4[1], c = g4[2];
    G[0] = a.a; G[1] = a.b; G[2] = a.c; G[3] = a.d; G[4] = b.a; G[5] = b.b; G[6] = b.c; G[7] = b.d; G[8] = c.a;
#else
    #pragma unroll
    for (int i = 0; i < 9; ++i) G[i] = g[i];
#endif
}

__device__ __forceinline__ real4 volume_rhs(const real* g, const real pr, const real ps, const real pt,
                                             const real dv, const real inv_rho, const real rhoc2)
{
    /* (pr, ps, pt) = (Dr, Ds, Dt) p and dv = div of the contravariant velocity at one node */
    real4 r;
    r.a = -rhoc2 * dv;
    r.b = -inv_rho * (g[0] * pr + g[3] * ps + g[6] * pt);
    r.c = -inv_rho * (g[1] * pr + g[4] * ps + g[7] * pt);
    r.d = -inv_rho * (g[2] * pr + g[5] * ps + g[8] * pt);
    return r;
}

__device__ __forceinline__ void write_rhs(real* __restrict__ rhs, const real* __restrict__ q,
                                          const real* __restrict__ sigma, const index_t KN, const index_t id, real4 r)
{
#if SPONGE
    const real sg = sigma[id];
    r.a -= sg * q[id]; r.b -= sg * q[KN + id]; r.c -= sg * q[2 * KN + id]; r.d -= sg * q[3 * KN + id];
#endif
    rhs[id] = r.a; rhs[KN + id] = r.b; rhs[2 * KN + id] = r.c; rhs[3 * KN + id] = r.d;
}

extern "C" __global__ void BOUNDS
dg_volume(const int K, const real* __restrict__ q, const real* __restrict__ geo,
          const dentry* __restrict__ D, const real* __restrict__ sigma, real* __restrict__ rhs,
          const real inv_rho, const real rhoc2)
{
    /* one pool of shared memory (above 48 KB dynamic, with the opt-in): the staged fields, the
       staged elements' affine factors, the operators */
    SHARED_POOL(pool, SHARED_BYTES);
    SQ_TYPE* const s_q = reinterpret_cast<SQ_TYPE*>(pool);
    real* const s_g = reinterpret_cast<real*>(pool + GEO_OFFSET);
#if D_SHARED
    dentry* const s_D = reinterpret_cast<dentry*>(pool + D_OFFSET);
    for (int i = threadIdx.x; i < DSIZE; i += NTHREADS) s_D[i] = D[i];
    const dentry* Dm = s_D;
#else
    const dentry* __restrict__ Dm = D;
#endif
    const index_t KN = (index_t)K * NP;
    const int nbatch = (K + KBV - 1) / KBV;
    real4 raw[NSTAGE];
    real graw[NGEO];
    /* global loads of batch b (KBV elements, NSN staged nodes each) into registers; unrolled and
       branch-free, so that all of a thread's loads are in flight together: indices clamped into
       range (a thread past the last node or element stages an identical or unused value) */
    auto load = [&](int b) {
        const int k0 = b * KBV;
        #pragma unroll
        for (int s = 0; s < NSTAGE; ++s) {
            const int i1 = threadIdx.x + s * NTHREADS, i = i1 < KBV * NSN ? i1 : KBV * NSN - 1;
            int e, n;
            STAGE_NODE(i, e, n);
            const int k = k0 + e < K ? k0 + e : K - 1;
            const index_t id = (index_t)k * NP + n;
#if NSN > NP  /* padding nodes staged as zeros (finite: the operators' zeros there would meet NaN) */
            if (n >= NP) { raw[s].a = raw[s].b = raw[s].c = raw[s].d = 0; continue; }
#endif
            raw[s].a = q[id]; raw[s].b = q[KN + id]; raw[s].c = q[2 * KN + id]; raw[s].d = q[3 * KN + id];
        }
        #pragma unroll
        for (int j = 0; j < NGEO; ++j) {
            const index_t g = (index_t)k0 * 9 + threadIdx.x + j * NTHREADS;
            graw[j] = geo[g < (index_t)K * 9 ? g : (index_t)K * 9 - 1];
        }
    };
    /* registers -> shared memory as (p, r_x.v, s_x.v, t_x.v); callers sync before and after */
    auto stage = [&]() {
        #pragma unroll
        for (int j = 0; j < NGEO; ++j)
            if (threadIdx.x + j * NTHREADS < KBV * 9) s_g[GEO_ROW(threadIdx.x + j * NTHREADS)] = graw[j];
        __syncthreads();
        #pragma unroll
        for (int s = 0; s < NSTAGE; ++s) {
            const int i1 = threadIdx.x + s * NTHREADS, i = i1 < KBV * NSN ? i1 : KBV * NSN - 1;
            int e, n;
            STAGE_NODE(i, e, n);
            real g[9];
            load_geo(g, s_g + GEO_STRIDE * e);
            const real u = raw[s].b, v = raw[s].c, w = raw[s].d;
            real4 f;
            f.a = raw[s].a;
            f.b = g[0] * u + g[1] * v + g[2] * w;
            f.c = g[3] * u + g[4] * v + g[5] * w;
            f.d = g[6] * u + g[7] * v + g[8] * w;
            STAGE_FIELD(i, e, n, f);
        }
    };
__SETUP__
    int b = blockIdx.x;
    load(b);
    stage();
    __syncthreads();
#if PREFETCH
    for (;;) {
        const int next = b + gridDim.x;
        if (next < nbatch) load(next);
#endif
        /* the operators as if they moved with the batch: otherwise the compiler hoists all
           their entries out of the batch loop into registers, and spills */
        const dentry* __restrict__ Db = Dm + (K < 0 ? b : 0);
__BATCH__
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

_ROWS = r"""
/* Row layout. Fields staged as real4, element stride SQS odd so that a warp reading several
   elements hits distinct banks. The block's TE * NT threads form TE rows of NT: thread (e0, t)
   computes nodes t + i NT (i < NPT) of elements e0 + j TE (j < EPT) in 4 EPT NPT accumulators,
   so each operator entry it loads feeds EPT elements and each staged field value (a
   shared-memory broadcast) NPT nodes: per m a thread loads 3 NPT + 4 EPT values for 6 EPT NPT
   FMAs, and the SM delivers 32 values per clock against 128 FMAs. The operators are stored per
   thread: row (d, m) holds RV >= NT entries, thread t's NPT nodes side by side (one vector
   load), zero for padding nodes.
   D_SHARED: operators staged in shared memory instead of read through the read-only cache. */
struct __align__(DVA) dentry { real v[NPT]; };
#define DSIZE (3 * NP * RV)
#define SQ_TYPE real4
#define STAGE_FIELD(i, e, n, f) s_q[(e) * SQS + (n)] = (f)
"""

_ROWS_SETUP = r"""
    const int e0 = threadIdx.x / NT, t = threadIdx.x - e0 * NT;
    const real4* sq = s_q + e0 * SQS;
"""

_ROWS_BATCH = r"""
        real pr[EPT][NPT], ps[EPT][NPT], pt[EPT][NPT], dv[EPT][NPT];
        #pragma unroll
        for (int j = 0; j < EPT; ++j)
            #pragma unroll
            for (int i = 0; i < NPT; ++i) { pr[j][i] = 0; ps[j][i] = 0; pt[j][i] = 0; dv[j][i] = 0; }
        #pragma unroll __UNROLL__
        for (int m = 0; m < NP; ++m) {
            real dr[NPT], ds[NPT], dt[NPT];
            const dentry er = Db[m * RV + t], es = Db[(NP + m) * RV + t], et = Db[(2 * NP + m) * RV + t];
            #pragma unroll
            for (int i = 0; i < NPT; ++i) { dr[i] = er.v[i]; ds[i] = es.v[i]; dt[i] = et.v[i]; }
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
            #pragma unroll
            for (int i = 0; i < NPT; ++i) {
                const int n = t + i * NT;
                if (n >= NP) break;
                write_rhs(rhs, q, sigma, KN, (index_t)k * NP + n, volume_rhs(s_g + GEO_STRIDE * (e0 + j * TE),
                          pr[j][i], ps[j][i], pt[j][i], dv[j][i], inv_rho, rhoc2));
            }
        }
"""

_MMA = r"""
/* Tensor-core layout: the volume terms of a batch as warp matrix products, per (element tile,
   node tile) C_pr += P Dr^T, C_ps += P Ds^T, C_pt += P Dt^T and C_dv += U_r Dr^T + U_s Ds^T +
   U_t Dt^T with P, U_* the staged fields (EM elements x KS nodes m per k step) and D_*^T the
   transposed operators (KS x NM nodes n): the fields are the mma's A, the operators its B.
   TRANSPOSED: the transposed products (C^T += D P^T ...): the operators are A, the fields B,
   so that in fp32 (EM = 8 elements, NM = 16 nodes) a warp's field fragment has half the
   registers and is loaded and split once for all its node tiles. fp64: DMMA m8n8k4 (exact
   fp64 FMAs). fp32: TF32 m16n8k8 in three products (3xTF32: a = a_hi + a_lo, b = b_hi + b_lo,
   ab ~ a_hi b_hi + a_hi b_lo + a_lo b_hi, about fp32 accuracy), the fields split when staged
   (or loaded), the operators beforehand.
   Fields staged one component after another (fp32: in fragment order, split into TF32 hi and
   lo); padding nodes are zero in the operators and staged as zeros. Warp (eg, ng) of the
   block computes ET element tiles of element group eg times NG node tiles of node group ng.
   The operators are stored in fragment order, one dentry per (d, node tile, k step, lane). */
#define SQ_TYPE real
#define DSIZE (3 * NNT * NKS * 32)
#define DSTRIDE (NNT * NKS * 32)
#define SHORT_GROUP (NGROUPS * NG > NNT)
#if TRANSPOSED  /* C register r of lane (g, t): element and node in their tiles (PTX C layout) */
#define C_ELEM(r) (2 * t + ((r) & 1))
#define C_NODE(r) (g + 8 * ((r) >> 1))
#else
#define C_ELEM(r) (g + 8 * ((r) >> 1))
#define C_NODE(r) (2 * t + ((r) & 1))
#endif
#if MMA_TF32
#define KS 8
#define CR 4
#if TRANSPOSED
#define EM 8
#define NM 16
#define FREGS 2
#else
#define EM 16
#define NM 8
#define FREGS 4
#endif
struct __align__(16) dentry { unsigned hi[6 - FREGS], lo[6 - FREGS]; };  /* the other operand's registers */
/* x rounded to TF32, to nearest, ties away (cvt.rna.tf32.f32 without its NaN/inf care, which
   costs two more instructions per value: infinities stay infinite, NaNs NaN) */
__device__ __forceinline__ unsigned to_tf32(const float x) { return (__float_as_uint(x) + 0x1000u) & 0xFFFFE000u; }
#ifndef WAVESCAT_EMULATION
__device__ __forceinline__ void mma_tf32(float* c, const unsigned* a, const unsigned* b)
{
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
/* m16n8k4: the first half of the k8 fragments (A registers 0, 1 and B register 0) */
__device__ __forceinline__ void mma_tf32_k4(float* c, const unsigned* a, const unsigned* b)
{
    asm("mma.sync.aligned.m16n8k4.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3]) : "r"(a[0]), "r"(a[1]), "r"(b[0]));
}
#endif
/* Fields staged in fragment order: per component, element tile and k step 32 FREGS floats, the
   32 lanes' hi[FREGS] (lane (g, t)'s field registers side by side), then their lo[FREGS]: a
   warp's fragment load is one or two contiguous rows. Staging thread i writes slot i of these
   rows (the hi rows, lo 32 FREGS floats after): a warp's stores are contiguous, its global
   loads 8 nodes of each of 4 elements. SPLIT_ON_LOAD: the values staged as they are (32 FREGS
   floats per k step), split when loaded: half the shared-memory traffic, two instructions per
   register; the mma truncates hi and lo to TF32 (lo within 2^-20 x, not 2^-22 x: for random
   fields times Dr at N = 4 the product's rms error is 1.3e-7 of its rms, against 1.2e-7 with
   both rounded and 0.7e-7 for fp32 FMAs; the maximum errors are 1.7e-7, 1.8e-7 and 1.6e-7 of
   the maximum). */
struct ffrag { unsigned hi[FREGS], lo[FREGS]; };
struct __align__(4 * FREGS) fvec { float v[FREGS]; };
#define F_ROW (32 * FREGS * (SPLIT_ON_LOAD ? 1 : 2))
#define F_TILE(c, tile) (s_q + (c) * KBV * SQS + (tile) * NKS * F_ROW)
#define F_SLOT(ks, lane) ((ks) * F_ROW + (lane) * FREGS)
__device__ __forceinline__ void put_split(float* p, const float x)
{
#if SPLIT_ON_LOAD
    p[0] = x;
#else
    p[0] = __uint_as_float(to_tf32(x));
    p[32 * FREGS] = __uint_as_float(to_tf32(x - p[0]));
#endif
}
/* slot i: register r, lane (g, t), k step and element tile; register r of lane (g, t) holds
   element g + 8 (r & 1), node t + 4 (r >> 1) (TRANSPOSED: element g, node t + 4 r) */
#define STAGE_NODE(i, e, n) { const unsigned u_ = (i), r_ = u_ % FREGS, l_ = u_ / FREGS % 32, q_ = u_ / (32 * FREGS); \
    e = q_ / NKS * EM + (l_ >> 2) + (FREGS == 4 ? (r_ & 1) << 3 : 0); \
    n = q_ % NKS * KS + (l_ & 3) + 4 * (FREGS == 4 ? r_ >> 1 : r_); }  /* unsigned: shifts, masks */
#define STAGE_FIELD(i, e, n, f) { float* sq_ = s_q + (unsigned)(i) / (32 * FREGS) * F_ROW + (unsigned)(i) % (32 * FREGS); \
    put_split(sq_, (f).a); put_split(sq_ + KBV * SQS, (f).b); put_split(sq_ + 2 * KBV * SQS, (f).c); \
    put_split(sq_ + 3 * KBV * SQS, (f).d); }
/* a field fragment as loaded from shared memory (fetch_f), and as the mma takes it (split_f) */
struct fraw { fvec h;
#if !SPLIT_ON_LOAD
    fvec l;
#endif
};
__device__ __forceinline__ fraw fetch_f(const float* tile, const int ks, const int lane)
{
    fraw x;
    x.h = *reinterpret_cast<const fvec*>(tile + F_SLOT(ks, lane));
#if !SPLIT_ON_LOAD
    x.l = *reinterpret_cast<const fvec*>(tile + F_SLOT(ks, lane) + 32 * FREGS);
#endif
    return x;
}
__device__ __forceinline__ void split_f(ffrag& a, const fraw& x)
{
    #pragma unroll
    for (int r = 0; r < FREGS; ++r) {
        a.hi[r] = __float_as_uint(x.h.v[r]);
#if SPLIT_ON_LOAD  /* hi: x as is, lo: the exact remainder; the mma reads both truncated to TF32 */
        a.lo[r] = __float_as_uint(x.h.v[r] - __uint_as_float(a.hi[r] & 0xFFFFE000u));
#else
        a.lo[r] = __float_as_uint(x.l.v[r]);
#endif
    }
}
#define PASSES 3
/* pass 0, 1, 2 of a product: f_lo d_hi, f_hi d_lo, f_hi d_hi (the small terms first). k4: the
   last k step where it holds at most 4 nodes m (Np % 8 in 1..4), half the products: the
   registers of the other half are not computed */
__device__ __forceinline__ void mma(float* c, const ffrag& f, const dentry& d, const int pass, const bool k4)
{
    const unsigned* fr = pass == 0 ? f.lo : f.hi;
    const unsigned* dr = pass == 1 ? d.lo : d.hi;
#if TRANSPOSED
    if (k4) mma_tf32_k4(c, dr, fr); else mma_tf32(c, dr, fr);
#else
    if (k4) mma_tf32_k4(c, fr, dr); else mma_tf32(c, fr, dr);
#endif
}
#define HALF_LAST_K (NP % 8 != 0 && NP % 8 <= 4)
#else
#define EM 8
#define NM 8
#define KS 4
#define CR 2
typedef double dentry;
struct ffrag { double v; };
#ifndef WAVESCAT_EMULATION
__device__ __forceinline__ void mma_f64(double* c, const double* a, const double* b)
{
    asm("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
        : "+d"(c[0]), "+d"(c[1]) : "d"(a[0]), "d"(b[0]));
}
#endif
/* element stride SQS = 4 (mod 8): a fragment load's 32 lanes hit distinct banks */
#define F_TILE(c, tile) (s_q + ((c) * KBV + (tile) * EM) * SQS)
#define STAGE_FIELD(i, e, n, f) { real* sq_ = s_q + (e) * SQS + (n); sq_[0] = (f).a; \
    sq_[KBV * SQS] = (f).b; sq_[2 * KBV * SQS] = (f).c; sq_[3 * KBV * SQS] = (f).d; }
/* field register of lane (g, t): element g, node t (as A and as B: the m8n8k4 fragments of
   A and of B^T have one layout) */
typedef ffrag fraw;
__device__ __forceinline__ fraw fetch_f(const double* tile, const int ks, const int lane)
{
    return {tile[(lane >> 2) * SQS + ks * 4 + (lane & 3)]};
}
__device__ __forceinline__ void split_f(ffrag& a, const fraw& x) { a = x; }
#define PASSES 1
#define HALF_LAST_K 0
__device__ __forceinline__ void mma(double* c, const ffrag& f, const dentry& d, int, bool)
{
#if TRANSPOSED
    mma_f64(c, &d, &f.v);
#else
    mma_f64(c, &f.v, &d);
#endif
}
#endif
"""

_MMA_SETUP = r"""
    /* fragment coordinates (PTX mma layouts): A register r of lane (g, t) holds row g + 8 (r & 1),
       column t + 4 (r >> 1) of its tile; B register r column g, row t + 4 r; C register r row
       g + 8 (r >> 1), column 2 t + (r & 1) (rows: elements, or nodes n with TRANSPOSED) */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int eg = warp / NGROUPS, ng = warp - eg * NGROUPS;
"""

_MMA_BATCH = r"""
        /* pr, ps, pt and dv */
        real acc[ET][NG][4][CR];
        #pragma unroll
        for (int et = 0; et < ET; ++et)
            #pragma unroll
            for (int j = 0; j < NG; ++j)
                #pragma unroll
                for (int c = 0; c < 4; ++c)
                    #pragma unroll
                    for (int r = 0; r < CR; ++r) acc[et][j][c][r] = 0;
        const dentry* __restrict__ Bw = Db + ng * NG * NKS * 32 + lane;  /* the warp's node tiles */
        /* the operator fragments (Dr, Ds, Dt) of node tile j (of the warp's NG), k step ks */
        auto fetch_d = [&](dentry (&d)[3], const int j, const int ks) {
            #pragma unroll
            for (int dd = 0; dd < 3; ++dd)
                d[dd] = Bw[(j * NKS + ks) * 32 + dd * DSTRIDE];
        };
        /* the fragments of k step ks: fields (p, U_r, U_s, U_t) of the ET element tiles as loaded,
           with PREFETCH_K also the operators */
        auto fetch = [&](fraw (&f)[ET][4], dentry (&d)[NG][3], const int ks) {
            #pragma unroll
            for (int et = 0; et < ET; ++et)
                #pragma unroll
                for (int c = 0; c < 4; ++c) f[et][c] = fetch_f(F_TILE(c, eg * ET + et), ks, lane);
#if PREFETCH_K
            #pragma unroll
            for (int j = 0; j < NG; ++j)
                if (!SHORT_GROUP || ng * NG + j < NNT) fetch_d(d[j], j, ks);
#endif
        };
#if PREFETCH_K  /* step ks + 1's loads issued before step ks's products, which hide their latency */
        fraw fk[ET][4];
        dentry dk[NG][3];
        fetch(fk, dk, 0);
#endif
        #pragma unroll __UNROLL__
        for (int ks = 0; ks < NKS; ++ks) {
#if PREFETCH_K
            fraw fn[ET][4];
            dentry dn[NG][3];
            if (ks + 1 < NKS) fetch(fn, dn, ks + 1);
#else
            dentry dk[NG][3];
#endif
            ffrag a[ET][4];
            #pragma unroll
            for (int et = 0; et < ET; ++et)
                #pragma unroll
                for (int c = 0; c < 4; ++c)
#if PREFETCH_K
                    split_f(a[et][c], fk[et][c]);
#else
                    split_f(a[et][c], fetch_f(F_TILE(c, eg * ET + et), ks, lane));
#endif
            #pragma unroll
            for (int j = 0; j < NG; ++j) {
                const int nt = ng * NG + j;
                /* warp-uniform: the last node group may be short (a branch per k step only then: it
                   would split the unrolled steps into blocks the compiler schedules apart) */
                if (SHORT_GROUP && nt >= NNT) break;
#if !PREFETCH_K
                fetch_d(dk[j], j, ks);
#endif
                const dentry br = dk[j][0], bs = dk[j][1], bt = dk[j][2];
                /* product by product, its passes one after the other (the fragments of one field
                   at a time in registers: 56 registers at N = 4, not 64) */
                const bool k4 = HALF_LAST_K && ks == NKS - 1;
                #pragma unroll
                for (int et = 0; et < ET; ++et) {
                    #pragma unroll
                    for (int pass = 0; pass < PASSES; ++pass) {
                        mma(acc[et][j][0], a[et][0], br, pass, k4);
                        mma(acc[et][j][1], a[et][0], bs, pass, k4);
                        mma(acc[et][j][2], a[et][0], bt, pass, k4);
                    }
                    #pragma unroll
                    for (int pass = 0; pass < PASSES; ++pass) mma(acc[et][j][3], a[et][1], br, pass, k4);
                    #pragma unroll
                    for (int pass = 0; pass < PASSES; ++pass) mma(acc[et][j][3], a[et][2], bs, pass, k4);
                    #pragma unroll
                    for (int pass = 0; pass < PASSES; ++pass) mma(acc[et][j][3], a[et][3], bt, pass, k4);
                }
            }
#if PREFETCH_K
            if (ks + 1 < NKS) {
                #pragma unroll
                for (int et = 0; et < ET; ++et)
                    #pragma unroll
                    for (int c = 0; c < 4; ++c) fk[et][c] = fn[et][c];
                #pragma unroll
                for (int j = 0; j < NG; ++j)
                    #pragma unroll
                    for (int dd = 0; dd < 3; ++dd) dk[j][dd] = dn[j][dd];
            }
#endif
        }
        /* the rhs of the lane's nodes, all before any is stored (a store in between would make the
           compiler load the affine factors again) */
        real4 o[ET][NG][CR];
        #pragma unroll
        for (int et = 0; et < ET; ++et)
            #pragma unroll
            for (int j = 0; j < NG; ++j)
                #pragma unroll
                for (int r = 0; r < CR; ++r) {
                    real dv = acc[et][j][3][r];
                    real G[9];
                    load_geo(G, s_g + GEO_STRIDE * ((eg * ET + et) * EM + C_ELEM(r)));
                    o[et][j][r] = volume_rhs(G, acc[et][j][0][r],
                                             acc[et][j][1][r], acc[et][j][2][r], dv, inv_rho, rhoc2);
                }
#if STAGED_OUT
        __syncthreads();  /* the staged fields are read: their space takes the rhs as real4 */
        real4* const s_o = reinterpret_cast<real4*>(s_q);
#endif
        #pragma unroll
        for (int et = 0; et < ET; ++et)
            #pragma unroll
            for (int j = 0; j < NG; ++j)
                #pragma unroll
                for (int r = 0; r < CR; ++r) {
                    const int e = (eg * ET + et) * EM + C_ELEM(r), n = (ng * NG + j) * NM + C_NODE(r);
                    if (n >= NP) continue;
#if STAGED_OUT
                    s_o[e * NP + n] = o[et][j][r];
#else
                    if (b * KBV + e < K) write_rhs(rhs, q, sigma, KN, (index_t)(b * KBV + e) * NP + n, o[et][j][r]);
#endif
                }
#if STAGED_OUT  /* the batch's rhs is one contiguous range per field: coalesced stores */
        __syncthreads();
        const int nb = (K - b * KBV < KBV ? K - b * KBV : KBV) * NP;
        for (int i = threadIdx.x; i < nb; i += NTHREADS)
            write_rhs(rhs, q, sigma, KN, (index_t)b * KBV * NP + i, s_o[i]);
#endif
"""

_SURFACE = r"""
#define NFN (4 * NFP)
__constant__ int c_fmask[NFN] = { FMASK };

/* exterior (p, u) of a boundary node from the interior (pm, um), u the normal velocity along
   the outward normal, (uinc, pinc) the incident field there, z = rho c (codes: space.py) */
__device__ __forceinline__ void ghost(const int code, const real pm, const real um, const real uinc,
                                      const real pinc, const real z, const real beta, real& pp, real& up)
{
    if (code == 2) { pp = 0; up = 0; }                               /* absorbing: zero exterior state */
    else if (code == 3) { pp = -pm - 2 * pinc; up = um; }           /* pressure release: p_s = -p_inc */
    else if (code == 4) {            /* admittance: the total outgoing characteristic meets u = beta p / z */
        const real w = (pm + pinc + z * (um + uinc)) / (1 + beta);
        pp = w - pinc; up = beta * w / z - uinc;
    }
    else if (code == 1) { pp = pm; up = -um - 2 * uinc; }           /* rigid scatterer: v_s.n = -v_inc.n */
    else { pp = pm; up = -um; }                                      /* rigid wall */
}

extern "C" __global__ void
dg_surface(const int K, const real* __restrict__ q, const long long* __restrict__ vmapP,
           const real* __restrict__ face_geo, const real* __restrict__ bdata,
           const long long* __restrict__ partner, const real* __restrict__ media,
           const real* __restrict__ LIFT, real* __restrict__ rhs,
           const real rho, const real c, const real rhoc2, const real alpha, const real beta)
{
    __shared__ real4 s_f[KBS * NFN];
    const int k0 = blockIdx.x * KBS;
    const size_t KN = (size_t)K * NP;
    const real z0 = rho * c;
    for (int i = threadIdx.x; i < KBS * NFN; i += blockDim.x) {
        const int e = i / NFN, fn = i - e * NFN, k = k0 + e;
        if (k >= K) break;
        const int f = fn / NFP;
        const real* fg = face_geo + 16 * (size_t)k + 4 * f;
        const real nx = fg[0], ny = fg[1], nz = fg[2], fs = fg[3];
        const size_t idM = (size_t)k * NP + c_fmask[fn];
#if MEDIA  /* impedance and sound-speed ratios of the element and its neighbour; v' = z v */
        const real zm = media[2 * k], sm = media[2 * k + 1];
        real zp = zm;
#endif
        const real pM = q[idM];
        real uM = nx * q[KN + idM] + ny * q[2 * KN + idM] + nz * q[3 * KN + idM];
#if MEDIA
        uM /= zm;
#endif
        long long idP = vmapP[(size_t)k * NFN + fn], j = 0;
        int code = 0;
        if (idP < 0) {
            const long long dec = -1 - idP;
            code = (int)(dec & 7); j = dec >> 3;
            if (code == 5) idP = partner[j];  /* interface: the neighbour, plus the signed incident field */
        }
        real pP, uP;
        if (idP >= 0) {
            pP = q[idP];
            uP = nx * q[KN + idP] + ny * q[2 * KN + idP] + nz * q[3 * KN + idP];
#if MEDIA
            zp = media[2 * (idP / NP)];
            uP /= zp;
#endif
            if (code == 5) { uP += bdata[2 * j]; pP += bdata[2 * j + 1]; }
        } else {
            const bool data = code == 1 || code == 3 || code == 4;
#if MEDIA
            const real zb = z0 * zm;
#else
            const real zb = z0;
#endif
            ghost(code, pM, uM, data ? bdata[2 * j] : (real)0, data ? bdata[2 * j + 1] : (real)0, zb, beta, pP, uP);
        }
        const real dp = pM - pP, du = uM - uP;
#if MEDIA  /* upwind flux between impedances zm and zp: (u_m - u*, p_m - p*) */
        const real a = (zp * du - alpha * dp / z0) / (zm + zp), b = zm * (dp - alpha * z0 * zp * du) / (zm + zp);
        const real fp = sm * zm * rhoc2 * a * fs, fv = sm * b / rho * fs;
#else
        const real fp = (real)0.5 * (rhoc2 * du - alpha * c * dp) * fs;
        const real fv = (real)0.5 * (dp / rho - alpha * c * du) * fs;
#endif
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
def _defines(defs: dict) -> str:
    return "".join(f"#define {k} {v}\n" for k, v in defs.items())


def _real(dtype) -> dict:
    itemsize = np.dtype(dtype).itemsize
    return {"REAL": "double" if itemsize == 8 else "float", "ALIGN4": str(4 * itemsize)}


def volume_source(n_nodes: int, dtype, tuning: VolumeTuning, sponge: bool, index32: bool = False) -> str:
    """CUDA source of the volume kernel; index32: 32-bit indices (every index into the state and
    the affine factors of the meshes it runs on is below 2^32, see `layout.fits_index32`)."""
    itemsize = np.dtype(dtype).itemsize
    lay = volume_layout(n_nodes, tuning, itemsize)
    bounds = f"__launch_bounds__({lay.threads}" + (f", {tuning.min_blocks})" if tuning.min_blocks else ")")
    defs = {**_real(dtype), "NP": n_nodes, "NTHREADS": lay.threads,
            "NGEO": -(-lay.elements * 9 // lay.threads),
            "PREFETCH": int(tuning.persistent > 0), "KBV": lay.elements, "SQS": lay.sqs,
            "SHARED_BYTES": lay.shared_bytes, "GEO_OFFSET": lay.geo_offset, "D_OFFSET": lay.operator_offset,
            "STATIC_POOL": int(lay.shared_bytes <= STATIC_SHARED_LIMIT),
            "D_SHARED": int(tuning.d_shared), "SPONGE": int(sponge), "BOUNDS": bounds, "INDEX32": int(index32),
            "GEO_STRIDE": MMA_GEO_STRIDE if tuning.tensor else 9}
    staged = n_nodes  # nodes staged per element: tensor, the padding nodes too (as zeros)
    if tuning.tensor:
        tiles = mma_tiles(n_nodes, itemsize, tuning.transposed)
        staged = tiles.k_steps * tiles.k_step
        defs.update({"MMA_TF32": int(itemsize == 4), "TRANSPOSED": int(tuning.transposed),
                     "NNT": tiles.node_tiles, "NKS": tiles.k_steps,
                     "STAGED_OUT": int(tuning.staged_output), "SPLIT_ON_LOAD": int(tuning.split_on_load),
                     "PREFETCH_K": int(tuning.prefetch_k),
                     "NGROUPS": lay.node_groups, "ET": tuning.elements_per_thread, "NG": tuning.nodes_per_thread})
        prelude, setup, batch = _MMA, _MMA_SETUP, _MMA_BATCH
    else:
        defs.update({"NT": lay.nt, "NPT": tuning.nodes_per_thread, "TE": tuning.kb_volume,
                     "EPT": tuning.elements_per_thread, "RV": lay.rv, "DVA": lay.dva})
        prelude, setup, batch = _ROWS, _ROWS_SETUP, _ROWS_BATCH
    defs.update({"NSN": staged, "NSTAGE": -(-lay.elements * staged // lay.threads)})
    body = _VOLUME.replace("__SETUP__", setup).replace("__BATCH__", batch.replace("__UNROLL__", str(lay.unroll)))
    return _defines(defs) + _COMMON + prelude + body


def surface_source(n_nodes: int, face_nodes: int, face_mask, dtype, kb_surface: int, media: bool = False) -> str:
    """CUDA source of the surface and update kernels; media: elements of several media."""
    defs = {**_real(dtype), "NP": n_nodes, "NFP": face_nodes, "KBS": kb_surface, "MEDIA": int(media)}
    fmask = ", ".join(str(int(i)) for i in np.ravel(face_mask))
    return _defines(defs) + _COMMON + _SURFACE.replace("FMASK", fmask)


