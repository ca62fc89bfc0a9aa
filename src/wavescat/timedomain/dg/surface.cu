/* The surface and update kernels (kernel_source.surface_source): after common.cu; c_fmask's
   placeholder takes the face nodes' volume indices (4 Nfp). */
#define NFN (4 * NFP)
__constant__ int c_fmask[NFN] = { __FMASK__ };

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
