"""Regular Galerkin entries for flat lists of (test dof, trial dof) pairs.

`PairKernel(op, k, test_cloud, trial_cloud, backend, precision)(ti, sj)` returns the
entries A[ti[p], sj[p]] as a backend array. One call evaluates the rows and columns of
every active ACA block (or a chunk of near-field blocks) at once: that is what batches
the work of many blocks into one kernel launch. The Numba function and the CuPy
RawKernel (kernels.cu) compute the same sums (tested against each other).

With x the test point, y the trial point and the kernels of ..green (d = x - y):
  V, K, K' : w_x w_y kernel(x, y)
  W        : G (curl_x . curl_y - k^2 (n_x . n_y) w_x w_y)       (Maue's formula)
Coincident points (r = 0, same triangle) contribute nothing: those pairs touch and get
the singular correction of the near field.
"""
from __future__ import annotations

from pathlib import Path

import numba as nb
import numpy as np

from ....backend import real_dtype
from ...kernels.green import OPERATORS  # noqa: F401 - re-exported
from ...kernels.green import CUDA_GREEN, Operator, cuda_defines, kernel
from .elementwise import ElementSums

_W = int(Operator.hypersingular)


@nb.njit(cache=True, inline="always")
def _padded(op, curl, i, a):
    """A padded slot: zero weight and, for W (whose curls carry their own weights), zero curl."""
    return op != _W or (curl[i, a, 0] == 0.0 and curl[i, a, 1] == 0.0 and curl[i, a, 2] == 0.0)


@nb.njit(parallel=True, cache=True, fastmath=False)
def _pairs_cpu(op, kr, ki, ti, sj, tpos, tnrm, tw, tcurl, spos, snrm, sw, scurl, out_re, out_im):
    npairs = ti.shape[0]
    qt = tpos.shape[1]
    qs = spos.shape[1]
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    kop = 0 if op == _W else op  # W: the G of Maue's formula
    for p in nb.prange(npairs):
        i = ti[p]
        j = sj[p]
        acc_re = 0.0
        acc_im = 0.0
        for a in range(qt):
            wa = tw[i, a]
            if wa == 0.0 and _padded(op, tcurl, i, a):
                continue  # clouds are padded to the largest valence: skip the empty slots
            xa0, xa1, xa2 = tpos[i, a, 0], tpos[i, a, 1], tpos[i, a, 2]
            na0, na1, na2 = tnrm[i, a, 0], tnrm[i, a, 1], tnrm[i, a, 2]
            for b in range(qs):
                if sw[j, b] == 0.0 and _padded(op, scurl, j, b):
                    continue
                d0 = xa0 - spos[j, b, 0]
                d1 = xa1 - spos[j, b, 1]
                d2 = xa2 - spos[j, b, 2]
                if d0 * d0 + d1 * d1 + d2 * d2 == 0.0:
                    continue
                gre, gim = kernel(kop, d0, d1, d2, na0, na1, na2,
                                  snrm[j, b, 0], snrm[j, b, 1], snrm[j, b, 2], kr, ki)
                ww = wa * sw[j, b]
                if op == _W:
                    cc = (tcurl[i, a, 0] * scurl[j, b, 0] + tcurl[i, a, 1] * scurl[j, b, 1]
                          + tcurl[i, a, 2] * scurl[j, b, 2])
                    nn = (na0 * snrm[j, b, 0] + na1 * snrm[j, b, 1] + na2 * snrm[j, b, 2]) * ww
                    fre = cc - k2re * nn
                    fim = -k2im * nn
                    acc_re += gre * fre - gim * fim
                    acc_im += gre * fim + gim * fre
                else:
                    acc_re += gre * ww
                    acc_im += gim * ww
        out_re[p] = acc_re
        out_im[p] = acc_im


_CUDA_SRC = CUDA_GREEN + Path(__file__).with_name("kernels.cu").read_text()  # hm_pairs


def point_counts(cloud) -> np.ndarray:
    """The real (unpadded) points of each dof of a cloud (int32): a padded cloud's real
    slots come first (clouds.space_cloud), valence x rule points of them."""
    if cloud.elements is None:
        return np.full(cloud.n, cloud.q, np.int32)
    nq = cloud.elements.pts.shape[1]
    return (np.bincount(cloud.elements.dofs.ravel(), minlength=cloud.n) * nq).astype(np.int32)


class PairKernel:
    """Regular entries of one operator between two clouds, on the backend's device.

    Clouds are copied once to the device (in cluster-tree order); `__call__(ti, sj)`
    takes backend int arrays and returns a backend array of `dtype`."""

    def __init__(self, name, k, test_cloud, trial_cloud, backend, precision="double"):
        self.name, self.op, self.wavenumber = name, Operator.named(name), complex(k)
        self.k = abs(self.wavenumber.real)  # the oscillation's wavenumber (ACA rank estimates)
        self.backend = backend
        self.xp = backend.xp
        self.rdtype = real_dtype(precision)
        self.helmholtz = self.wavenumber != 0
        self.dtype = np.dtype(np.complex64 if self.rdtype == np.float32 else np.complex128) \
            if self.helmholtz else np.dtype(self.rdtype)
        self._k = (self.rdtype(self.wavenumber.real), self.rdtype(self.wavenumber.imag))
        self.evaluations = 0  # kernel evaluations done (point pairs)
        self.entries = 0  # matrix entries computed (point_aca: point kernel values)
        self.qq = test_cloud.q * trial_cloud.q

        def put(c):
            pos, nrm, w = (self.xp.asarray(np.ascontiguousarray(a, dtype=self.rdtype))
                           for a in (c.pos, c.nrm, c.w))
            # only W reads the curls: the others get the points in their place (GiBs on the
            # device at 4 kHz on the submarine)
            curl = self.xp.asarray(np.ascontiguousarray(c.curl, dtype=self.rdtype)) \
                if self.op == Operator.hypersingular else pos
            return pos, nrm, w, curl

        # one space as test and trial: one copy of its cloud
        self._t = put(test_cloud)
        self._s = self._t if trial_cloud is test_cloud else put(trial_cloud)
        self._qt, self._qs = test_cloud.q, trial_cloud.q
        # the real points of each dof: clouds are padded to the largest valence
        self._tcnt = self.xp.asarray(point_counts(test_cloud))
        self._scnt = self._tcnt if trial_cloud is test_cloud else \
            self.xp.asarray(point_counts(trial_cloud))
        # the CPU sums the near field by element pairs and runs ACA on the point kernel
        # matrices where both clouds know their elements (elementwise.py, point_aca.py); the
        # GPU sums entry by entry
        self.elements = None
        if not backend.is_gpu and test_cloud.elements is not None \
                and trial_cloud.elements is not None:
            self.elements = ElementSums(self.op, self.wavenumber, test_cloud.elements,
                                        trial_cloud.elements, (test_cloud.n, trial_cloud.n))
        self._raw = None
        if backend.is_gpu:
            src = cuda_defines(self.op, self.wavenumber, self.rdtype == np.float64) + _CUDA_SRC
            self._raw = self.xp.RawKernel(src, "hm_pairs")

    @property
    def device_bytes(self) -> int:
        arrays = {id(a): a for a in self._t + self._s}  # shared ones once
        return sum(int(a.nbytes) for a in arrays.values())

    def add_near_field(self, near, D, bar=None):
        """Add the regular entries of the dense blocks `near` (dict of host arrays) into the
        zero stack D by element pairs (`elements` is set)."""
        self.evaluations += self.elements.near_field(near, D, bar)

    def __call__(self, ti, sj):
        xp = self.xp
        npairs = int(ti.shape[0])
        self.evaluations += npairs * self.qq
        self.entries += npairs
        if self._raw is not None:
            if npairs == 0:
                return xp.empty(0, dtype=self.dtype)
            # complex results are written interleaved (re, im) into a real buffer
            buf = xp.empty(npairs * (2 if self.helmholtz else 1), dtype=self.rdtype)
            threads = 128
            blocks = (npairs + threads - 1) // threads
            self._raw((blocks,), (threads,),
                      (np.int64(npairs), ti.astype(xp.int32, copy=False),
                       sj.astype(xp.int32, copy=False), *self._t, np.int32(self._qt),
                       self._tcnt, *self._s, np.int32(self._qs), self._scnt, *self._k, buf))
            if not self.helmholtz:
                return buf
            try:
                return buf.view(self.dtype)
            except Exception:  # an array module whose view cannot change the item size
                return (buf[0::2] + 1j * buf[1::2]).astype(self.dtype)
        re = np.empty(npairs, dtype=self.rdtype)
        im = np.empty(npairs, dtype=self.rdtype)
        if npairs:
            # contiguous always: a strided index array would compile a second variant
            _pairs_cpu(int(self.op), *self._k, np.ascontiguousarray(ti, np.int64),
                       np.ascontiguousarray(sj, np.int64),
                       *self._t, *self._s, re, im)
        return (re + 1j * im).astype(self.dtype) if self.helmholtz else re
