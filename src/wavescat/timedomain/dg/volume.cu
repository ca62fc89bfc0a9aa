/* The volume kernel's frame (kernel_source.volume_source): after common.cu and a layout's
   prelude (volume_rows.cu or volume_mma.cu), whose parts after its //// lines take the two
   placeholders below, the thread setup's and the batch's. */
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
