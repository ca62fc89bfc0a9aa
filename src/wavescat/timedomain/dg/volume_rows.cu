/* Row layout (for volume.cu: these definitions, then the parts after the //// lines, which take
   the placeholders of those names there). Fields staged as real4, element stride SQS odd so
   that a warp reading several elements hits distinct banks. The block's TE * NT threads form TE
   rows of NT: thread (e0, t) computes nodes t + i NT (i < NPT) of elements e0 + j TE (j < EPT)
   in 4 EPT NPT accumulators, so each operator entry it loads feeds EPT elements and each staged
   field value (a shared-memory broadcast) NPT nodes: per m a thread loads 3 NPT + 4 EPT values
   for 6 EPT NPT FMAs, and the SM delivers 32 values per clock against 128 FMAs. The operators
   are stored per thread: row (d, m) holds RV >= NT entries, thread t's NPT nodes side by side
   (one vector load), zero for padding nodes.
   D_SHARED: operators staged in shared memory instead of read through the read-only cache. */
struct __align__(DVA) dentry { real v[NPT]; };
#define DSIZE (3 * NP * RV)
#define SQ_TYPE real4
#define STAGE_FIELD(i, e, n, f) s_q[(e) * SQS + (n)] = (f)

//// __SETUP__: the thread's place in the block, at the start of volume.cu's kernel
    const int e0 = threadIdx.x / NT, t = threadIdx.x - e0 * NT;
    const real4* sq = s_q + e0 * SQS;

//// __BATCH__: one batch's rhs, in volume.cu's batch loop (__UNROLL__: the tuning's unroll)
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
