"""The element-pair integrators of the Galerkin operators behind one interface, on the CPU
(Numba, kernels_cpu.py) or the GPU (CuPy, kernels_gpu.py); `integrator(ev)` is the one place
that picks. Every method returns backend arrays:

    regular(pa, pb, near=False)                 local matrices (re, im), regular or near rule
    singular(pa, pb, kind, perm_a, perm_b)      local matrices (re, im) of touching pairs
    on_device(idx)                              a host index array as the backend indexes with it
    block(pa, pb, re, im, row_pos, col_pos, shape)  local matrices added into a block of `shape`
    dense()                                     the whole matrix
    dense_bytes()                               the memory dense() needs (checked beforehand)
"""
from __future__ import annotations

import numpy as np

from ...progress import progress
from ..discretisation.pairs import near_pairs, touching_kinds, touching_pairs
from ..kernels import cpu as kernels_cpu
from ..kernels.gpu import GpuKernels
from ..kernels.green import Operator


def integrator(ev):
    """The integrator of an EntryEvaluator on its backend."""
    if ev.backend.is_gpu:
        return GpuKernels(ev)
    return CpuKernels(ev)


class CpuKernels:
    """The Numba kernels, float64 throughout; a space paired with itself takes each unordered
    pair of elements once (V, W symmetric, K <-> K' from the same kernel evaluations)."""

    def __init__(self, ev):
        self.ev = ev
        self.code = int(ev.op)
        self.kr, self.ki = ev.k.real, ev.k.imag
        self.swaps = ev.op in (Operator.double_layer, Operator.adjoint_double_layer)

    def on_device(self, idx):
        return idx

    def regular(self, pa, pb, near=False):
        ev = self.ev
        a, b = (ev.near_a, ev.near_b) if near else (ev.data_a, ev.data_b)
        out_re = np.empty((len(pa), a.phi.shape[1], b.phi.shape[1]))
        out_im = np.empty_like(out_re)
        kernels_cpu.regular_local(self.code, pa, pb, a.pts, a.wts, a.nrm, a.phi, a.curl,
                                  b.pts, b.wts, b.nrm, b.phi, b.curl, self.kr, self.ki, out_re, out_im)
        return out_re, out_im

    def singular(self, pa, pb, kind, perm_a, perm_b, swapped=False):
        """swapped (test is trial): also (re, im) of the pairs (pb, pa), transposed."""
        ev = self.ev
        a, b, r = ev.data_a, ev.data_b, ev.rules
        nla, nlb = a.phi.shape[1], b.phi.shape[1]
        out_re = np.empty((len(pa), nla, nlb))
        out_im = np.empty_like(out_re)
        sw = np.empty((len(pa) if swapped else 0, nla, nlb))
        sw_im = np.empty_like(sw)
        kernels_cpu.singular_local(self.code, pa, pb, kind, perm_a, perm_b,
                                   r.offsets, r.ref_a, r.ref_b, r.weights,
                                   a.corners, a.areas, a.nrm, a.curl, nla,
                                   b.corners, b.areas, b.nrm, b.curl, nlb,
                                   self.kr, self.ki, out_re, out_im, sw, sw_im)
        return (out_re, out_im, sw, sw_im) if swapped else (out_re, out_im)

    def _add(self, out, pa, pb, re, im, row_pos, col_pos):
        loc = re if self.ev.is_real else re + 1j * im
        kernels_cpu.scatter_local(pa, pb, self.ev.data_a.dofs, self.ev.data_b.dofs, loc, row_pos, col_pos, out)

    def block(self, pa, pb, re, im, row_pos, col_pos, shape):
        ev = self.ev
        out = np.zeros(shape, dtype=np.float64 if ev.is_real else np.complex128)
        self._add(out, pa, pb, re, im, row_pos, col_pos)
        return out.astype(ev.dtype, copy=False)

    def dense_bytes(self):
        """float64 accumulator (and its transposed twin for K, K' of a space with itself), then the cast."""
        ev = self.ev
        n, m = ev.shape
        parts = 1 if ev.is_real else 2
        need = n * m * parts * 8 * (2 if ev.test is ev.trial and self.swaps else 1)
        if ev.dtype.itemsize != parts * 8:
            need += n * m * ev.dtype.itemsize
        return need

    def _special_pairs_symmetric(self):
        """Touching and near pairs with a <= b computed once, the pair (b, a) from the same
        kernel evaluations (V, W: transpose; K <-> K')."""
        ev = self.ev
        mesh = ev.test.mesh
        out = []
        for kind in ("touching", "near"):
            pa, pb = touching_pairs(mesh) if kind == "touching" else near_pairs(mesh, ev.near_factor)
            keep = pa <= pb if kind == "touching" else pa < pb
            pa, pb = pa[keep], pb[keep]
            if kind == "touching":
                kinds = (a[keep] for a in touching_kinds(mesh))
                res = self.singular(pa, pb, *kinds, swapped=self.swaps)
                re, im, sre, sim = res if self.swaps else (*res, None, None)
            else:
                d = ev.near_a
                re, im = np.empty((2, len(pa)) + d.phi.shape[1:] * 2)
                sre, sim = np.empty((2, len(pa) if self.swaps else 0) + d.phi.shape[1:] * 2)
                kernels_cpu.regular_local_both(self.code, pa, pb, d.pts, d.wts, d.nrm, d.phi, d.curl,
                                               self.kr, self.ki, re, im, sre, sim)
            out.append((pa, pb, re, im))
            off = pa != pb  # coincident pairs are their own swap
            if self.swaps:
                sre, sim = sre[off].transpose(0, 2, 1), sim[off].transpose(0, 2, 1)
            else:
                sre, sim = re[off].transpose(0, 2, 1), im[off].transpose(0, 2, 1)
            out.append((pb[off], pa[off], np.ascontiguousarray(sre), np.ascontiguousarray(sim)))
        return out

    def dense(self):
        ev = self.ev
        a, b = ev.data_a, ev.data_b
        parts = 1 if ev.is_real else 2
        acc = np.zeros(ev.shape + (parts,))
        if ev.test is ev.trial:  # each unordered pair once: V, W symmetric, K <-> K'
            special = self._special_pairs_symmetric()
            acc_sw = np.zeros(ev.shape + (parts,)) if self.swaps else np.zeros((1, 1, parts))
            bar = progress(ev.test.mesh.n_triangles, f"assembly {ev.name}", "elements")
            for elements in ev.colors:
                # largest and smallest indices alternate: the b > a loops balance over threads
                half = (len(elements) + 1) // 2
                order = np.empty(len(elements), np.int64)
                order[0::2], order[1::2] = elements[:half], elements[half:][::-1]
                kernels_cpu.dense_regular_symmetric(
                    self.code, order, a.tri, a.dofs, a.centroids, ev.near_factor * a.diameters,
                    a.pts, a.wts, a.nrm, a.phi, a.curl, self.kr, self.ki, acc, acc_sw)
                bar.update(len(elements))
            bar.close()
            acc += (acc_sw if self.swaps else acc).transpose(1, 0, 2)
        else:
            special = ev.special_pairs()
            for elements in ev.colors:
                kernels_cpu.dense_regular(self.code, elements, a.tri, b.tri, a.dofs, b.dofs,
                                          a.centroids, b.centroids, ev.near_factor * a.diameters,
                                          ev.near_factor * b.diameters,
                                          a.pts, a.wts, a.nrm, a.phi, a.curl,
                                          b.pts, b.wts, b.nrm, b.phi, b.curl, self.kr, self.ki, acc)
        out = acc[..., 0] if ev.is_real else acc.view(np.complex128)[..., 0]
        ident_a = np.arange(ev.test.n_dofs, dtype=np.int64)
        ident_b = np.arange(ev.trial.n_dofs, dtype=np.int64)
        for pa, pb, re, im in special:
            self._add(out, pa, pb, re, im, ident_a, ident_b)
        return out.astype(ev.dtype, copy=False)
