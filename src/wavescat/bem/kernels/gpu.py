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

from functools import cached_property
from pathlib import Path

import numpy as np

from .green import CUDA_GREEN, cuda_defines

_SOURCE = CUDA_GREEN + Path(__file__).with_name("gpu.cu").read_text()

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
        self.a, self.b = a, b
        self._copies = {}

    def _soa(self, data, field, dtype):
        """data.<field> (m, ...) on the device as flat [component * m + element], copied on
        first use (the H-matrix path reads the singular and near data only) and once for test
        and trial of one space; transposed on the device (a host transpose and copy took
        seconds per operator at 2 kHz on the submarine, on every rank)."""
        key = (id(data), field, np.dtype(dtype).str)
        if key not in self._copies:
            x = np.asarray(getattr(data, field))
            x = self.cp.asarray(x.reshape(len(x), -1), dtype=dtype)
            self._copies[key] = self.cp.ascontiguousarray(x.T).ravel()
        return self._copies[key]

    def _geo(self, data):
        return [self._soa(data, f, self.T) for f in ("pts", "wts", "nrm", "curl")]

    def _sing(self, data):  # touching pairs are integrated in double precision whatever the precision
        return [self._soa(data, f, np.float64) for f in ("corners", "areas", "nrm", "curl")]

    @cached_property
    def rule(self):
        cp, r = self.cp, self.ev.rules
        return [cp.asarray(r.offsets, np.int32), cp.asarray(r.ref_a.T.ravel(), np.float64),  # (s, t) pairs
                cp.asarray(r.ref_b.T.ravel(), np.float64), cp.asarray(r.weights, np.float64)]

    def _both(self, field, dtype):
        """The test and the trial data's device copies of `field`."""
        return [self._soa(d, field, dtype) for d in (self.a, self.b)]

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
                                          np.int32(self.ma), np.int32(self.mb),
                                          *self._geo(self.a), *self._geo(self.b),
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
            np.int32(self.ma), np.int32(self.mb), *self._sing(self.a), *self._sing(self.b),
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
                *self._both("tri", np.int32), *self._both("dofs", np.int32), np.int64(self.ev.shape[1]),
                *self._both("centroids", np.float64), *self._both("diameters", np.float64),
                np.float64(near_factor),
                *self._geo(self.a), *self._geo(self.b), self.kr, self.ki, acc))
        return acc

    def scatter(self, pa, pb, re, im, row_pos, col_pos, acc):
        """acc[row_pos[dof_a], col_pos[dof_b]] += local matrices (re, im) of the pairs."""
        cp = self.cp
        loc = cp.stack([cp.asarray(re, self.T), cp.asarray(im, self.T)], axis=-1)[..., :self.npart]
        loc = cp.ascontiguousarray(loc)
        n = loc.size // self.npart
        self._launch("scatter_local", n, (
            np.int64(n), cp.asarray(pa, np.int32), cp.asarray(pb, np.int32),
            np.int32(self.ma), np.int32(self.mb), *self._both("dofs", np.int32), loc,
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
