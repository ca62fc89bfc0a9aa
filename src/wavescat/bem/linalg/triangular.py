"""Sparse LU solves of wide blocks of right-hand sides on the GPU, by level sets, for
several factorisations of one sparsity pattern at once.

The OSRC maps and the mass matrix of a surface factorise with one ordering (factorise in
osrc.py: nested dissection of the pattern, diagonal pivots), so their L and U factors share
one pattern. The rows of a triangular factor fall into levels: a row depends only on rows
of earlier levels, so the rows of a level are solved side by side. One thread block takes
32 columns of the right-hand sides of one factor and walks every level, with a block
barrier between levels: columns never depend on each other, so no two blocks ever wait for
each other and the whole solve is one launch. Its warps share out the rows of a level, or,
in the narrow levels at the top of the elimination tree (one row each, rows of up to a
thousand and more entries: half the entries of L), the entries of its rows, meeting in
shared memory. This replaces cuSPARSE's triangular solves, whose analysis of the factor
alone cost about 0.3 s a call (bench/README.md).

Each factor's values are kept on the device (complex, its L and U and the inverse of U's
diagonal); the pattern and the levels once for all. Every rank of a solve builds these for its
own factors, so the host does little: one compiled pass over the CSC columns of the pattern
gives the rows and levels, and the values are put in row order on the device.
"""
from __future__ import annotations

from pathlib import Path

import numba as nb
import numpy as np

_SOURCE = Path(__file__).with_name("triangular.cu").read_text()

THREADS = 1024  # warps per thread block: 32, the most a block holds (MAX_WARPS)


@nb.njit(cache=True)
def _by_rows(indptr, indices, lower):
    """The strictly triangular part of a triangular CSC pattern by rows, read straight off
    its columns (no CSR copy of the factor): row pointers, column indices (ascending in each
    row), each entry's place in the CSC data, the place of each row's diagonal entry (-1:
    none), and each row's level: 0 for rows that need no other row, else one more than the
    highest level of the rows they need. A column's level is final once the columns before it
    (after it, in an upper factor) are done, so it is pushed to the rows of its entries."""
    n = indptr.size - 1
    ip = np.zeros(n + 1, np.int32)
    diag = np.full(n, -1, np.int64)
    for j in range(n):
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            if i == j:
                diag[i] = p
            elif (i < j) == lower:
                raise ValueError("an entry on the wrong side of a triangular factor's diagonal")
            else:
                ip[i + 1] += 1
    for i in range(n):
        ip[i + 1] += ip[i]
    ix = np.empty(ip[n], np.int32)
    take = np.empty(ip[n], indptr.dtype)
    # the columns in the order in which their levels become final; rows fill from their
    # first place upwards (lower) or from their last downwards (upper): their columns ascend
    fill, step = (ip[:n].astype(np.int64), 1) if lower else (ip[1:].astype(np.int64) - 1, -1)
    level = np.zeros(n, np.int64)
    for s in range(n):
        j = s if lower else n - 1 - s
        for p in range(indptr[j], indptr[j + 1]):
            i = indices[p]
            if i != j:
                ix[fill[i]], take[fill[i]] = j, p
                fill[i] += step
                level[i] = max(level[i], level[j] + 1)
    return ip, ix, take, diag, level


class _Triangle:
    """One triangle (L or U) of factors sharing a pattern, on the device: the pattern's
    strictly triangular part, its rows in level order, and each factor's values."""

    def __init__(self, xp, factors, lower):
        first = factors[0]  # SuperLU's factors are CSC matrices
        for a in factors[1:]:
            if not (np.array_equal(a.indptr, first.indptr) and np.array_equal(a.indices, first.indices)):
                raise ValueError("factors solved together must share one sparsity pattern")
        n = first.shape[0]
        ip, ix, take, diag, level = _by_rows(first.indptr, first.indices, lower)
        order = np.argsort(level, kind="stable").astype(np.int32)
        self.nlev = int(level.max()) + 1 if n else 0
        lptr = np.searchsorted(level[order], np.arange(self.nlev + 1)).astype(np.int32)
        self.nnz = int(ip[-1])
        self.lower = lower
        self.order, self.lptr, self.ip, self.ix = (xp.asarray(a) for a in (order, lptr, ip, ix))
        # the values put in row order on the device: each factor crosses as SuperLU made it
        # (a real one at half the bytes), and the host neither converts nor reorders them
        take = xp.asarray(take)
        self.vals = xp.empty((len(factors), self.nnz), np.complex128)
        for f, a in enumerate(factors):
            self.vals[f] = xp.asarray(a.data)[take]
        if lower:  # SuperLU's L has a unit diagonal
            self.dinv = xp.zeros(2, dtype=np.float64)
        else:
            if (diag < 0).any():
                raise ValueError("an upper factor without its whole diagonal")
            self.dinv = xp.asarray(np.stack([1.0 / a.data[diag].astype(np.complex128) for a in factors]))


class SharedPatternLU:
    """LU factorisations (SuperLU objects, Pr A Pc = L U) of one sparsity pattern and one
    ordering, solved together on the device: `solve(B)` takes B (F, n, r), factor f's
    right-hand sides in B[f], and returns the F solutions."""

    def __init__(self, xp, superlus):
        self.xp = xp
        first = superlus[0]
        for lu in superlus[1:]:
            if not (np.array_equal(lu.perm_r, first.perm_r) and np.array_equal(lu.perm_c, first.perm_c)):
                raise ValueError("factors solved together must share their permutations")
        self.n = first.shape[0]
        self.count = len(superlus)
        self.perm_r, self.perm_c = xp.asarray(first.perm_r), xp.asarray(first.perm_c)
        self.lower = _Triangle(xp, [lu.L for lu in superlus], lower=True)
        self.upper = _Triangle(xp, [lu.U for lu in superlus], lower=False)
        self._kernel = xp.RawKernel(_SOURCE, "triangular_levels")

    def _sweep(self, tri, X):
        r = X.shape[2]
        self._kernel((-(-r // 32), self.count), (THREADS,),
                     (tri.order, tri.lptr, np.int32(tri.nlev), tri.ip, tri.ix, tri.vals, tri.dinv,
                      np.int32(not tri.lower), np.int64(tri.nnz), np.int32(self.n), X, np.int32(r)))

    def solve(self, B, weights=None):
        """x_f = Pc U_f^-1 L_f^-1 Pr b_f for every factor f. B: (F, n, r), or a list of F
        blocks (n, r) (one object may stand for several), or one block (n, r) for all.
        Returns the solutions (F, n, r), or, with `weights` (F,) or (F, o), their weighted
        sums (n, r) or (o, n, r), without F permuted copies."""
        xp = self.xp
        blocks = [B] * self.count if not isinstance(B, (list, tuple)) and B.ndim == 2 else list(B)
        if len(blocks) != self.count or any(b.shape[0] != self.n for b in blocks):
            raise ValueError(f"right-hand sides {[tuple(b.shape) for b in blocks]}: need "
                             f"{self.count} blocks of {self.n} rows")
        r = blocks[0].reshape(self.n, -1).shape[1]
        X = xp.empty((self.count, self.n, r), dtype=np.complex128)
        for f, b in enumerate(blocks):
            X[f, self.perm_r] = b.reshape(self.n, -1)
        for tri in (self.lower, self.upper):
            self._sweep(tri, X)
        if weights is None:
            return X[:, self.perm_c]
        w = xp.asarray(np.asarray(weights, np.complex128))
        return xp.tensordot(w.T, X, axes=1)[..., self.perm_c, :]
