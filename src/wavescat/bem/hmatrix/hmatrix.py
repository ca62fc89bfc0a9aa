"""The H-matrix object: dense and low-rank block stacks on one or more devices, and its
matrix-vector product (batched GEMV over each stack, atomic scatter-add of the results).

`HMatrix.matvec(x)` takes and returns NumPy vectors in the original dof numbering; the
permutation, the transfers and the per-device partial products stay inside.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse.linalg as spla

from ...backend import to_host
from .batched_aca import BlockGroup


def scatter_add(xp, y, idx, vals):
    """y[idx] += vals with repeated indices accumulated (y 1-D, real or complex)."""
    idx = idx.ravel()
    vals = vals.ravel()
    if xp is np:
        if np.iscomplexobj(y):
            y += np.bincount(idx, vals.real, len(y)) + 1j * np.bincount(idx, vals.imag, len(y))
        else:
            y += np.bincount(idx, vals, len(y))
        return
    import cupyx  # noqa: PLC0415 - only reached on the GPU backend

    if y.dtype.kind == "c":  # atomic adds on the real and imaginary parts
        part = xp.zeros(len(y), dtype=y.real.dtype)
        cupyx.scatter_add(part, idx, xp.ascontiguousarray(vals.real))
        y += part
        part[:] = 0
        cupyx.scatter_add(part, idx, xp.ascontiguousarray(vals.imag))
        y += 1j * part
    else:
        cupyx.scatter_add(y, idx, vals)


def stack_product(xp, M, xs):
    """M[b] @ xs[b] for a stack M (B, L, K) and vectors xs (B, K), in M's precision: the
    vectors are cast to the stored blocks, never the blocks (tens of GB) to the vectors.
    Real blocks times complex vectors multiply the real and imaginary parts together."""
    if M.dtype.kind != "c" and xs.dtype.kind == "c":
        r = xp.matmul(M, xp.stack([xs.real, xs.imag], axis=2).astype(M.dtype))
        return r[:, :, 0] + 1j * r[:, :, 1]
    return xp.matmul(M, xs.astype(M.dtype, copy=False)[:, :, None])[:, :, 0]


class DevicePart:
    """The blocks one device holds and computes."""

    def __init__(self, backend, device_id, dense, lowrank, shape):
        self.backend, self.device_id = backend, device_id
        self.dense = [g for g in dense if g is not None]
        self.lowrank = lowrank
        self.shape = shape

    def _ctx(self):
        return self.backend.device(self.device_id)

    def matvec_permuted(self, x_perm, dtype):
        """Partial product (this device's blocks) in the permuted numbering, on the host."""
        with self._ctx():
            return self.backend.asnumpy(self.apply(self.backend.xp.asarray(x_perm), dtype))

    def apply(self, x, dtype):
        """Partial product of a backend vector (permuted numbering), a backend vector."""
        xp = self.backend.xp
        with self._ctx():
            x = xp.asarray(x).astype(dtype, copy=False)
            y = xp.zeros(self.shape[0], dtype=dtype)
            for g in self.dense:
                Lr, Lc = g.D.shape[1:]
                cols = g.c0[:, None] + xp.minimum(xp.arange(Lc)[None, :], g.n[:, None] - 1)
                ys = stack_product(xp, g.D, x[cols])
                rows = g.r0[:, None] + xp.minimum(xp.arange(Lr)[None, :], g.m[:, None] - 1)
                scatter_add(xp, y, rows, ys)  # padded rows of D are zero
            for g in self.lowrank:
                L = g.U.shape[1]
                ar = xp.arange(L)[None, :]
                cols = g.c0[:, None] + xp.minimum(ar, g.n[:, None] - 1)
                xs = xp.where(ar < g.n[:, None], x[cols], 0)
                ys = stack_product(xp, g.U, stack_product(xp, xp.swapaxes(g.V, 1, 2), xs))
                rows = g.r0[:, None] + xp.minimum(ar, g.m[:, None] - 1)
                scatter_add(xp, y, rows, xp.where(ar < g.m[:, None], ys, 0))
            return y

    @property
    def nbytes(self) -> int:
        return sum(g.nbytes for g in self.dense + self.lowrank)


class HMatrix:
    """H-matrix approximation of a Galerkin matrix (rows: test dofs, columns: trial dofs).

    `.matvec(x)` (NumPy in/out), `.shape`, `.dtype`, `.aslinearoperator()`, `.report`
    (dict: compression, memory, rank histogram, time split, evaluation rates)."""

    def __init__(self, parts, row_perm, col_perm, dtype, block_tree, report):
        self.parts = parts
        self.row_perm, self.col_perm = row_perm, col_perm
        self.dtype = np.dtype(dtype)
        self.block_tree = block_tree
        self.report = report

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.row_perm), len(self.col_perm)

    def matvec(self, x):
        """H x for x of shape (n,) or (n, r): NumPy in, NumPy out; a CuPy array stays on
        the device (the GMRES of the solve keeps its Krylov basis there)."""
        if hasattr(x, "get") and not isinstance(x, np.ndarray):
            return self._matvec_device(x)
        x = np.asarray(x)
        squeeze = x.ndim == 1
        X = x.reshape(self.shape[1], -1)
        dtype = np.result_type(self.dtype, X.dtype)
        out = np.zeros((self.shape[0], X.shape[1]), dtype=dtype)
        for c in range(X.shape[1]):
            xp_ = X[self.col_perm, c]
            y = sum(p.matvec_permuted(xp_, dtype) for p in self.parts)
            out[self.row_perm, c] = y
        return out[:, 0] if squeeze else out

    __matmul__ = matvec

    def _matvec_device(self, x):
        be = self.parts[0].backend
        xp = be.xp
        X = x.reshape(self.shape[1], -1)
        dtype = np.result_type(self.dtype, X.dtype)
        if not hasattr(self, "_perm_dev"):
            self._perm_dev = (xp.asarray(self.row_perm), xp.asarray(self.col_perm))
        rp, cp = self._perm_dev
        out = xp.zeros((self.shape[0], X.shape[1]), dtype=dtype)
        for c in range(X.shape[1]):
            xc = X[cp, c]
            y = self.parts[0].apply(xc, dtype)
            for p in self.parts[1:]:  # other GPUs: their partial products come back here
                y = y + xp.asarray(p.apply(xc, dtype))
            out[rp, c] = y
        return out[:, 0] if x.ndim == 1 else out

    def aslinearoperator(self) -> spla.LinearOperator:
        return spla.LinearOperator(self.shape, matvec=self.matvec, dtype=self.dtype)

    def groups(self):
        for p in self.parts:
            yield from p.dense
            yield from p.lowrank

    def to_dense(self) -> np.ndarray:
        """The approximated matrix in full (tests on small sizes)."""
        A = np.zeros(self.shape, dtype=self.dtype)
        for g in self.groups():
            r0, c0, m, n = (to_host(a) for a in (g.r0, g.c0, g.m, g.n))
            if g.D is not None:
                blocks = to_host(g.D)
            else:
                blocks = np.matmul(to_host(g.U), np.swapaxes(to_host(g.V), 1, 2))
            for b in range(len(r0)):
                A[r0[b]:r0[b] + m[b], c0[b]:c0[b] + n[b]] += blocks[b, :m[b], :n[b]]
        return A[np.ix_(np.argsort(self.row_perm), np.argsort(self.col_perm))]


__all__ = ["HMatrix", "DevicePart", "BlockGroup", "scatter_add"]
