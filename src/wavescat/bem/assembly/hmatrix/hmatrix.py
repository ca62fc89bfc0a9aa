"""The H-matrix object: dense and low-rank block stacks on one or more devices, and its
product with a vector or a block of vectors (batched GEMM over each stack, the results added
into place by one sparse-dense product per stack on the CPU, by atomics on the GPU), so that r
right-hand sides read the stored blocks once, not r times.

The blocks may be stored in a lower precision than the matrix's `dtype` (complex64 blocks
of a complex128 operator: `solver.hmatrix.storage`); products are then formed in `dtype`,
each chunk of blocks cast up as it is multiplied, so every sum is a double one.

`HMatrix.matvec(x)` takes and returns NumPy arrays (n,) or (n, r) in the original dof
numbering (CuPy arrays stay on the device); the permutation, the transfers and the
per-device partial products stay inside.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from ....backend import scatter_add, to_host
from . import host_blocks
from .batched_aca import BlockGroup
from .block_products import BlockProducts

_CHUNK_BYTES = 256 << 20  # gathered vectors per batched product of one stack of blocks
# From this many columns on, a GPU product of complex blocks reads the vectors in place
# (block_products.py) instead of gathering them per block (bench/README.md).
WIDE_COLUMNS = 16
# Below that, a column at a time through its single-vector kernels (True), or gathered per
# block into batched GEMMs (False: kept for measurements, bench_sweep.py --products).
NARROW_IN_PLACE = True


def scatter_matrix(xp, idx, keep, n_rows, dtype):
    """Sparse S (n_rows, idx.size) with S[idx[p], p] = 1 where keep[p]: `S @ vals` adds the
    rows of vals (idx.size, r) into their places, one sparse-dense product for any width r
    (repeated indices accumulate, dropped ones are padding)."""
    idx, keep = to_host(idx).ravel(), to_host(keep).ravel()
    cols = np.flatnonzero(keep)
    host = sp.csr_matrix((np.ones(len(cols), dtype), (idx[cols], cols)), shape=(n_rows, len(idx)))
    if xp is np:
        return host
    import cupyx.scipy.sparse as csp  # noqa: PLC0415 - only reached on the GPU backend

    return csp.csr_matrix(host)


def stack_product(xp, M, xs):
    """M[b] @ xs[b] for a stack M (B, L, K) and vectors xs (B, K) or blocks of vectors
    xs (B, K, r), in the vectors' precision: blocks stored in a lower one are cast up (the
    caller passes a chunk of a stack, not the whole), so the sums are those of the vectors'
    precision. Real blocks times complex vectors multiply the real and imaginary parts
    together."""
    vector = xs.ndim == 2
    xs = xs[:, :, None] if vector else xs
    if M.dtype.kind != "c" and xs.dtype.kind == "c":
        r = xs.shape[2]
        M = M.astype(np.result_type(M.dtype, xs.real.dtype), copy=False)
        y = xp.matmul(M, xp.concatenate([xs.real, xs.imag], axis=2).astype(M.dtype))
        y = y[:, :, :r] + 1j * y[:, :, r:]
    else:
        M = M.astype(np.result_type(M.dtype, xs.dtype), copy=False)
        y = xp.matmul(M, xs.astype(M.dtype, copy=False))
    return y[:, :, 0] if vector else y


def transposed(g: BlockGroup, xp) -> BlockGroup:
    """Group g of A as a group of A^T: rows and columns swapped."""
    if g.D is not None:
        return BlockGroup(g.c0, g.r0, g.n, g.m, D=xp.ascontiguousarray(xp.swapaxes(g.D, 1, 2)))
    return BlockGroup(g.c0, g.r0, g.n, g.m, U=g.V, V=g.U, rank=g.rank, on_host=g.on_host)


def _factors(xp, g, sel):
    """(U, V) of blocks [sel] of low-rank group g on the device: views, or copies brought
    from pinned host memory (host_blocks.py)."""
    if g.on_host:
        return xp.asarray(g.U[sel]), xp.asarray(g.V[sel])
    return g.U[sel], g.V[sel]


class DevicePart:
    """The blocks one device holds and computes."""

    def __init__(self, backend, device_id, dense, lowrank, shape):
        self.backend, self.device_id = backend, device_id
        self.dense = [g for g in dense if g is not None]
        self.lowrank = lowrank
        self.shape = shape
        host_blocks.register(self)  # its blocks may make room for a later assembly

    def _ctx(self):
        return self.backend.device(self.device_id)

    def transposed(self) -> "DevicePart":
        """This part's blocks of the transpose, made on its own device: a dense stack copied
        while another device is current would land there, and this device's kernels could
        not read it (no peer access that way round)."""
        with self._ctx():
            xp = self.backend.xp
            return DevicePart(self.backend, self.device_id, [transposed(g, xp) for g in self.dense],
                              [transposed(g, xp) for g in self.lowrank], self.shape[::-1])

    def matvec_permuted(self, x_perm, dtype):
        """Partial product (this device's blocks) in the permuted numbering, on the host."""
        with self._ctx():
            return self.backend.asnumpy(self.apply(self.backend.xp.asarray(x_perm), dtype))

    def apply(self, x, dtype):
        """Partial product of a backend vector (n,) or block of vectors (n, r) (permuted
        numbering), on the backend, every sum in `dtype`. Every block of a stack multiplies
        all r vectors at once (batched GEMM instead of r GEMVs), in chunks of blocks that
        bound the gathered copies of the vectors, and the copies of blocks stored in a lower
        precision cast up to `dtype`, to `_CHUNK_BYTES`."""
        xp = self.backend.xp
        with self._ctx():
            if getattr(getattr(x, "device", None), "id", self.device_id) != self.device_id:
                # another GPU's vector: this one's raw kernels can read only their own memory
                x = xp.array(x, copy=True)
            x = xp.asarray(x).astype(dtype, copy=False)
            X = x[:, None] if x.ndim == 1 else x
            r = X.shape[1]
            blocks = self._complex_blocks_dtype() if self.backend.is_gpu else None
            if blocks is not None and (r >= WIDE_COLUMNS or NARROW_IN_PLACE):
                if r >= WIDE_COLUMNS:
                    Y = self._apply_in_place(X, dtype, blocks)
                else:  # a column at a time, each block by one thread block (block_products)
                    Y = xp.stack([self._apply_in_place(xp.ascontiguousarray(X[:, c]), dtype, blocks)
                                  for c in range(r)], axis=1)
                return Y[:, 0] if x.ndim == 1 else Y
            n_rows = self.shape[0]
            y = xp.zeros((n_rows + 1, r), dtype=dtype)  # row n_rows: the padding's sink
            item = np.dtype(dtype).itemsize
            for g in self.dense + self.lowrank:
                low = g.D is None
                Lr, Lc = (g.U.shape[1], g.V.shape[1]) if low else g.D.shape[1:]
                per_block = r * (Lr + Lc)
                if (g.U if low else g.D).dtype.itemsize < item:  # cast up a chunk at a time
                    per_block += (Lr + Lc) * g.U.shape[2] if low else Lr * Lc
                if g.on_host:  # and the chunk's factors brought over (host_blocks.py)
                    per_block += (Lr + Lc) * g.U.shape[2]
                # a power of two: few distinct chunkings, so few cached scatter matrices
                chunk = 1 << max(0, int(_CHUNK_BYTES // (item * per_block)).bit_length() - 1)
                for start in range(0, len(g.r0), chunk):
                    sel = slice(start, start + chunk)
                    n, m = g.n[sel, None], g.m[sel, None]
                    ac = xp.arange(Lc)[None, :]
                    xs = X[g.c0[sel, None] + xp.minimum(ac, n - 1)]  # (b, Lc, r)
                    if low:  # padded columns of V may hold anything: zero those of x
                        xs = xp.where((ac < n)[:, :, None], xs, 0)
                        U, V = _factors(xp, g, sel)
                        ys = stack_product(xp, U, stack_product(xp, xp.swapaxes(V, 1, 2), xs))
                    else:  # padded rows and columns of D are zero
                        ys = stack_product(xp, g.D[sel], xs)
                    ys = ys.reshape(-1, r).astype(dtype, copy=False)
                    if self.backend.is_gpu:
                        # each row's place found anew and added by atomics: the GPU's
                        # cached scatter matrices took as much memory as a third of the
                        # blocks they scatter (issue 28)
                        scatter_add(y, self._rows(g, sel, Lr), ys)
                    else:
                        y[:n_rows] += self._scatter(g, sel, Lr, dtype) @ ys
            y = y[:n_rows]
            return y[:, 0] if x.ndim == 1 else y

    def _complex_blocks_dtype(self):
        """The one complex dtype of all stored blocks, or None (what block_products takes)."""
        kinds = {(g.D if g.D is not None else g.U).dtype for g in self.dense + self.lowrank}
        return kinds.pop() if len(kinds) == 1 and next(iter(kinds)).kind == "c" else None

    def _apply_in_place(self, X, dtype, store):
        """The product of every stack (stored in `store`) with X (n, r) or (n,) by
        block_products, its sums in `dtype`."""
        xp = self.backend.xp
        X = xp.ascontiguousarray(X.astype(dtype, copy=False))
        Y = xp.zeros((self.shape[0],) + X.shape[1:], dtype=dtype)
        products = BlockProducts(xp, dtype, store)
        places = self.__dict__.setdefault("_places", {})
        for g in self.dense + self.lowrank:
            if id(g) not in places:  # int32 copies of the group's block places, kept
                places[id(g)] = tuple(xp.ascontiguousarray(xp.asarray(a).astype(xp.int32))
                                      for a in (g.r0, g.c0, g.m, g.n))
            if not g.on_host:
                products.add(g, places[id(g)], X, Y)
                continue
            step = max(1, _CHUNK_BYTES // max(1, g.U[:1].nbytes + g.V[:1].nbytes))
            for start in range(0, len(g.r0), step):  # the factors brought over a chunk at a time
                sel = slice(start, start + step)
                U, V = _factors(xp, g, sel)
                products.add(BlockGroup(None, None, None, None, U=U, V=V),
                             tuple(a[sel] for a in places[id(g)]), X, Y)
        return Y

    def _rows(self, g, sel, L):
        """The row of each of the (b, L) product rows of blocks [sel] of group g, flat; the
        padding's rows go to row n (a sink past the matrix's rows)."""
        xp = self.backend.xp
        ar = xp.arange(L)[None, :]
        return xp.where(ar < g.m[sel, None], g.r0[sel, None] + ar, self.shape[0]).ravel()

    def _scatter(self, g, sel, L, dtype):
        """The scatter matrix of rows [sel] of group g (kept: it is the group's row map; the
        CPU's way, where a sparse product beats np.add.at)."""
        cache = self.__dict__.setdefault("_scatter_cache", {})
        key = (id(g), sel.start, sel.stop, np.dtype(dtype).str)
        if key not in cache:
            xp = self.backend.xp
            ar = xp.arange(L)[None, :]
            m = g.m[sel, None]
            rows = g.r0[sel, None] + xp.minimum(ar, m - 1)
            cache[key] = scatter_matrix(xp, rows, ar < m, self.shape[0], dtype)
        return cache[key]

    @property
    def nbytes(self) -> int:
        """Bytes of the stored arrays, each once (transposed groups share their factors)."""
        return self._bytes(lambda g: True)

    @property
    def host_nbytes(self) -> int:
        """Bytes of those moved to pinned host memory (host_blocks.py)."""
        return self._bytes(lambda g: g.on_host)

    def _bytes(self, which) -> int:
        arrays = {id(a): a for g in self.dense + self.lowrank if which(g)
                  for a in (g.D, g.U, g.V) if a is not None}
        return sum(int(a.nbytes) for a in arrays.values())


class HMatrix:
    """H-matrix approximation of a Galerkin matrix (rows: test dofs, columns: trial dofs).

    `.matvec(x)` (NumPy in/out), `.shape`, `.dtype` (the entries' and the products'
    precision), `.storage_dtype` (the stored blocks'), `.aslinearoperator()`, `.report`
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

    @property
    def storage_dtype(self) -> np.dtype:
        """The dtype the blocks are stored in (`dtype` or a lower precision of it)."""
        kinds = {np.dtype((g.D if g.D is not None else g.U).dtype) for g in self.groups()}
        return min(kinds, key=lambda dt: dt.itemsize) if kinds else self.dtype

    def matvec(self, x):
        """H x for x of shape (n,) or (n, r): NumPy in, NumPy out; a CuPy array stays on
        the device (the GMRES of the solve keeps its Krylov basis there)."""
        if hasattr(x, "get") and not isinstance(x, np.ndarray):
            return self._matvec_device(x)
        x = np.asarray(x)
        X = x.reshape(self.shape[1], -1)
        dtype = np.result_type(self.dtype, X.dtype)
        out = np.empty((self.shape[0], X.shape[1]), dtype=dtype)
        xp_ = np.ascontiguousarray(X[self.col_perm])
        out[self.row_perm] = sum(p.matvec_permuted(xp_, dtype) for p in self.parts)
        return out[:, 0] if x.ndim == 1 else out

    __matmul__ = matvec

    def _matvec_device(self, x):
        be = self.parts[0].backend
        xp = be.xp
        X = x.reshape(self.shape[1], -1)
        dtype = np.result_type(self.dtype, X.dtype)
        if not hasattr(self, "_perm_dev"):
            self._perm_dev = (xp.asarray(self.row_perm), xp.asarray(self.col_perm))
        rp, cp = self._perm_dev
        xc = X[cp]
        y = self.parts[0].apply(xc, dtype)
        for p in self.parts[1:]:  # other GPUs: their partial products come back here
            y = y + xp.asarray(p.apply(xc, dtype))
        out = xp.empty((self.shape[0], X.shape[1]), dtype=dtype)
        out[rp] = y
        return out[:, 0] if x.ndim == 1 else out

    @property
    def T(self) -> "HMatrix":
        """The transpose, e.g. K' = K^T for one space as trial and test: each low-rank block
        U V^T becomes V U^T (the factors are shared, not copied) and each dense block is
        transposed into a contiguous stack (batched products need one); far cheaper than
        assembling K' (its report is K's; `block_tree` None)."""
        parts = [p.transposed() for p in self.parts]
        return HMatrix(parts, self.col_perm, self.row_perm, self.dtype, None,
                       {**self.report, "transpose_of": self.report.get("operator")})

    def aslinearoperator(self) -> spla.LinearOperator:
        return spla.LinearOperator(self.shape, matvec=self.matvec, dtype=self.dtype)

    def groups(self):
        for p in self.parts:
            yield from p.dense
            yield from p.lowrank

    def to_dense(self) -> np.ndarray:
        """The approximated matrix in full, on the host in `dtype` (tests on small sizes)."""
        return self.dense_part()

    def dense_part(self, rows=None, cols=None, dtype=None) -> np.ndarray:
        """H[rows][:, cols] (original numbering, in the given order; None: all) as a new
        host array in `dtype` (default: the matrix's), block by block: each block's
        selected entries (a low-rank block's from its U V^T, formed in the higher of `dtype`
        and the stored precision) copied to their places. Costs the blocks' entries times
        their ranks, where products with unit vectors would cost the stored entries times
        the columns."""
        dtype = np.dtype(self.dtype if dtype is None else dtype)
        out_rows, n_rows = _output_places(self.row_perm, rows)
        out_cols, n_cols = _output_places(self.col_perm, cols)
        out = np.zeros((n_rows, n_cols), dtype)
        for g in self.groups():
            _copy_selected(g, out_rows, out_cols, out)
        return out


def _output_places(perm, picked):
    """(the output index of each permuted place, -1 where not picked; how many are picked)
    for the original indices `picked` (None: all) of a numbering permuted by `perm`."""
    picked = np.arange(len(perm)) if picked is None else np.asarray(picked)
    where = np.full(len(perm), -1, np.int64)
    where[picked] = np.arange(len(picked))
    return where[perm], len(picked)


def _copy_selected(g: BlockGroup, out_rows, out_cols, out):
    """Copy the entries of group g's blocks (brought to the host) at selected places
    (out_rows / out_cols: the output index of each permuted row / column, -1 where not
    selected) into `out`, a chunk of blocks at a time."""
    r0, c0, m, n = (to_host(a) for a in (g.r0, g.c0, g.m, g.n))
    low = g.D is None
    U, V, D = ((to_host(g.U), to_host(g.V), None) if low else (None, None, to_host(g.D)))
    Lr, Lc = (U.shape[1], V.shape[1]) if low else D.shape[1:]
    work = np.result_type(out.dtype, (U if low else D).dtype)
    step = max(1, _CHUNK_BYTES // (Lr * Lc * work.itemsize))
    ar, ac = np.arange(Lr)[None, :], np.arange(Lc)[None, :]
    for start in range(0, len(r0), step):
        sel = slice(start, start + step)
        r = np.where(ar < m[sel, None], out_rows[np.minimum(r0[sel, None] + ar,
                                                            len(out_rows) - 1)], -1)
        c = np.where(ac < n[sel, None], out_cols[np.minimum(c0[sel, None] + ac,
                                                            len(out_cols) - 1)], -1)
        b, i, j = np.nonzero((r >= 0)[:, :, None] & (c >= 0)[:, None, :])
        if len(b) == 0:
            continue
        if low:  # the chunk's U V^T (the chunk size bounds it), then its selected entries
            values = np.matmul(U[sel].astype(work), np.swapaxes(V[sel], 1, 2).astype(work))
        else:
            values = D[sel]
        out[r[b, i], c[b, j]] = values[b, i, j]


__all__ = ["HMatrix", "DevicePart", "BlockGroup", "scatter_matrix"]
