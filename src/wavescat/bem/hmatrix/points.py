"""ACA of admissible blocks on their clusters' quadrature points, the factors then summed
into the dofs.

A regular entry sums the operator's point kernel over the quadrature points of two
supports, so an admissible block is

    A[tau, sigma] = Phi_tau^T  G[P(tau), P(sigma)]  Phi_sigma,

with P(tau) the quadrature points of the elements that touch the dofs of cluster tau, G
the point kernel (the operator's kernel at two points, with their elements' normals; for W
the G of Maue's formula) and Phi the weights that sum a point into a dof (rule weight x
area x basis value). An entry of G is one kernel evaluation, where an entry of A sums
(valence x points per element)^2 of them (about 1,300 for P1 and the 6-point rule), and a
point block is about 13 times longer each way: ACA on G's block takes about 100 times fewer
kernel evaluations than ACA on A's. Its factors are summed into the dofs (Phi^T U, Phi^T V,
`dof_sums`) and recompressed to eps.

W sums each point with six weights, the weighted surface curl's three components and the
weighted normal's (curl.curl G - k^2 n.n G), so its dof factors hold 6 r columns; an ACA
of that exact low-rank product (entries from dof rows: cheap) brings them to W's rank before
the recompression.

The point ACA's tolerance is below eps, as the per-dof sums move the error: eps / 2 for V,
K and K', whose weights do not cancel, and for W, whose curls sum to zero over a support so
that a far block's curl term is smaller than its point sums by about (h / d)^2 (h the mean
element size, d the block's size), or (k h)^2 where the k^2 term dominates, against
point sums of the two terms about (1 + (k h)^2) times the curl term's: eps c / (1 + c) / 2
with c = max((k h)^2, (h / 2d)^2) (tests/bem/hmatrix/test_points.py measures both against
the dense operators, over-resolved meshes included).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba as nb
import numpy as np

from ...backend import to_host
from ..green import CUDA_GREEN, Operator, cuda_defines, kernel
from .aca import aca_plus_batched, recompress
from .clouds import ElementRule, _incidence

_W = int(Operator.hypersingular)
# point ACA tolerance over eps for the operators whose weights do not cancel
POINT_EPS = 0.5


@dataclass(frozen=True, eq=False)
class ClusterPoints:
    """The elements touching each cluster (start, size) of one side (host arrays): cluster c
    holds elements elems[estart[c]:estart[c] + ecount[c]] (sorted), so its points are the
    range [estart[c] nq, (estart[c] + ecount[c]) nq) of the side's point index space (point
    p: element elems[p // nq], rule point p % nq). rpos[rstart[c] + r - offsets[start]] is
    the position, among the cluster's elements, of the element of dof record r (the CSR of
    `_incidence`) of a dof of the cluster."""

    starts: np.ndarray
    sizes: np.ndarray
    estart: np.ndarray
    ecount: np.ndarray
    elems: np.ndarray
    rstart: np.ndarray
    rpos: np.ndarray
    offsets: np.ndarray
    records: np.ndarray
    nq: int
    n_dofs: int

    def ids(self, start, size) -> np.ndarray:
        """The clusters of blocks with these row (or column) starts and sizes."""
        key = np.asarray(start) * (self.n_dofs + 1) + np.asarray(size)
        return np.searchsorted(self.starts * (self.n_dofs + 1) + self.sizes, key)

    def spans(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """(first point, points) of clusters `ids`."""
        return self.estart[ids] * self.nq, self.ecount[ids] * self.nq


def cluster_points(rule: ElementRule, n_dofs: int, start, size) -> ClusterPoints:
    """The ClusterPoints of the distinct clusters (start[b], size[b]) of a rule (in the tree's
    dof numbering)."""
    key = np.unique(np.asarray(start, np.int64) * (n_dofs + 1) + np.asarray(size, np.int64))
    starts, sizes = key // (n_dofs + 1), key % (n_dofs + 1)
    offsets, records = _incidence(np.ascontiguousarray(rule.dofs, np.int64), n_dofs)
    nloc, n_el = rule.dofs.shape[1], rule.dofs.shape[0]
    lo, hi = offsets[starts], offsets[starts + sizes]
    cnt = hi - lo
    rstart = np.cumsum(cnt) - cnt
    cid = np.repeat(np.arange(len(starts)), cnt)
    rec = records[lo[cid] + np.arange(int(cnt.sum())) - rstart[cid]]
    ukey, inv = np.unique(cid * n_el + rec // nloc, return_inverse=True)
    ecount = np.bincount(ukey // n_el, minlength=len(starts))
    estart = np.cumsum(ecount) - ecount
    rpos = (inv.ravel() - estart[cid]).astype(np.int32)
    return ClusterPoints(starts, sizes, estart, ecount, (ukey % n_el).astype(np.int32), rstart,
                         rpos, offsets, records, int(rule.pts.shape[1]), int(n_dofs))


@nb.njit(parallel=True, cache=True)
def _points_cpu(kop, kr, ki, ti, sj, telems, tpts, tnrm, selems, spts, snrm, out_re, out_im):
    nqt, nqs = tpts.shape[1], spts.shape[1]
    for p in nb.prange(ti.shape[0]):
        e, a = telems[ti[p] // nqt], ti[p] % nqt
        f, b = selems[sj[p] // nqs], sj[p] % nqs
        d0 = tpts[e, a, 0] - spts[f, b, 0]
        d1 = tpts[e, a, 1] - spts[f, b, 1]
        d2 = tpts[e, a, 2] - spts[f, b, 2]
        if d0 * d0 + d1 * d1 + d2 * d2 == 0.0:  # one point of one mesh: contributes nothing
            out_re[p] = 0.0
            out_im[p] = 0.0
            continue
        out_re[p], out_im[p] = kernel(kop, d0, d1, d2, tnrm[e, 0], tnrm[e, 1], tnrm[e, 2],
                                      snrm[f, 0], snrm[f, 1], snrm[f, 2], kr, ki)


@nb.njit(parallel=True, cache=True)
def _dof_sums_cpu(U, r0, m, rbase, offsets, records, rpos, nloc, wts, phi, curl, nrm, comps, out):
    """out[b, t, c, :] = sum over the points of dof r0[b] + t's elements of weight c times
    U[b, point, :] (U and out real: complex factors as interleaved (re, im) columns)."""
    nq = wts.shape[1]
    for b in nb.prange(U.shape[0]):
        for t in range(m[b]):
            i = r0[b] + t
            for r in range(offsets[i], offsets[i + 1]):
                e = records[r] // nloc
                li = records[r] - e * nloc
                p0 = rpos[rbase[b] + r] * nq
                for q in range(nq):
                    w = wts[e, q]
                    for c in range(comps):
                        if comps == 1:
                            coef = w * phi[q, li]
                        elif c < 3:
                            coef = w * curl[e, li, c]
                        else:
                            coef = w * phi[q, li] * nrm[e, c - 3]
                        for k in range(U.shape[2]):
                            out[b, t, c, k] += coef * U[b, p0 + q, k]


_CUDA_SRC = CUDA_GREEN + r"""
extern "C" __global__ void point_pairs(const long long npairs, const int* __restrict__ ti,
    const int* __restrict__ sj, const int* __restrict__ telems, const T* __restrict__ tpts,
    const T* __restrict__ tnrm, const int nqt, const int* __restrict__ selems,
    const T* __restrict__ spts, const T* __restrict__ snrm, const int nqs, const T kr,
    const T ki, T* __restrict__ out)
{
    long long p = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= npairs) return;
    const long long e = telems[ti[p] / nqt], a = e * nqt + ti[p] % nqt;
    const long long f = selems[sj[p] / nqs], b = f * nqs + sj[p] % nqs;
    const T d0 = tpts[3*a] - spts[3*b], d1 = tpts[3*a+1] - spts[3*b+1], d2 = tpts[3*a+2] - spts[3*b+2];
    T re = 0, im = 0;
    if (d0*d0 + d1*d1 + d2*d2 != (T)0)  // one point of one mesh contributes nothing
        kernel_value<T>(d0, d1, d2, tnrm + 3*e, snrm + 3*f, kr, ki, re, im);
#if LAPLACE
    out[p] = re;
#else
    out[2*p] = re; out[2*p+1] = im;
#endif
}

// out[b, t, c, k] = sum over the points of dof r0[b] + t's elements of weight c times
// U[b, point, k]: one thread per (b, t, k), U and out real (complex as (re, im) columns)
extern "C" __global__ void dof_sums(const long long total, const T* __restrict__ U,
    const int Lp, const int L, const int K, const long long* __restrict__ r0,
    const long long* __restrict__ m, const long long* __restrict__ rbase,
    const long long* __restrict__ offsets, const long long* __restrict__ records,
    const int* __restrict__ rpos, const int nloc, const int nq, const T* __restrict__ wts,
    const T* __restrict__ phi, const T* __restrict__ curl, const T* __restrict__ nrm,
    T* __restrict__ out)
{
    long long x = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= total) return;
    const int k = x % K;
    const long long t = (x / K) % L, b = x / ((long long)K * L);
    if (t >= m[b]) return;
    const long long i = r0[b] + t;
    T acc[COMPS];
    for (int c = 0; c < COMPS; ++c) acc[c] = 0;
    for (long long r = offsets[i]; r < offsets[i + 1]; ++r) {
        const long long e = records[r] / nloc, li = records[r] - e * nloc;
        const T* u = U + (b * Lp + (long long)rpos[rbase[b] + r] * nq) * K + k;
        for (int q = 0; q < nq; ++q) {
            const T wu = wts[e * nq + q] * u[(long long)q * K];
#if COMPS == 1
            acc[0] += phi[q * nloc + li] * wu;
#else
            for (int c = 0; c < 3; ++c) {
                acc[c] += curl[(e * nloc + li) * 3 + c] * wu;
                acc[3 + c] += phi[q * nloc + li] * nrm[e * 3 + c] * wu;
            }
#endif
        }
    }
    T* o = out + ((b * L + t) * COMPS) * K + k;
    for (int c = 0; c < COMPS; ++c) o[(long long)c * K] = acc[c];
}
"""


def _real_view(a):
    """A real array of the same memory: complex factors as interleaved (re, im) columns."""
    return a.view(a.real.dtype) if a.dtype.kind == "c" else a


class PointACA:
    """ACA of admissible blocks of one operator on the point kernel, the factors summed into
    dofs and recompressed (module docstring). `kernel`: the blocks' PairKernel (its counters
    and dtype); test and trial: the clouds' ElementRules in the trees' numbering."""

    def __init__(self, kernel, test: ElementRule, trial: ElementRule, shape, far):
        self.kernel, self.xp = kernel, kernel.xp
        self.op, self.k = kernel.op, kernel.wavenumber
        self.comps = 1 if self.op != _W else (3 if self.k == 0 else 6)
        # the mean element size (the side of an equilateral triangle of the mean area)
        self.h = float(np.sqrt(np.mean(test.wts.sum(axis=1)) * 4 / np.sqrt(3)))
        rdt = kernel.rdtype
        self.sides = []
        for rule, n, (s, z) in ((test, shape[0], ("r0", "m")), (trial, shape[1], ("c0", "n"))):
            cp = cluster_points(rule, n, far[s], far[z])
            put = self.xp.asarray
            dev = {"elems": put(cp.elems), "pts": put(np.ascontiguousarray(rule.pts, rdt)),
                   "nrm": put(np.ascontiguousarray(rule.nrm, rdt)),
                   "wts": put(np.ascontiguousarray(rule.wts, rdt)),
                   "phi": put(np.ascontiguousarray(rule.phi, rdt)),
                   "curl": put(np.ascontiguousarray(rule.curl, rdt)),
                   "offsets": put(cp.offsets), "records": put(cp.records), "rpos": put(cp.rpos),
                   "nloc": int(rule.dofs.shape[1])}
            self.sides.append((cp, dev))
        self._raw = None
        if kernel.backend.is_gpu:
            src = cuda_defines(self.op, self.k, rdt == np.float64, COMPS=self.comps) + _CUDA_SRC
            module = self.xp.RawModule(code=src)
            self._raw = (module.get_function("point_pairs"), module.get_function("dof_sums"))
        self.zero_tol = None  # set from the first blocks compressed

    @property
    def device_bytes(self) -> int:
        return sum(int(a.nbytes) for _, dev in self.sides for a in dev.values()
                   if hasattr(a, "nbytes"))

    def point_length(self, far, sel) -> int:
        """The longest point range of blocks `sel` (the point factors' row count)."""
        return int(max(self._spans(0, far["r0"][sel], far["m"][sel])[1].max(),
                       self._spans(1, far["c0"][sel], far["n"][sel])[1].max()))

    def _spans(self, side, start, size):
        cp = self.sides[side][0]
        return cp.spans(cp.ids(start, size))

    def __call__(self, ti, sj):
        """Point kernel entries for point indices ti (test side) and sj (trial side)."""
        xp, kern = self.xp, self.kernel
        npairs = int(ti.shape[0])
        kern.evaluations += npairs
        kern.entries += npairs
        (_, t), (_, s) = self.sides
        kop = 0 if self.op == _W else int(self.op)
        if self._raw is None:
            re = np.empty(npairs, kern.rdtype)
            im = np.empty(npairs, kern.rdtype)
            _points_cpu(kop, *kern._k, np.asarray(ti, np.int64), np.asarray(sj, np.int64),
                        t["elems"], t["pts"], t["nrm"], s["elems"], s["pts"], s["nrm"], re, im)
            return (re + 1j * im).astype(kern.dtype) if kern.helmholtz else re
        buf = xp.empty(npairs * (2 if kern.helmholtz else 1), dtype=kern.rdtype)
        if npairs:
            self._raw[0](((npairs + 127) // 128,), (128,),
                         (np.int64(npairs), ti.astype(xp.int32, copy=False),
                          sj.astype(xp.int32, copy=False), t["elems"], t["pts"], t["nrm"],
                          np.int32(t["pts"].shape[1]), s["elems"], s["pts"], s["nrm"],
                          np.int32(s["pts"].shape[1]), *kern._k, buf))
        return buf.view(kern.dtype) if kern.helmholtz else buf

    def dof_sums(self, side, P, start, size, L):
        """Point factors P (B, Lp, K) of blocks whose row (side 0) or column (side 1) clusters
        are (start, size) summed into their dofs: (B, L, comps K), weight c's sums in
        columns c K .. (c + 1) K - 1."""
        xp = self.xp
        cp, dev = self.sides[side]
        B, Lp, K = P.shape
        ids = cp.ids(start, size)
        rbase = cp.rstart[ids] - cp.offsets[start]
        Pr = _real_view(xp.ascontiguousarray(P))
        K2 = Pr.shape[2]
        out = xp.zeros((B, L, self.comps, K2), Pr.dtype)
        if self._raw is None:
            _dof_sums_cpu(Pr, np.asarray(start, np.int64), np.asarray(size, np.int64), rbase,
                          dev["offsets"], dev["records"], dev["rpos"], dev["nloc"], dev["wts"],
                          dev["phi"], dev["curl"], dev["nrm"], self.comps, out)
        else:
            total = B * L * K2
            if total:
                args = [xp.asarray(np.asarray(a, np.int64)) for a in (start, size, rbase)]
                self._raw[1](((total + 127) // 128,), (128,),
                             (np.int64(total), Pr, np.int32(Lp), np.int32(L), np.int32(K2),
                              *args, dev["offsets"], dev["records"], dev["rpos"],
                              np.int32(dev["nloc"]), np.int32(dev["wts"].shape[1]), dev["wts"],
                              dev["phi"], dev["curl"], dev["nrm"], out))
        out = out.view(P.dtype) if P.dtype.kind == "c" else out
        return out.reshape(B, L, self.comps * K)

    def point_eps(self, eps, far, ids) -> float:
        """The point ACA's tolerance for blocks `ids` (module docstring)."""
        if self.op != _W:
            return POINT_EPS * eps
        d = float(np.min(far["diam"][ids])) if len(ids) else 1.0
        cancel = max((abs(self.k) * self.h) ** 2, (self.h / (2 * d)) ** 2 if d > 0 else 1.0)
        return eps * cancel / (1 + cancel) / 2

    def _point_zero_tol(self, far) -> float:
        """Point kernel values below this count as zero: 10 ulp of the largest value among
        the nearest points of (up to 4,096 of) the smallest blocks, the role the dense near
        field's largest entry plays for ACA on dof entries."""
        pick = np.argsort(far["diam"], kind="stable")[:4096]
        (tp, _), (sp_, _) = (self._spans(0, far["r0"][pick], far["m"][pick]),
                             self._spans(1, far["c0"][pick], far["n"][pick]))
        vals = self(self.xp.asarray(tp), self.xp.asarray(sp_))
        scale = float(to_host(self.xp.max(self.xp.abs(vals)))) if len(pick) else 0.0
        return 10 * float(np.finfo(self.kernel.rdtype).eps) * scale

    def compress(self, far, ids, eps, dtype, L, zero_tol):
        """Low-rank (U (B, L, K), V, rank, ACA steps, host syncs, largest point rank) of the
        admissible blocks `ids` (host indices) of `far`; zero_tol: the dof entries' zero level."""
        xp = self.xp
        if self.zero_tol is None:
            self.zero_tol = self._point_zero_tol(far)
        r0, m, c0, n = (far[key][ids] for key in ("r0", "m", "c0", "n"))
        pr0, pm = self._spans(0, r0, m)
        pc0, pn = self._spans(1, c0, n)
        Lp = int(max(pm.max(), pn.max()))
        res = aca_plus_batched(self, *(xp.asarray(a) for a in (pr0, pm, pc0, pn)),
                               self.point_eps(eps, far, ids), xp, dtype,
                               zero_tol=self.zero_tol, length=Lp)
        steps, syncs = res.steps, res.host_syncs
        U = self.dof_sums(0, res.U, r0, m, L)
        V = self.dof_sums(1, res.V, c0, n, L)
        rank = res.rank
        if self.comps > 1:
            if self.comps == 6:  # curl.curl G - k^2 n.n G: the normal columns of V carry -k^2
                V[:, :, 3 * res.U.shape[2]:] *= -(self.k ** 2)
            U, V, rank, more = _aca_of_factors(U, V, m, n, eps / 4, xp, dtype, zero_tol)
            steps, syncs = steps + more.steps, syncs + more.host_syncs
        U, V, rank = recompress(xp, U, V, rank, eps)
        return U, V, rank, steps, syncs, int(to_host(res.rank).max(initial=0))


def _aca_of_factors(U, V, m, n, eps, xp, dtype, zero_tol):
    """ACA+ of the exact low-rank blocks U[b] V[b]^T (B, L, R): block b's rows are rows
    b L .. b L + m_b - 1 of the stacked factors, so an entry is one row of U times one of V."""
    B, L, R = U.shape
    Uf, Vf = U.reshape(B * L, R), V.reshape(B * L, R)
    base = xp.arange(B) * L
    res = aca_plus_batched(lambda ti, sj: xp.sum(Uf[ti] * Vf[sj], axis=1), base,
                           xp.asarray(m), base, xp.asarray(n), eps, xp, dtype,
                           zero_tol=zero_tol, length=L)
    return res.U, res.V, res.rank, res
