"""Regular Galerkin entries for flat lists of (test dof, trial dof) pairs.

`PairKernel(op, k, test_cloud, trial_cloud, backend, precision)(ti, sj)` returns the
entries A[ti[p], sj[p]] as a backend array. One call evaluates the rows and columns of
every active ACA block (or a chunk of near-field blocks) at once: that is what batches
the work of many blocks into one kernel launch. The Numba function and the CuPy
RawKernel compute the same sums (tested against each other).

With x the test point, y the trial point, d = y - x, r = |d|, G = e^{ikr} / (4 pi r):
  V  : w_x w_y G
  K  : w_x w_y dG/dr (d . n_y) / r
  K' : -w_x w_y dG/dr (d . n_x) / r
  W  : G (curl_x . curl_y - k^2 (n_x . n_y) w_x w_y)       (Maue's formula)
Coincident points (r = 0, same triangle) contribute nothing: those pairs touch and get
the singular correction of the near field.
"""
from __future__ import annotations

import numba as nb
import numpy as np

from ...backend import real_dtype

OPERATORS = {"single_layer": 0, "double_layer": 1, "adjoint_double_layer": 2, "hypersingular": 3}
_INV4PI = 1.0 / (4.0 * np.pi)


@nb.njit(parallel=True, cache=True, fastmath=False)
def _pairs_cpu(op, k, ti, sj, tpos, tnrm, tw, tcurl, spos, snrm, sw, scurl, out_re, out_im):
    npairs = ti.shape[0]
    qt = tpos.shape[1]
    qs = spos.shape[1]
    for p in nb.prange(npairs):
        i = ti[p]
        j = sj[p]
        acc_re = 0.0
        acc_im = 0.0
        for a in range(qt):
            wa = tw[i, a]
            xa0, xa1, xa2 = tpos[i, a, 0], tpos[i, a, 1], tpos[i, a, 2]
            na0, na1, na2 = tnrm[i, a, 0], tnrm[i, a, 1], tnrm[i, a, 2]
            ca0, ca1, ca2 = tcurl[i, a, 0], tcurl[i, a, 1], tcurl[i, a, 2]
            for b in range(qs):
                d0 = spos[j, b, 0] - xa0
                d1 = spos[j, b, 1] - xa1
                d2 = spos[j, b, 2] - xa2
                r2 = d0 * d0 + d1 * d1 + d2 * d2
                if r2 == 0.0:
                    continue
                rinv = 1.0 / np.sqrt(r2)
                r = r2 * rinv
                g = _INV4PI * rinv
                if op == 3:
                    f = (ca0 * scurl[j, b, 0] + ca1 * scurl[j, b, 1] + ca2 * scurl[j, b, 2]
                         - k * k * (na0 * snrm[j, b, 0] + na1 * snrm[j, b, 1]
                                    + na2 * snrm[j, b, 2]) * wa * sw[j, b])
                else:
                    f = wa * sw[j, b]
                    if op == 1:
                        f *= (d0 * snrm[j, b, 0] + d1 * snrm[j, b, 1] + d2 * snrm[j, b, 2]) * rinv
                    elif op == 2:
                        f *= -(d0 * na0 + d1 * na1 + d2 * na2) * rinv
                if k == 0.0:
                    if op == 1 or op == 2:
                        g = -g * rinv
                    acc_re += f * g
                else:
                    c = np.cos(k * r)
                    s = np.sin(k * r)
                    if op == 1 or op == 2:  # G (ik - 1/r)
                        gre = g * (-c * rinv - k * s)
                        gim = g * (k * c - s * rinv)
                    else:
                        gre = g * c
                        gim = g * s
                    acc_re += f * gre
                    acc_im += f * gim
        out_re[p] = acc_re
        out_im[p] = acc_im


_CUDA_SRC = r"""
typedef __T__ T;
#if __SINGLE__
#define RSQRT rsqrtf
#define SINCOS sincosf
#else
#define RSQRT rsqrt
#define SINCOS sincos
#endif
extern "C" __global__ void hm_pairs(const long long npairs, const int* __restrict__ ti,
    const int* __restrict__ sj,
    const T* __restrict__ tpos, const T* __restrict__ tnrm, const T* __restrict__ tw,
    const T* __restrict__ tcurl, const int qt,
    const T* __restrict__ spos, const T* __restrict__ snrm, const T* __restrict__ sw,
    const T* __restrict__ scurl, const int qs, const T k, T* __restrict__ out)
{
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const long long i = ti[p], j = sj[p];
    const T inv4pi = (T)0.07957747154594767;
    T acc_re = 0, acc_im = 0;
    for (int a = 0; a < qt; ++a) {
        const long long ia = i * qt + a;
        const T wa = tw[ia];
        if (__OP__ != 3 && wa == (T)0) continue;
        const T xa0 = tpos[3*ia], xa1 = tpos[3*ia+1], xa2 = tpos[3*ia+2];
        const T na0 = tnrm[3*ia], na1 = tnrm[3*ia+1], na2 = tnrm[3*ia+2];
        const T ca0 = tcurl[3*ia], ca1 = tcurl[3*ia+1], ca2 = tcurl[3*ia+2];
        for (int b = 0; b < qs; ++b) {
            const long long jb = j * qs + b;
            const T d0 = spos[3*jb] - xa0, d1 = spos[3*jb+1] - xa1, d2 = spos[3*jb+2] - xa2;
            const T r2 = d0*d0 + d1*d1 + d2*d2;
            if (r2 == (T)0) continue;
            const T rinv = RSQRT(r2);
            T g = inv4pi * rinv;
            T f;
#if __OP__ == 3
            f = ca0*scurl[3*jb] + ca1*scurl[3*jb+1] + ca2*scurl[3*jb+2]
                - k*k*(na0*snrm[3*jb] + na1*snrm[3*jb+1] + na2*snrm[3*jb+2]) * wa * sw[jb];
#elif __OP__ == 1
            f = wa * sw[jb] * (d0*snrm[3*jb] + d1*snrm[3*jb+1] + d2*snrm[3*jb+2]) * rinv;
#elif __OP__ == 2
            f = -wa * sw[jb] * (d0*na0 + d1*na1 + d2*na2) * rinv;
#else
            f = wa * sw[jb];
#endif
#if __HELM__
            T s, c;
            SINCOS(k * r2 * rinv, &s, &c);
#if __OP__ == 1 || __OP__ == 2
            acc_re += f * g * (-c * rinv - k * s);
            acc_im += f * g * (k * c - s * rinv);
#else
            acc_re += f * g * c;
            acc_im += f * g * s;
#endif
#else
#if __OP__ == 1 || __OP__ == 2
            g = -g * rinv;
#endif
            acc_re += f * g;
#endif
        }
    }
#if __HELM__
    out[2*p] = acc_re; out[2*p+1] = acc_im;
#else
    out[p] = acc_re;
#endif
}
"""


class PairKernel:
    """Regular entries of one operator between two clouds, on the backend's device.

    Clouds are copied once to the device (in cluster-tree order); `__call__(ti, sj)`
    takes backend int arrays and returns a backend array of `dtype`."""

    def __init__(self, name, k, test_cloud, trial_cloud, backend, precision="double"):
        if name not in OPERATORS:
            from ...errors import WavescatError  # noqa: PLC0415

            raise WavescatError(f"operator = {name!r}: must be one of {', '.join(OPERATORS)}")
        self.name, self.op, self.k = name, OPERATORS[name], float(np.real(k))
        self.backend = backend
        self.xp = backend.xp
        self.rdtype = real_dtype(precision)
        self.helmholtz = self.k != 0.0
        self.dtype = np.dtype(np.complex64 if self.rdtype == np.float32 else np.complex128) \
            if self.helmholtz else np.dtype(self.rdtype)
        self.evaluations = 0  # kernel evaluations done (pairs x points x points)
        self.qq = test_cloud.q * trial_cloud.q

        def put(c):
            return tuple(self.xp.asarray(np.ascontiguousarray(a, dtype=self.rdtype))
                         for a in (c.pos, c.nrm, c.w, c.curl))

        self._t, self._s = put(test_cloud), put(trial_cloud)
        self._qt, self._qs = test_cloud.q, trial_cloud.q
        self._raw = None
        if backend.is_gpu:
            src = (_CUDA_SRC.replace("__T__", "float" if self.rdtype == np.float32 else "double")
                   .replace("__SINGLE__", str(int(self.rdtype == np.float32)))
                   .replace("__OP__", str(self.op)).replace("__HELM__", str(int(self.helmholtz))))
            self._raw = self.xp.RawKernel(src, "hm_pairs")

    @property
    def device_bytes(self) -> int:
        return sum(int(a.nbytes) for a in self._t + self._s)

    def __call__(self, ti, sj):
        xp = self.xp
        npairs = int(ti.shape[0])
        self.evaluations += npairs * self.qq
        if self._raw is not None:
            if npairs == 0:
                return xp.empty(0, dtype=self.dtype)
            # complex results are written interleaved (re, im) into a real buffer
            buf = xp.empty(npairs * (2 if self.helmholtz else 1), dtype=self.rdtype)
            threads = 128
            blocks = (npairs + threads - 1) // threads
            self._raw((blocks,), (threads,),
                      (np.int64(npairs), ti.astype(xp.int32, copy=False),
                       sj.astype(xp.int32, copy=False), *self._t, np.int32(self._qt), *self._s,
                       np.int32(self._qs), self.rdtype(self.k), buf))
            if not self.helmholtz:
                return buf
            try:
                return buf.view(self.dtype)
            except Exception:  # an array module whose view cannot change the item size
                return (buf[0::2] + 1j * buf[1::2]).astype(self.dtype)
        re = np.empty(npairs, dtype=self.rdtype)
        im = np.empty(npairs, dtype=self.rdtype)
        if npairs:
            _pairs_cpu(self.op, self.rdtype(self.k), np.asarray(ti, np.int64), np.asarray(sj, np.int64),
                       *self._t, *self._s, re, im)
        return (re + 1j * im).astype(self.dtype) if self.helmholtz else re
