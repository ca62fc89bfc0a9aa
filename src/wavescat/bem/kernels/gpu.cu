// The dense assembly's CUDA kernels (kernels_gpu.py), twins of kernels_cpu.py; after
// green.cu, with PHI_A_VALUES / PHI_B_VALUES replaced by the basis values at the rule's points.
__device__ const T PHI_A[NQA * NLA] = {PHI_A_VALUES};
__device__ const T PHI_B[NQB * NLB] = {PHI_B_VALUES};

// W by parts: curl_i.curl_j sum S - k^2 n.n S_ij (P1: the S_ij sum to int int G).
// ia[i], jb[j]: local basis function behind row i / column j of lre (a vertex permutation).
template <typename R>
__device__ __forceinline__ void hypersingular_finish(int a, int b, int ma, int mb,
        const R* curl_a, const R* curl_b, const R* na, const R* nb, R kr, R ki,
        const int* ia, const int* jb, R (&lre)[NLA][NLB], R (&lim)[NLA][NLB]) {
#if OP == 3
    R s0re = 0, s0im = 0;
#pragma unroll
    for (int i = 0; i < NLA; ++i)
#pragma unroll
        for (int j = 0; j < NLB; ++j) { s0re += lre[i][j]; s0im += lim[i][j]; }
    R nn = na[0] * nb[0] + na[1] * nb[1] + na[2] * nb[2];
    R k2re = kr * kr - ki * ki, k2im = 2 * kr * ki;
#pragma unroll
    for (int i = 0; i < NLA; ++i)
#pragma unroll
        for (int j = 0; j < NLB; ++j) {
            R cc = 0;
#pragma unroll
            for (int c = 0; c < 3; ++c) cc += curl_a[(ia[i] * 3 + c) * ma + a] * curl_b[(jb[j] * 3 + c) * mb + b];
            R sre = lre[i][j], sim = lim[i][j];
            lre[i][j] = cc * s0re - nn * (k2re * sre - k2im * sim);
            lim[i][j] = cc * s0im - nn * (k2re * sim + k2im * sre);
        }
#endif
}

// Local matrix of the pair (a, b) into lre/lim.
__device__ __forceinline__ void regular_pair(int a, int b, int ma, int mb,
        const T* pts_a, const T* wts_a, const T* nrm_a, const T* curl_a,
        const T* pts_b, const T* wts_b, const T* nrm_b, const T* curl_b, T kr, T ki,
        T (&lre)[NLA][NLB], T (&lim)[NLA][NLB]) {
    T na[3], nb[3], yb[NQB][3], wb[NQB];
#pragma unroll
    for (int c = 0; c < 3; ++c) { na[c] = nrm_a[c * ma + a]; nb[c] = nrm_b[c * mb + b]; }
#pragma unroll
    for (int q = 0; q < NQB; ++q) {
        wb[q] = wts_b[q * mb + b];
#pragma unroll
        for (int c = 0; c < 3; ++c) yb[q][c] = pts_b[(q * 3 + c) * mb + b];
    }
#pragma unroll
    for (int i = 0; i < NLA; ++i)
#pragma unroll
        for (int j = 0; j < NLB; ++j) { lre[i][j] = 0; lim[i][j] = 0; }
#pragma unroll 1
    for (int qa = 0; qa < NQA; ++qa) {
        T x0 = pts_a[(qa * 3 + 0) * ma + a], x1 = pts_a[(qa * 3 + 1) * ma + a],
          x2 = pts_a[(qa * 3 + 2) * ma + a];
        T tre[NLB], tim[NLB];
#pragma unroll
        for (int j = 0; j < NLB; ++j) { tre[j] = 0; tim[j] = 0; }
#pragma unroll
        for (int qb = 0; qb < NQB; ++qb) {
            T gre, gim;
            kernel_value<T>(x0 - yb[qb][0], x1 - yb[qb][1], x2 - yb[qb][2], na, nb, kr, ki, gre, gim);
            gre *= wb[qb]; gim *= wb[qb];
#pragma unroll
            for (int j = 0; j < NLB; ++j) { tre[j] += gre * PHI_B[qb * NLB + j]; tim[j] += gim * PHI_B[qb * NLB + j]; }
        }
        T wa = wts_a[qa * ma + a];
#pragma unroll
        for (int i = 0; i < NLA; ++i) {
            T c = wa * PHI_A[qa * NLA + i];
#pragma unroll
            for (int j = 0; j < NLB; ++j) { lre[i][j] += c * tre[j]; lim[i][j] += c * tim[j]; }
        }
    }
    const int ident[3] = {0, 1, 2};
    hypersingular_finish(a, b, ma, mb, curl_a, curl_b, na, nb, kr, ki, ident, ident, lre, lim);
}

extern "C" __global__ void regular_local(long long npairs, const int* pa, const int* pb, int ma, int mb,
        const T* pts_a, const T* wts_a, const T* nrm_a, const T* curl_a,
        const T* pts_b, const T* wts_b, const T* nrm_b, const T* curl_b, T kr, T ki,
        T* out_re, T* out_im) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    T lre[NLA][NLB], lim[NLA][NLB];
    regular_pair(pa[p], pb[p], ma, mb, pts_a, wts_a, nrm_a, curl_a, pts_b, wts_b, nrm_b, curl_b,
                 kr, ki, lre, lim);
#pragma unroll
    for (int i = 0; i < NLA; ++i)
#pragma unroll
        for (int j = 0; j < NLB; ++j) {
            out_re[(p * NLA + i) * NLB + j] = lre[i][j];
            out_im[(p * NLA + i) * NLB + j] = lim[i][j];
        }
}

// All regular pairs (a0 .. a0 + na_tile) x (0 .. mb) added into out[row, col, part].
extern "C" __global__ void dense_regular(int a0, int na_tile, int ma, int mb,
        const int* tri_a, const int* tri_b, const int* dofs_a, const int* dofs_b, long long ncols,
        const double* cen_a, const double* cen_b, const double* diam_a, const double* diam_b,
        double near_factor,
        const T* pts_a, const T* wts_a, const T* nrm_a, const T* curl_a,
        const T* pts_b, const T* wts_b, const T* nrm_b, const T* curl_b, T kr, T ki, T* out) {
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (long long)na_tile * mb) return;
    int a = a0 + (int)(idx / mb), b = (int)(idx % mb);
#pragma unroll
    for (int i = 0; i < 3; ++i)
#pragma unroll
        for (int j = 0; j < 3; ++j)
            if (tri_a[i * ma + a] == tri_b[j * mb + b]) return;  // touching: singular rules
    {   // near pairs get the higher-order rule separately: the host's test bit for bit
        // (double precision, no FMA contraction)
        double rad = fmax(__dmul_rn(near_factor, diam_a[a]), __dmul_rn(near_factor, diam_b[b]));
        double d0 = __dsub_rn(cen_a[a], cen_b[b]), d1 = __dsub_rn(cen_a[ma + a], cen_b[mb + b]),
               d2 = __dsub_rn(cen_a[2 * ma + a], cen_b[2 * mb + b]);
        double dist2 = __dadd_rn(__dadd_rn(__dmul_rn(d0, d0), __dmul_rn(d1, d1)), __dmul_rn(d2, d2));
        if (dist2 < __dmul_rn(rad, rad)) return;
    }
    T lre[NLA][NLB], lim[NLA][NLB];
    regular_pair(a, b, ma, mb, pts_a, wts_a, nrm_a, curl_a, pts_b, wts_b, nrm_b, curl_b,
                 kr, ki, lre, lim);
#pragma unroll
    for (int i = 0; i < NLA; ++i) {
        long long row = dofs_a[i * ma + a];
#pragma unroll
        for (int j = 0; j < NLB; ++j) {
            long long col = dofs_b[j * mb + b];
            long long e = (row * ncols + col) * NPART;
            atomicAdd(out + e, lre[i][j]);
#if NPART == 2
            atomicAdd(out + e + 1, lim[i][j]);
#endif
        }
    }
}

// Touching pairs with paired (Sauter-Schwab) rules; see kernels_cpu.singular_local.
extern "C" __global__ void singular_local(long long npairs, const int* pa, const int* pb,
        const int* kind, const int* perm_a, const int* perm_b, const int* offsets,
        const double* ref_a, const double* ref_b, const double* ref_w, int ma, int mb,
        const double* corners_a, const double* areas_a, const double* nrm_a, const double* curl_a,
        const double* corners_b, const double* areas_b, const double* nrm_b, const double* curl_b,
        double kr, double ki, T* out_re, T* out_im) {
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    int a = pa[p], b = pb[p];
    int qa_[3], qb_[3];
    double ca[3][3], cb[3][3], na[3], nb[3];
#pragma unroll
    for (int v = 0; v < 3; ++v) { qa_[v] = perm_a[p * 3 + v]; qb_[v] = perm_b[p * 3 + v]; }
#pragma unroll
    for (int v = 0; v < 3; ++v)
#pragma unroll
        for (int c = 0; c < 3; ++c) {
            ca[v][c] = corners_a[(qa_[v] * 3 + c) * ma + a];
            cb[v][c] = corners_b[(qb_[v] * 3 + c) * mb + b];
        }
#pragma unroll
    for (int c = 0; c < 3; ++c) { na[c] = nrm_a[c * ma + a]; nb[c] = nrm_b[c * mb + b]; }
    double lre[NLA][NLB], lim[NLA][NLB];
#pragma unroll
    for (int i = 0; i < NLA; ++i)
#pragma unroll
        for (int j = 0; j < NLB; ++j) { lre[i][j] = 0; lim[i][j] = 0; }
    double scale = areas_a[a] * areas_b[b];
    int k = kind[p];
    for (int q = offsets[k]; q < offsets[k + 1]; ++q) {
        double s = ref_a[2 * q], t = ref_a[2 * q + 1], u = ref_b[2 * q], v = ref_b[2 * q + 1];
        double ba[3] = {1 - s - t, s, t}, bb[3] = {1 - u - v, u, v};
        double d[3];
#pragma unroll
        for (int c = 0; c < 3; ++c)
            d[c] = (ba[0] * ca[0][c] + s * ca[1][c] + t * ca[2][c]) - (bb[0] * cb[0][c] + u * cb[1][c] + v * cb[2][c]);
        double gre, gim;
        kernel_value<double>(d[0], d[1], d[2], na, nb, kr, ki, gre, gim);
        double w = ref_w[q] * scale;
        gre *= w; gim *= w;
        // rows/columns of lre follow the permuted corners: corner c carries bary[c] (P0: 1)
#pragma unroll
        for (int i = 0; i < NLA; ++i) {
            double fa = NLA == 1 ? 1.0 : ba[i];
#pragma unroll
            for (int j = 0; j < NLB; ++j) {
                double f = fa * (NLB == 1 ? 1.0 : bb[j]);
                lre[i][j] += gre * f;
                lim[i][j] += gim * f;
            }
        }
    }
    int ia[3] = {0, 0, 0}, jb[3] = {0, 0, 0};
#pragma unroll
    for (int v = 0; v < 3; ++v) {
        if (NLA == 3) ia[v] = qa_[v];
        if (NLB == 3) jb[v] = qb_[v];
    }
    hypersingular_finish(a, b, ma, mb, curl_a, curl_b, na, nb, kr, ki, ia, jb, lre, lim);
#pragma unroll
    for (int i = 0; i < NLA; ++i)
#pragma unroll
        for (int j = 0; j < NLB; ++j) {
            out_re[(p * NLA + ia[i]) * NLB + jb[j]] = (T)lre[i][j];
            out_im[(p * NLA + ia[i]) * NLB + jb[j]] = (T)lim[i][j];
        }
}

// out[row_pos[dof_a], col_pos[dof_b], part] += loc[p, i, j, part] (one thread per local entry).
extern "C" __global__ void scatter_local(long long nentries, const int* pa, const int* pb, int ma, int mb,
        const int* dofs_a, const int* dofs_b, const T* loc, const long long* row_pos,
        const long long* col_pos, long long ncols, T* out) {
    long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= nentries) return;
    long long p = e / (NLA * NLB);
    int i = (int)(e % (NLA * NLB)) / NLB, j = (int)(e % NLB);
    long long r = row_pos[dofs_a[i * ma + pa[p]]], c = col_pos[dofs_b[j * mb + pb[p]]];
    if (r < 0 || c < 0) return;
    atomicAdd(out + (r * ncols + c) * NPART, loc[e * NPART]);
#if NPART == 2
    atomicAdd(out + (r * ncols + c) * NPART + 1, loc[e * NPART + 1]);
#endif
}
