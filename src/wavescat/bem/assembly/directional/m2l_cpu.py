"""The far blocks' kernel products on the CPU (Numba): each block's modulated Green's
function is evaluated at its node pairs as it is applied, never stored; one thread per
target expansion, so no two threads add into one place."""
from __future__ import annotations

import math

import numba as nb
import numpy as np

_INV4PI = 1.0 / (4.0 * math.pi)


@nb.njit(parallel=True, cache=True, fastmath=False)
def _apply(starts, order, tgt, src, delta, ht, hs, c, phase, grid, kr, ki, M, out):
    P, K = M.shape[1], M.shape[2]
    for g in nb.prange(len(starts) - 1):
        acc = np.zeros(K, np.complex128)
        for e in range(starts[g], starts[g + 1]):
            b = order[e]
            t, s = tgt[b], src[b]
            c0, c1, c2 = c[b, 0], c[b, 1], c[b, 2]
            for nu in range(P):
                x0 = delta[b, 0] + ht[b, 0] * grid[nu, 0]
                x1 = delta[b, 1] + ht[b, 1] * grid[nu, 1]
                x2 = delta[b, 2] + ht[b, 2] * grid[nu, 2]
                acc[:] = 0.0
                for mu in range(P):
                    d0 = x0 - hs[b, 0] * grid[mu, 0]
                    d1 = x1 - hs[b, 1] * grid[mu, 1]
                    d2 = x2 - hs[b, 2] * grid[mu, 2]
                    r = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
                    cd = d0 * c0 + d1 * c1 + d2 * c2
                    p0, p1, p2 = d0 - cd * c0, d1 - cd * c1, d2 - cd * c2
                    lag = (p0 * p0 + p1 * p1 + p2 * p2) / (r + cd)  # r - c.d, no cancellation
                    amp = _INV4PI / r
                    if ki != 0.0:
                        amp *= math.exp(-ki * r)
                    sre = amp * math.cos(kr * lag)
                    sim = amp * math.sin(kr * lag)
                    sv = complex(sre, sim)
                    for j in range(K):
                        acc[j] += sv * M[s, mu, j]
                for j in range(K):
                    out[t, nu, j] += acc[j] * phase[b]


def apply_blocks(tgt, src, delta, ht, hs, c, phase, grid, k, M, out):
    """out[tgt[b]] += phase[b] S_b M[src[b]] for every block b (host arrays; M and out
    (expansions, nodes, columns))."""
    if not len(tgt):
        return
    order = np.argsort(tgt, kind="stable")
    bounds = np.flatnonzero(np.diff(tgt[order])) + 1
    starts = np.concatenate([[0], bounds, [len(tgt)]]).astype(np.int64)
    k = complex(k)
    _apply(starts, order, tgt, src, delta, ht, hs, c, phase, grid, k.real, k.imag, M, out)
