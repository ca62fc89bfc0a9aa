"""CuPy RawKernel twins of kernels_cpu.py (the kernels of green.py, its CUDA header included;
the same local matrices), compiled together per source as one RawModule.

One thread per element pair. Each kernel is generated for one (operator, precision,
rule sizes, local basis sizes, Laplace/Helmholtz) combination, so loops unroll and the
basis values at the regular rule's points are compile-time literals. Element data are
stored structure-of-arrays (index [component * m + element]) so that the threads of a
warp, which take consecutive trial elements, read coalesced. Real and imaginary parts are
kept apart; dense assembly adds the local matrices into the global matrix with atomics.
This module is imported only when the backend is the GPU (CuPy comes from backend.xp).
"""
from __future__ import annotations

import numpy as np

from .green import CUDA_GREEN, cuda_defines

_SOURCE = CUDA_GREEN + r"""
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
"""

_THREADS = 128


def _literals(values) -> str:
    return ", ".join(f"{v:.17g}" for v in np.asarray(values, float).ravel())


class GpuIntegrator:
    """Device copies of an EntryEvaluator's element data for one regular rule, and its compiled kernels."""

    def __init__(self, ev, a, b):
        """ev: the EntryEvaluator; a, b: its test/trial ElementData (one regular rule).
        Dense assembly evaluates every ordered pair."""
        self.cp = cp = ev.backend.xp
        self.ev = ev
        self.T = np.dtype(ev.real_dtype)
        self.ma, self.mb = len(a.pts), len(b.pts)
        self.nla, self.nlb = a.phi.shape[1], b.phi.shape[1]
        self.npart = 1 if ev.is_real else 2
        k = ev.k
        head = cuda_defines(ev.op, k, self.T == np.float64, NQA=a.phi.shape[0], NQB=b.phi.shape[0],
                            NLA=self.nla, NLB=self.nlb, NPART=self.npart)
        src = head + _SOURCE.replace("PHI_A_VALUES", _literals(a.phi)).replace(
            "PHI_B_VALUES", _literals(b.phi))
        self._src = src
        self._module = None
        self.kr, self.ki = self.T.type(k.real), self.T.type(k.imag)

        def soa(x, dtype):  # (m, ...) -> flat [component * m + element]
            x = np.asarray(x)
            return cp.asarray(np.ascontiguousarray(x.reshape(len(x), -1).T, dtype=dtype).ravel())

        self.geo_a = [soa(a.pts, self.T), soa(a.wts, self.T), soa(a.nrm, self.T), soa(a.curl, self.T)]
        self.geo_b = [soa(b.pts, self.T), soa(b.wts, self.T), soa(b.nrm, self.T), soa(b.curl, self.T)]
        self.tri_a, self.tri_b = soa(a.tri, np.int32), soa(b.tri, np.int32)
        self.dofs_a, self.dofs_b = soa(a.dofs, np.int32), soa(b.dofs, np.int32)
        # touching pairs are integrated in double precision whatever the precision
        self.sing_a = [soa(a.corners, np.float64), cp.asarray(a.areas, np.float64),
                       soa(a.nrm, np.float64), soa(a.curl, np.float64)]
        self.sing_b = [soa(b.corners, np.float64), cp.asarray(b.areas, np.float64),
                       soa(b.nrm, np.float64), soa(b.curl, np.float64)]
        self.cen_a, self.cen_b = soa(a.centroids, np.float64), soa(b.centroids, np.float64)
        self.diam_a, self.diam_b = cp.asarray(a.diameters, np.float64), cp.asarray(b.diameters, np.float64)
        r = ev.rules
        self.rule = [cp.asarray(r.offsets, np.int32), cp.asarray(r.ref_a.T.ravel(), np.float64),  # (s, t) pairs
                     cp.asarray(r.ref_b.T.ravel(), np.float64), cp.asarray(r.weights, np.float64)]

    def _kernel(self, name):
        if self._module is None:  # one NVRTC compile for all kernels of this source
            self._module = self.cp.RawModule(code=self._src, options=("--std=c++14",))
        return self._module.get_function(name)

    def _launch(self, name, n, args):
        blocks = (int(n) + _THREADS - 1) // _THREADS
        if blocks:
            self._kernel(name)((blocks,), (_THREADS,), args)

    def regular_local(self, pa, pb):
        cp = self.cp
        n = len(pa)
        out_re = cp.empty((n, self.nla, self.nlb), self.T)
        out_im = cp.empty_like(out_re)
        self._launch("regular_local", n, (np.int64(n), cp.asarray(pa, np.int32), cp.asarray(pb, np.int32),
                                          np.int32(self.ma), np.int32(self.mb), *self.geo_a, *self.geo_b,
                                          self.kr, self.ki, out_re, out_im))
        return out_re, out_im

    def singular_local(self, pa, pb, kind, perm_a, perm_b):
        cp = self.cp
        n = len(pa)
        out_re = cp.empty((n, self.nla, self.nlb), self.T)
        out_im = cp.empty_like(out_re)
        i32 = lambda x: cp.asarray(np.ascontiguousarray(x, np.int32).ravel())  # noqa: E731
        self._launch("singular_local", n, (
            np.int64(n), i32(pa), i32(pb), i32(kind), i32(perm_a), i32(perm_b), *self.rule,
            np.int32(self.ma), np.int32(self.mb), *self.sing_a, *self.sing_b,
            np.float64(self.ev.k.real), np.float64(self.ev.k.imag), out_re, out_im))
        return out_re, out_im

    def empty_matrix(self, shape):
        return self.cp.zeros(tuple(shape) + (self.npart,), self.T)

    def as_matrix(self, acc):
        if self.npart == 1:
            return acc[..., 0]
        return acc.view(np.complex128 if self.T == np.float64 else np.complex64)[..., 0]

    def dense_regular(self, near_factor):
        """(n_test, n_trial, npart) accumulator with every regular (not touching, not near) pair added."""
        acc = self.empty_matrix(self.ev.shape)
        tile = max(1, (1 << 27) // self.mb)  # test elements per launch
        for a0 in range(0, self.ma, tile):
            na = min(tile, self.ma - a0)
            self._launch("dense_regular", na * self.mb, (
                np.int32(a0), np.int32(na), np.int32(self.ma), np.int32(self.mb),
                self.tri_a, self.tri_b, self.dofs_a, self.dofs_b, np.int64(self.ev.shape[1]),
                self.cen_a, self.cen_b, self.diam_a, self.diam_b, np.float64(near_factor),
                *self.geo_a, *self.geo_b, self.kr, self.ki, acc))
        return acc

    def scatter(self, pa, pb, re, im, row_pos, col_pos, acc):
        """acc[row_pos[dof_a], col_pos[dof_b]] += local matrices (re, im) of the pairs."""
        cp = self.cp
        loc = cp.stack([cp.asarray(re, self.T), cp.asarray(im, self.T)], axis=-1)[..., :self.npart]
        loc = cp.ascontiguousarray(loc)
        n = loc.size // self.npart
        self._launch("scatter_local", n, (
            np.int64(n), cp.asarray(pa, np.int32), cp.asarray(pb, np.int32),
            np.int32(self.ma), np.int32(self.mb), self.dofs_a, self.dofs_b, loc,
            cp.asarray(row_pos, np.int64), cp.asarray(col_pos, np.int64), np.int64(acc.shape[1]), acc))
        return acc


class GpuKernels:
    """The integrator interface of integrators.py on the GPU: the regular and the near rule's
    compiled kernels; every ordered pair of elements is evaluated."""

    def __init__(self, ev):
        self.ev = ev
        self._regular = GpuIntegrator(ev, ev.data_a, ev.data_b)
        self._near = GpuIntegrator(ev, ev.near_a, ev.near_b)

    def on_device(self, idx):
        return self._regular.cp.asarray(idx)

    def regular(self, pa, pb, near=False):
        return (self._near if near else self._regular).regular_local(pa, pb)

    def singular(self, pa, pb, kind, perm_a, perm_b):
        return self._regular.singular_local(pa, pb, kind, perm_a, perm_b)

    def block(self, pa, pb, re, im, row_pos, col_pos, shape):
        g = self._regular
        return g.as_matrix(g.scatter(pa, pb, re, im, row_pos, col_pos, g.empty_matrix(shape)))

    def dense_bytes(self):
        """The accumulator becomes the matrix."""
        n, m = self.ev.shape
        return n * m * self._regular.npart * self._regular.T.itemsize

    def dense(self):
        ev, g = self.ev, self._regular
        acc = g.dense_regular(ev.near_factor)
        ident_a = np.arange(ev.test.n_dofs, dtype=np.int64)
        ident_b = np.arange(ev.trial.n_dofs, dtype=np.int64)
        for pa, pb, re, im in ev.special_pairs():
            g.scatter(pa, pb, re, im, ident_a, ident_b, acc)
        return g.as_matrix(acc)
