/* Tensor-core layout (for volume.cu: these definitions, then the parts after the //// lines,
   which take the placeholders of those names there): the volume terms of a batch as warp matrix
   products, per (element tile, node tile) C_pr += P Dr^T, C_ps += P Ds^T, C_pt += P Dt^T and
   C_dv += U_r Dr^T + U_s Ds^T + U_t Dt^T with P, U_* the staged fields (EM elements x KS nodes
   m per k step) and D_*^T the transposed operators (KS x NM nodes n): the fields are the mma's
   A, the operators its B. TRANSPOSED: the transposed products (C^T += D P^T ...): the operators
   are A, the fields B, so that in fp32 (EM = 8 elements, NM = 16 nodes) a warp's field fragment
   has half the registers and is loaded and split once for all its node tiles. fp64: DMMA m8n8k4
   (exact fp64 FMAs). fp32: TF32 m16n8k8 in three products (3xTF32: a = a_hi + a_lo, b = b_hi +
   b_lo, ab ~ a_hi b_hi + a_hi b_lo + a_lo b_hi, about fp32 accuracy), the fields split when
   staged (or loaded), the operators beforehand.
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

//// __SETUP__: the thread's place in the block, at the start of volume.cu's kernel
    /* fragment coordinates (PTX mma layouts): A register r of lane (g, t) holds row g + 8 (r & 1),
       column t + 4 (r >> 1) of its tile; B register r column g, row t + 4 r; C register r row
       g + 8 (r >> 1), column 2 t + (r & 1) (rows: elements, or nodes n with TRANSPOSED) */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int eg = warp / NGROUPS, ng = warp - eg * NGROUPS;

//// __BATCH__: one batch's rhs, in volume.cu's batch loop (__UNROLL__: the tuning's unroll)
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
