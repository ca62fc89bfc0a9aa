"""CPU half step of the Hermite-Taylor method (Numba, parallel over grid rows).

The GPU twin is gpu.py; both follow the same three phases per cell: gather the 8
vertices, interpolate dimension by dimension with the 1D operator H, advance with
the Cauchy-Kowalewski Taylor series and keep the centre data. Here a task is one
row of cells along axis 2, and every innermost loop runs over the cells of the row
(contiguous, so LLVM vectorises it and the index logic is paid once per row).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, fastmath=False)
def _interpolate_first_axis(hmat, src, dst, line):
    """dst[j, r, :] = sum_i hmat[j, i] src[i, r, :] for (n, rows, cells) arrays, row by row
    (line: scratch of one row of cells)."""
    n = hmat.shape[0]
    for j in range(n):
        for r in range(src.shape[1]):
            line[:] = 0.0
            for i in range(n):
                w = hmat[j, i]
                for i2 in range(src.shape[2]):
                    line[i2] += w * src[i, r, i2]
            dst[j, r, :] = line


@njit(parallel=True, cache=True, fastmath=False)
def half_step(src, dst, hmat, cdim, cf, cg, lam, q, shift):
    """dst[..., i] = centre data of the cell between src nodes i+shift and i+shift+1.

    src, dst: (F, m+1, m+1, m+1, n0, n1, n2); hmat: (2m+2, 2m+2) 1D operator;
    couplings (cdim, cf, cg, lam): d/dt u_f += lam/tau * d/dz_cdim u_g, with
    lam = A_d[f, g] * tau / h_d for the half step tau; q: Taylor stages;
    shift: 0 (primary -> dual) or -1 (dual -> primary).
    """
    nf = src.shape[0]
    m1 = src.shape[1]
    m = m1 - 1
    n = 2 * m1
    n0, n1, n2 = src.shape[4], src.shape[5], src.shape[6]
    top = 3 * (2 * m + 1)  # total degree of the interpolant: higher coefficients vanish
    nc = cdim.shape[0]
    for row in prange(n0 * n1):
        i0 = row // n1
        i1 = row % n1
        loc = np.empty((nf, n, n, n, n2))
        tmp = np.empty((nf, n, n, n, n2))
        acc = np.empty((nf, m1, m1, m1, n2))
        line = np.empty(n2)
        wrap = np.empty(n2, dtype=np.int64)
        # gather: index a*(m+1)+k per axis (vertex a, derivative k)
        for a0 in range(2):
            v0 = (i0 + shift + a0 + n0) % n0
            for a1 in range(2):
                v1 = (i1 + shift + a1 + n1) % n1
                for a2 in range(2):
                    for i2 in range(n2):
                        wrap[i2] = (i2 + shift + a2 + n2) % n2
                    for f in range(nf):
                        for k0 in range(m1):
                            for k1 in range(m1):
                                for k2 in range(m1):
                                    for i2 in range(n2):
                                        loc[f, a0 * m1 + k0, a1 * m1 + k1, a2 * m1 + k2, i2] = \
                                            src[f, k0, k1, k2, v0, v1, wrap[i2]]
        # interpolate along axis 0, 1, 2 in turn (loc -> tmp -> loc -> tmp)
        for f in range(nf):
            _interpolate_first_axis(hmat, loc[f].reshape(n, n * n, n2), tmp[f].reshape(n, n * n, n2), line)
            for x in range(n):
                _interpolate_first_axis(hmat, tmp[f, x], loc[f, x], line)
            for x in range(n):
                for y in range(n):
                    _interpolate_first_axis(hmat, loc[f, x, y].reshape(n, 1, n2), tmp[f, x, y].reshape(n, 1, n2),
                                            line)
        # Taylor series in time, forward: cur_s = (1/s) L cur_(s-1) in place, in ascending
        # index order (L only reads higher indices); sum the centre data (index <= m)
        cur = tmp
        acc[:, :, :, :, :] = cur[:, :m1, :m1, :m1, :]
        for s in range(1, q + 1):
            inv = 1.0 / s
            for j0 in range(n):
                for j1 in range(n):
                    for j2 in range(n):
                        # only coefficients that still reach index <= m in q - s stages
                        if max(0, j0 - m) + max(0, j1 - m) + max(0, j2 - m) > q - s:
                            continue
                        zero = j0 + j1 + j2 > top - s
                        for f in range(nf):
                            line[:] = 0.0
                            if not zero:
                                for c in range(nc):
                                    if cf[c] != f:
                                        continue
                                    d = cdim[c]
                                    g = cg[c]
                                    if d == 0 and j0 + 1 < n:
                                        w = lam[c] * (j0 + 1) * inv
                                        for i2 in range(n2):
                                            line[i2] += w * cur[g, j0 + 1, j1, j2, i2]
                                    elif d == 1 and j1 + 1 < n:
                                        w = lam[c] * (j1 + 1) * inv
                                        for i2 in range(n2):
                                            line[i2] += w * cur[g, j0, j1 + 1, j2, i2]
                                    elif d == 2 and j2 + 1 < n:
                                        w = lam[c] * (j2 + 1) * inv
                                        for i2 in range(n2):
                                            line[i2] += w * cur[g, j0, j1, j2 + 1, i2]
                            for i2 in range(n2):
                                cur[f, j0, j1, j2, i2] = line[i2]
                            if j0 < m1 and j1 < m1 and j2 < m1:
                                for i2 in range(n2):
                                    acc[f, j0, j1, j2, i2] += line[i2]
        for f in range(nf):
            for k0 in range(m1):
                for k1 in range(m1):
                    for k2 in range(m1):
                        for i2 in range(n2):
                            dst[f, k0, k1, k2, i0, i1, i2] = acc[f, k0, k1, k2, i2]
