"""Regular entries summed by element pairs (CPU): the dense near field, blocks that ACA
takes whole, and the local matrices the singular correction subtracts.

An entry (i, j) sums the regular rule over every pair (e, f) of an element e of the
support of i and an element f of the support of j. Summed entry by entry from the dof
clouds (kernels.py), the kernel values of one element pair are recomputed for each of the
nloc_test x nloc_trial entries it feeds (9 for P1). Here each element pair is evaluated
once per task, its local matrix formed from the basis values (W: the surface curls,
Maue's formula) and added into every entry of the task it lands in: the same sums up to
rounding, with several times fewer kernel evaluations.

Dense near field: one task per row leaf cluster, owning the rows of its cluster in all of
its dense blocks (no write races); it gathers each test element touching those rows and
each trial element touching the columns of its blocks once and evaluates all their pairs.
A space with itself (the same elements in the same numbering, a symmetric partition): the
tasks take the blocks on and above the diagonal and fill those below from the swapped pairs'
local matrices, computed from the same kernel values (V, W symmetric, K <-> K').
"""
from __future__ import annotations

import numba as nb
import numpy as np

from ....errors import WavescatError
from ...kernels.cpu import _hypersingular_finish, _kernel_values
from ...kernels.green import Operator
from .clouds import _incidence

_W = int(Operator.hypersingular)
CHUNK = 8  # element pairs per kernel-value loop: their point pairs and values (18 KB) stay in L1
GROUPS_PER_CALL = 32  # row clusters per near-field call (a progress update after each)


@nb.njit(cache=True)
def _elements_of(side, lo, hi):
    """The elements (sorted, each once) holding a dof in [lo, hi) of one side."""
    offsets, records, dofs = side[0], side[1], side[2]
    return np.unique(records[offsets[lo]:offsets[hi]] // dofs.shape[1])


@nb.njit(cache=True)
def _point_pairs(e, f, T, S, d, at):
    """d[:, at + qa nqs + qb] for test element e (x) and trial element f (y) as _kernel_values
    reads them (r^2, weight, (x - y).n_x, (y - x).n_y). Coincident points (the same element
    of one mesh) get weight 0 at r^2 = 1: they contribute nothing, as in the dof clouds."""
    t_pts, t_wts, t_nrm = T[3], T[4], T[5]
    s_pts, s_wts, s_nrm = S[3], S[4], S[5]
    nqs = s_pts.shape[1]
    na0, na1, na2 = t_nrm[e, 0], t_nrm[e, 1], t_nrm[e, 2]
    nb0, nb1, nb2 = s_nrm[f, 0], s_nrm[f, 1], s_nrm[f, 2]
    for qa in range(t_pts.shape[1]):
        x0, x1, x2, wa = t_pts[e, qa, 0], t_pts[e, qa, 1], t_pts[e, qa, 2], t_wts[e, qa]
        for qb in range(nqs):
            q = at + qa * nqs + qb
            dx = x0 - s_pts[f, qb, 0]
            dy = x1 - s_pts[f, qb, 1]
            dz = x2 - s_pts[f, qb, 2]
            r2 = dx * dx + dy * dy + dz * dz
            d[0, q] = r2 if r2 > 0.0 else 1.0
            d[1, q] = wa * s_wts[f, qb] if r2 > 0.0 else 0.0
            d[2, q] = dx * na0 + dy * na1 + dz * na2
            d[3, q] = -(dx * nb0 + dy * nb1 + dz * nb2)


@nb.njit(cache=True)
def _contract(val, c, at, t_phi, s_phi, loc_re, loc_im):
    """loc[a, b] = sum_qa phi_t[qa, a] sum_qb val[c:c + 2, at + qa nqs + qb] phi_s[qb, b]. The
    trial sums of a P1 trial space stay in registers (arrays would be a store and a load each)."""
    nqt, nlt = t_phi.shape
    nqs, nls = s_phi.shape
    loc_re[:, :] = 0.0
    loc_im[:, :] = 0.0
    for qa in range(nqt):
        s0r = s1r = s2r = s0i = s1i = s2i = 0.0
        for qb in range(nqs):
            q = at + qa * nqs + qb
            xr, xi = val[c, q], val[c + 1, q]
            p0 = s_phi[qb, 0]
            s0r += xr * p0
            s0i += xi * p0
            if nls == 3:
                p1, p2 = s_phi[qb, 1], s_phi[qb, 2]
                s1r += xr * p1
                s1i += xi * p1
                s2r += xr * p2
                s2i += xi * p2
        for a in range(nlt):
            pa = t_phi[qa, a]
            loc_re[a, 0] += pa * s0r
            loc_im[a, 0] += pa * s0i
            if nls == 3:
                loc_re[a, 1] += pa * s1r
                loc_im[a, 1] += pa * s1i
                loc_re[a, 2] += pa * s2r
                loc_im[a, 2] += pa * s2i


@nb.njit(cache=True)
def _scratch(T, S):
    """Work arrays of _pair_matrices: d, kernel values, local matrices (CHUNK, 4, nlt, nls),
    the pairs' elements."""
    nqq = T[3].shape[1] * S[3].shape[1]
    nlt, nls = T[2].shape[1], S[2].shape[1]
    return (np.empty((4, CHUNK * nqq)), np.empty((4, CHUNK * nqq)),
            np.empty((CHUNK, 4, nlt, nls)), np.empty(CHUNK, np.int64), np.empty(CHUNK, np.int64))


@nb.njit(cache=True)
def _pair_matrices(op, kr, ki, cnt, T, S, work, swapped=False):
    """Local matrices work[2][p, 0:2] (re, im) of the element pairs (e, f) = (work[3][p],
    work[4][p]), p < cnt <= CHUNK: their point pairs in one kernel-value loop. swapped (T and
    S the same elements): also the local matrix of the pair (f, e) from the same kernel
    values (V, W symmetric, K <-> K' swap), as work[2][p, 2:4] at [a, b] = entry (the b-th
    function of f, the a-th of e)."""
    d, val, loc, pe, pf = work
    nqq = T[3].shape[1] * S[3].shape[1]
    for p in range(cnt):
        _point_pairs(pe[p], pf[p], T, S, d, p * nqq)
    _kernel_values(op, d, val, cnt * nqq, kr, ki, ki != 0.0)
    k2re = kr * kr - ki * ki
    k2im = 2.0 * kr * ki
    for p in range(cnt):
        for c in range(0, 4 if swapped else 2, 2):
            _contract(val, c, p * nqq, T[6], S[6], loc[p, c], loc[p, c + 1])
            # W's curl term is symmetric in (e, f): the [a, b] layout finishes alike
            if op == _W:
                _hypersingular_finish(pe[p], pf[p], T[7], S[7], T[5], S[5], k2re, k2im,
                                      loc[p, c], loc[p, c + 1])


@nb.njit(cache=True)
def _add(out, cplx, b, r, c, re, im):
    """out[b, r, c] += re + i im for out holding interleaved (re, im) when cplx."""
    if cplx:
        out[b, r, 2 * c] += re
        out[b, r, 2 * c + 1] += im
    else:
        out[b, r, c] += re


@nb.njit(parallel=True, cache=True)
def _near_field(op, kr, ki, gstart, gblocks, r0, m, c0, n, colgroup, ncolgroups, mirror, T, S,
                out, cplx, evals):
    """Add the regular entries of the dense blocks of row groups g (blocks
    gblocks[gstart[g]:gstart[g + 1]], one row cluster each) into out (B, Lr, Lc or 2 Lc
    interleaved re, im); evals[g]: the kernel evaluations of group g. mirror (T and S the
    same elements, symmetric partition; else empty): mirror[b] is the block at the
    transposed place of b (-1 on the diagonal), filled from the swapped pairs of b's."""
    swapped = len(mirror) > 0
    t_dofs, s_dofs = T[2], S[2]
    nlt, nls = t_dofs.shape[1], s_dofs.shape[1]
    nqq = T[3].shape[1] * S[3].shape[1]
    for g in nb.prange(len(gstart) - 1):
        blocks = gblocks[gstart[g]:gstart[g + 1]]
        rlo = r0[blocks[0]]
        tel = _elements_of(T, rlo, rlo + m[blocks[0]])
        total = 0
        for blk in blocks:
            total += S[0][c0[blk] + n[blk]] - S[0][c0[blk]]
        recs = np.empty(total, np.int64)
        at = 0
        blk_of = np.full(ncolgroups, -1, np.int64)  # this group's block of a column cluster
        for blk in blocks:
            lo, hi = S[0][c0[blk]], S[0][c0[blk] + n[blk]]
            recs[at:at + hi - lo] = S[1][lo:hi]
            at += hi - lo
            blk_of[colgroup[c0[blk]]] = blk
        sel = np.unique(recs // s_dofs.shape[1])
        # where the trial elements' functions land: (block, column), block -1 where in none
        # of this group's blocks (admissible blocks)
        cblk = np.full((len(sel), nls), -1, np.int64)
        ccol = np.zeros((len(sel), nls), np.int64)
        for x in range(len(sel)):
            for b in range(nls):
                j = s_dofs[sel[x], b]
                blk = blk_of[colgroup[j]] if colgroup[j] >= 0 else -1
                if blk >= 0 and j - c0[blk] < n[blk]:
                    cblk[x, b] = blk
                    ccol[x, b] = j - c0[blk]
        work = _scratch(T, S)
        loc, pe, pf = work[2], work[3], work[4]
        for e in tel:
            for f0 in range(0, len(sel), CHUNK):
                cnt = min(CHUNK, len(sel) - f0)
                pe[:] = e
                pf[:cnt] = sel[f0:f0 + cnt]
                _pair_matrices(op, kr, ki, cnt, T, S, work, swapped)
                for p in range(cnt):
                    for a in range(nlt):
                        ri = t_dofs[e, a] - rlo  # rows outside the cluster: other tasks
                        if ri < 0 or ri >= m[blocks[0]]:
                            continue
                        for b in range(nls):
                            blk = cblk[f0 + p, b]
                            if blk < 0:
                                continue
                            _add(out, cplx, blk, ri, ccol[f0 + p, b], loc[p, 0, a, b],
                                 loc[p, 1, a, b])
                            if swapped and mirror[blk] >= 0:
                                _add(out, cplx, mirror[blk], ccol[f0 + p, b], ri,
                                     loc[p, 2, a, b], loc[p, 3, a, b])
        evals[g] = len(tel) * len(sel) * nqq


@nb.njit(parallel=True, cache=True)
def _local_matrices(op, kr, ki, pa, pb, T, S, out):
    """out[p] (2, nlt, nls): the local matrix (re, im) of the element pair (pa[p], pb[p])."""
    for c in nb.prange((len(pa) + CHUNK - 1) // CHUNK):
        work = _scratch(T, S)
        lo = c * CHUNK
        cnt = min(CHUNK, len(pa) - lo)
        work[3][:cnt] = pa[lo:lo + cnt]
        work[4][:cnt] = pb[lo:lo + cnt]
        _pair_matrices(op, kr, ki, cnt, T, S, work)
        out[lo:lo + cnt] = work[2][:cnt, 0:2]


def _row_groups(near, pick):
    """(gstart, gblocks): the dense blocks `pick` grouped by row cluster (dense blocks pair
    leaf clusters, so one start is one cluster)."""
    order = pick[np.argsort(near["r0"][pick], kind="stable")]
    rs = near["r0"][order]
    starts = np.flatnonzero(np.r_[True, rs[1:] != rs[:-1]])
    if np.any(near["m"][order] != np.repeat(near["m"][order[starts]], np.diff(np.append(starts, len(rs))))):
        raise WavescatError("dense blocks of one row start differ in height: not leaf clusters")
    return np.append(starts, len(rs)).astype(np.int64), order.astype(np.int64)


def mirror_blocks(near, partial=False):
    """The block at the transposed place of each block (-1 on the diagonal); where one is
    missing (a partition that is not symmetric) None, or with `partial` -1 for that block."""
    span = int(max(near["r0"].max(), near["c0"].max())) + 1
    key = near["r0"] * span + near["c0"]
    order = np.argsort(key)
    want = near["c0"] * span + near["r0"]
    at = np.minimum(np.searchsorted(key[order], want), len(key) - 1)
    mirror = order[at]
    missing = (key[mirror] != want) | (near["m"][mirror] != near["n"])
    if missing.any() and not partial:
        return None
    return np.where((near["r0"] == near["c0"]) | missing, -1, mirror).astype(np.int64)


def _column_groups(near, n_cols):
    """(colgroup, count): the column cluster index of each column (-1: in no dense block)."""
    c0, first = np.unique(near["c0"], return_index=True)
    colgroup = np.full(n_cols, -1, np.int64)
    for g, (start, width) in enumerate(zip(c0, near["n"][first])):
        colgroup[start:start + width] = g
    return colgroup, len(c0)


def _real_view(D):
    """D as reals, complex entries as interleaved (re, im)."""
    return D.view(np.finfo(D.dtype).dtype)


def _ints(*arrays):
    return tuple(np.ascontiguousarray(a, dtype=np.int64) for a in arrays)


class ElementSums:
    """Regular entries of one operator between two ElementRules (permuted clouds' numbering)
    by element pairs: the dense near field; its sides T and S are also what point_aca.py
    reads."""

    def __init__(self, op, k, test, trial, shape):
        self.op, self.k = int(op), complex(k)
        for rule in (test, trial):
            if rule.dofs.shape[1] not in (1, 3):
                raise WavescatError(f"element sums: {rule.dofs.shape[1]} functions per element; "
                                    "P0 (1) and P1 (3) are supported")

        def side(rule, n_dofs):
            dofs = np.ascontiguousarray(rule.dofs, dtype=np.int64)
            return (*_incidence(dofs, n_dofs), dofs, rule.pts, rule.wts, rule.nrm, rule.phi,
                    rule.curl)

        self.T, self.S = side(test, shape[0]), side(trial, shape[1])
        self.shape = shape
        # one space with itself in one numbering: a pair's kernel values serve (e, f) and (f, e)
        self.same = test is trial or all(
            np.array_equal(getattr(test, key), getattr(trial, key))
            for key in ("dofs", "pts", "wts", "nrm", "phi", "curl"))

    def near_field(self, near, D, bar=None) -> int:
        """Add the regular entries of the dense blocks `near` (dict of host arrays) into the
        zero stack D (B, Lr, Lc); returns the kernel evaluations done. One space with itself
        and a block and its mirror (the block at the transposed place) among `near`: the one
        above the diagonal is summed, the one below from the same kernel values (half the
        evaluations)."""
        found = mirror_blocks(near, partial=True) if self.same else None
        mirror, pick = None, np.arange(len(near["r0"]))
        if found is not None and np.any(found >= 0):
            upper = near["c0"] >= near["r0"]
            mirror = np.where(upper, found, -1)  # a block above fills its mirror below
            pick = pick[upper | (found < 0)]  # one below is summed where it has no mirror
        gstart, gblocks = _row_groups(near, pick)
        done = np.cumsum(np.r_[0, 1 + (mirror[gblocks] >= 0)]) if mirror is not None \
            else np.arange(len(gblocks) + 1)  # blocks filled by the first k of gblocks
        colgroup, ncg = _column_groups(near, self.shape[1])
        blocks = _ints(near["r0"], near["m"], near["c0"], near["n"])
        evals = np.zeros(len(gstart) - 1, np.int64)
        out = _real_view(D)
        # row clusters differ in work (blocks per cluster): dynamic scheduling, one at a time
        with nb.parallel_chunksize(1):
            for s in range(0, len(evals), GROUPS_PER_CALL):
                part = gstart[s:s + GROUPS_PER_CALL + 1]
                _near_field(self.op, self.k.real, self.k.imag, part - part[0],
                            gblocks[part[0]:part[-1]], *blocks, colgroup, ncg,
                            np.zeros(0, np.int64) if mirror is None else mirror, self.T, self.S,
                            out, np.iscomplexobj(D), evals[s:s + len(part) - 1])
                if bar is not None:
                    bar.update(int(done[part[-1]] - done[part[0]]))
        return int(evals.sum())

    def local_matrices(self, pa, pb):
        """(re, im) (npairs, nlt, nls) of the element pairs (pa[p], pb[p]), regular rule."""
        out = np.empty((len(pa), 2) + (self.T[2].shape[1], self.S[2].shape[1]))
        _local_matrices(self.op, self.k.real, self.k.imag, *_ints(pa, pb), self.T, self.S, out)
        return out[:, 0], out[:, 1]
