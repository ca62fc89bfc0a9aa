"""The sparse LU of wavescat's surface FEM matrices (the OSRC maps' resolvents M - b S and the
mass matrix M): SuperLU on the matrix reordered by nested dissection (METIS) of its graph.

SuperLU's own minimum-degree ordering (MMD on A^T + A) grew about 16 times per doubling of
the frequency on the submarine (issue 42): its elimination of a surface mesh costs about
N^2. Nested dissection of a 2-manifold's graph splits it by separators of about sqrt(N)
vertices, so the factors hold O(N log N) entries and cost O(N^1.5) flops, 8 times per doubling
(bench/bench_osrc_factorisation.py). SuperLU takes no ordering of ours, so it factorises
B = A[p][:, p] in its NATURAL order (diagonal pivots, SymmetricMode, as before), and
`OrderedLU` answers for A: its solve permutes, and its perm_r and perm_c are the composite
permutations, Pr A Pc = L U, which triangular.py's device copies read.

The ordering is a function of the pattern alone, and is made once per pattern
(`nested_dissection`, cached): the ten factorisations of an OSRC map and its mass matrix share
one pattern, one ordering and so one pattern of L and U (triangular.SharedPatternLU solves
them in one launch).
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict

import numpy as np
import pymetis
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ...errors import InputError


def _graph(matrix) -> sp.csr_matrix:
    """The adjacency of A^T + A without its diagonal (METIS's graph: symmetric, no loops)."""
    a = sp.csr_matrix(matrix, copy=True)
    a.data = np.ones_like(a.data, dtype=np.int8)
    g = (a + a.T).tocsr()
    g.setdiag(0)
    g.eliminate_zeros()
    return g


def metis_order(matrix) -> np.ndarray:
    """METIS's nested-dissection ordering p of A's graph: A[p][:, p] is A reordered. It holds
    the GIL while it runs (seconds at a million unknowns): large patterns are ordered in a
    worker process (osrc.factorise)."""
    n = matrix.shape[0]
    if n < 3:  # nothing to order (METIS wants a graph with edges)
        return np.arange(n)
    g = _graph(matrix)
    perm, _ = pymetis.nested_dissection(pymetis.CSRAdjacency(g.indptr, g.indices))
    return np.asarray(perm, dtype=np.int64)


_ORDERS: OrderedDict = OrderedDict()  # pattern key -> ordering, the last few patterns
_ORDERS_KEPT = 4
_ORDERS_LOCK = threading.Lock()


def _pattern_key(matrix: sp.csc_matrix) -> tuple:
    digest = hashlib.blake2b(digest_size=16)
    digest.update(np.ascontiguousarray(matrix.indptr, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(matrix.indices, dtype=np.int64).tobytes())
    return matrix.shape, digest.hexdigest()


def pattern(matrix) -> sp.csc_matrix:
    """A's sparsity pattern alone (int8 ones), what an ordering needs: a small copy to send."""
    csc = sp.csc_matrix(matrix)
    return sp.csc_matrix((np.ones(csc.nnz, np.int8), csc.indices, csc.indptr), shape=csc.shape)


def nested_dissection(matrix, compute=None) -> np.ndarray:
    """A fill-reducing ordering p of a square sparse matrix (A[p][:, p]), by nested dissection
    of the graph of A^T + A (`compute(pattern)`, default `metis_order` here); made once for each
    pattern, so the matrices of one mesh share it."""
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise InputError(f"a sparse LU needs a square matrix, got shape {matrix.shape}")
    csc = sp.csc_matrix(matrix)
    if not csc.has_sorted_indices:  # a sorted copy: the caller's arrays stay as they are
        csc = csc.sorted_indices()
    key = _pattern_key(csc)
    with _ORDERS_LOCK:  # one ordering per pattern, however many threads ask at once
        if key not in _ORDERS:
            order = (compute or metis_order)(pattern(csc))
            _ORDERS[key] = check_permutation(order, csc.shape[0])
            if len(_ORDERS) > _ORDERS_KEPT:
                _ORDERS.popitem(last=False)
        _ORDERS.move_to_end(key)
        return _ORDERS[key]


def check_permutation(order, n: int) -> np.ndarray:
    """`order` as an index array, if it is a permutation of range(n); else InputError."""
    order = np.asarray(order)
    if order.shape != (n,) or not np.issubdtype(order.dtype, np.integer) or \
            not np.array_equal(np.sort(order), np.arange(n)):
        raise InputError(f"an ordering of {n} unknowns must be a permutation of 0..{n - 1}")
    return order.astype(np.int64, copy=False)


class OrderedLU:
    """SuperLU's factors of B = A[p][:, p] (natural order, diagonal pivots), answering for A:
    `solve(b)` as SuperLU's, and shape, nnz, L, U and the composite perm_r, perm_c with
    Pr A Pc = L U (SciPy's convention, as triangular.py reads them)."""

    def __init__(self, matrix, order):
        matrix = sp.csc_matrix(matrix)
        self.shape = matrix.shape
        self.order = check_permutation(order, matrix.shape[0])
        self._inverse = np.argsort(self.order)
        reordered = matrix[self.order][:, self.order].tocsc()
        self._lu = spla.splu(reordered, permc_spec="NATURAL", diag_pivot_thresh=0.0,
                             options={"SymmetricMode": True})

    # B = Q A Q^T with (Q v)[k] = v[p[k]]: Pr_B Q A Q^T Pc_B = L U, so A's Pr = Pr_B Q and
    # Pc = Q^T Pc_B; as SciPy's index arrays, perm_B composed with the inverse of p
    @property
    def perm_r(self) -> np.ndarray:
        return self._lu.perm_r[self._inverse]

    @property
    def perm_c(self) -> np.ndarray:
        return self._lu.perm_c[self._inverse]

    @property
    def L(self):
        return self._lu.L

    @property
    def U(self):
        return self._lu.U

    @property
    def nnz(self) -> int:
        return int(self._lu.nnz)

    def solve(self, b):
        b = np.asarray(b)
        if b.shape[0] != self.shape[0]:
            raise ValueError(f"right-hand side of {b.shape[0]} rows for a matrix of {self.shape[0]}")
        y = self._lu.solve(np.ascontiguousarray(b[self.order]))
        x = np.empty_like(y)
        x[self.order] = y
        return x
