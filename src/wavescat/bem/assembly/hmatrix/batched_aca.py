"""Compression of all admissible blocks and assembly of all dense blocks of one device.

Admissible blocks of one tree level have (nearly) the same shape, so they are compressed
together by `aca_plus_batched` in chunks sized to a working-memory budget; the factors
are then regrouped by rank (a few rank buckets per level) so the H-matvec multiplies
padded (B, L, K) stacks with little waste. Dense blocks are evaluated as flat pair lists
in chunks and receive the singular correction of the touching element pairs.

Both are computed in the kernel's precision and may be stored in a lower one (`store`):
each chunk's factors, once recompressed, and each share of dense blocks, once corrected,
are rounded once into the stored stacks.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ....backend import array_module, scatter_add, to_host
from ....errors import WavescatError
from ....progress import progress
from .aca import aca_plus_batched, recompress
from .point_aca import point_aca
from .host_blocks import copy_to_host, pinned_empty



@dataclass
class BlockGroup:
    """Blocks of one shape class: dense D (B, Lr, Lc) or low rank U (B, L, K), V (B, L, K)."""

    r0: object
    c0: object
    m: object
    n: object
    D: object = None
    U: object = None
    V: object = None
    rank: object = None  # host int array (low rank)
    on_host: bool = False  # U and V in pinned host memory (host_blocks.py), read per product

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.D, self.U, self.V) if a is not None)

    def stored_entries(self) -> int:
        """Entries a tight (unpadded) storage would hold."""
        m, n = to_host(self.m), to_host(self.n)
        if self.D is not None:
            return int(np.sum(m * n))
        return int(np.sum(self.rank * (m + n)))


def sync(xp):
    if hasattr(xp, "cuda"):
        xp.cuda.runtime.deviceSynchronize()


def release_cached(xp):
    """Give the device memory CuPy's pool caches back (big transients of one stage would
    otherwise stay cached in sizes the next stage cannot use)."""
    free = getattr(getattr(xp, "get_default_memory_pool", lambda: None)(), "free_all_blocks", None)
    if free is not None:
        free()


def rank_bucket(rank: np.ndarray) -> np.ndarray:
    """Padded rank of each block: the rank itself up to 16, then eight buckets an octave
    (17-32 by 2, 33-64 by 4, ...): at most 1/8 of a block's factors are padding (about 1/16
    on average; four buckets an octave left a tenth of the 4 kHz submarine's factors as
    padding, issue 28), for twice as many groups to multiply."""
    rank = np.asarray(rank, dtype=np.int64)
    octave = np.floor(np.log2(np.maximum(rank - 1, 1))).astype(np.int64) + 1  # bits of rank - 1
    step = np.left_shift(1, np.maximum(octave - 4, 0))
    return -(-rank // step) * step


def compress_far(kernel, far: dict, eps: float, xp, *, recompression=True,
                 budget_bytes=2 << 30, zero_tol=0.0, stats=None, store=None, room=None):
    """Low-rank groups for the admissible blocks `far` (dict of host arrays), their
    factors stored in `store` (default the kernel's dtype). `room(nbytes)`, if given, is
    called before each allocating step with what it takes (host_blocks.Room: it may move
    finished pieces, `room.hold`, to the host; a group with a piece there ends there)."""
    room = room or (lambda nbytes: True)
    hold = getattr(room, "hold", lambda piece: None)
    stats = stats if stats is not None else {}
    dtype = kernel.dtype
    store = np.dtype(store or dtype)
    item = np.dtype(dtype).itemsize
    groups = {}
    steps = 0
    bar = progress(len(far["r0"]), f"ACA {kernel.name}", "blocks")
    for level in np.unique(far["level"]):
        sel = np.nonzero(far["level"] == level)[0]
        if kernel.elements is not None:
            # a block beside its mirror: blocks summed whole take a pair's kernel values once
            lo = np.minimum(far["r0"][sel], far["c0"][sel])
            hi = np.maximum(far["r0"][sel], far["c0"][sel])
            sel = sel[np.lexsort((far["r0"][sel], hi, lo))]
        L = int(max(far["m"][sel].max(), far["n"][sel].max()))
        # working set per block: U, V with room for the expected rank (it grows with
        # (k diam)^2 for Helmholtz) plus a dozen (B, L) vectors; after the level's first
        # chunk, the ranks it reached size the next chunks (the a-priori guess is a bound
        # and would keep big blocks one to a chunk)
        kd = kernel.k * float(far["diam"][sel].max())
        k_est = min(L, 64 + int(0.5 * kd * kd))
        route = _Route(kernel, far, sel)
        c = 0
        # per level: its blocks, chunks, ACA steps and seconds (a level of few blocks costs
        # about its steps times the launches of one step, however few: bench_ranks.py)
        figures = {"level": int(level), "L": L, "blocks": len(sel), "chunks": 0, "steps": 0,
                   "seconds": time.perf_counter()}
        while c < len(sel):
            per_block = item * L * (2 * k_est + 12)
            if route.whole:
                per_block += item * route.area
            chunk = min(route.probe(), max(1, int(budget_bytes // per_block)))
            ids = sel[c:c + chunk]
            # a block alone over the budget (the a-priori rank of the top levels, up to L at
            # high k diam) asks for the budget only: its factors start at 16 columns and grow
            # with the ranks reached (about 140 there at 4 kHz on the submarine), and asking
            # for the guess moved every block assembled before to the host (2 ranks, 4 kHz)
            room(min(per_block * len(ids), budget_bytes))
            c += len(ids)
            r0, m, c0, n = (xp.asarray(far[key][ids]) for key in ("r0", "m", "c0", "n"))
            t0 = time.perf_counter()
            ev0 = kernel.evaluations
            if route.whole:
                res = _aca_of_whole_blocks(kernel, far, ids, eps, dtype, zero_tol, L)
                stats["aca_whole_blocks"] = stats.get("aca_whole_blocks", 0) + len(ids)
            elif kernel.elements is not None:  # the CPU: ACA of the point kernel matrix
                res = point_aca(kernel, *(far[key][ids] for key in ("r0", "m", "c0", "n")), eps,
                                dtype, zero_tol, L, k_est)
            else:
                res = aca_plus_batched(kernel, r0, m, c0, n, eps, xp, dtype, zero_tol=zero_tol,
                                       length=L)  # one L per level: chunks concatenate
            route.measured(ids, kernel.evaluations - ev0)
            steps += res.steps
            figures["chunks"] += 1
            figures["steps"] += res.steps
            stats["aca_host_syncs"] = stats.get("aca_host_syncs", 0) + res.host_syncs
            U, V, rank = res.U, res.V, res.rank
            sync(xp)
            t1 = time.perf_counter()
            if recompression:
                U, V, rank = recompress(xp, U, V, rank, eps)
            U, V = U.astype(store, copy=False), V.astype(store, copy=False)
            rank_h = to_host(rank)
            k_est = min(L, max(16, int(1.5 * to_host(res.rank).max(initial=0)) + 8))
            t2 = time.perf_counter()
            stats["aca_cross_s"] = stats.get("aca_cross_s", 0.0) + t1 - t0
            stats["recompression_s"] = stats.get("recompression_s", 0.0) + t2 - t1
            bucket = rank_bucket(rank_h)
            # every chunk of a level stores a bucket with exactly kb columns, so the chunks'
            # groups concatenate (a chunk's factors may be narrower than its largest bucket)
            pad = int(bucket.max(initial=0)) - U.shape[2]
            if pad > 0:
                U, V = (xp.concatenate([X, xp.zeros(X.shape[:2] + (pad,), X.dtype)], axis=2)
                        for X in (U, V))
            for kb in np.unique(bucket):
                if kb == 0:
                    continue
                pick = np.nonzero(bucket == kb)[0]
                pd = xp.asarray(pick)
                piece = BlockGroup(r0[pd], c0[pd], m[pd], n[pd], U=U[pd, :, :kb],
                                   V=V[pd, :, :kb], rank=rank_h[pick])
                groups.setdefault((int(level), int(kb)), []).append(piece)
                hold(piece)
            del U, V, res
            bar.update(len(ids))
        figures["seconds"] = time.perf_counter() - figures["seconds"]
        stats.setdefault("aca_levels", []).append(figures)
    bar.close()
    out = []
    for key in sorted(groups):
        pieces = groups.pop(key)
        out.append(_joined(pieces, xp, room))
        del pieces
    getattr(room, "release", lambda: None)()
    stats["aca_steps"] = stats.get("aca_steps", 0) + steps
    return out


def _joined(pieces, xp, room) -> BlockGroup:
    """One group of a level's and bucket's pieces, one array at a time, each piece's array
    dropped once copied: the factors are most of the device's memory, and two copies of a
    level's would not fit. Where a piece was moved to the host the factors are joined there
    (host_blocks.py)."""
    getattr(room, "release", lambda groups: None)(pieces)  # joined here, not moved apart
    if len(pieces) == 1:
        return pieces[0]
    widest = max(sum(int(getattr(p, name).nbytes) for p in pieces) for name in ("U", "V"))
    on_host = any(p.on_host for p in pieces) or room(widest) is False
    cat = {}
    for name in ("r0", "c0", "m", "n", "U", "V"):
        arrays = [getattr(p, name) for p in pieces]
        if on_host and name in ("U", "V"):
            shape = (sum(a.shape[0] for a in arrays),) + arrays[0].shape[1:]
            cat[name] = pinned_empty(xp, shape, arrays[0].dtype)
            start = 0
            for p, a in zip(pieces, arrays):
                if isinstance(a, np.ndarray) and p.on_host:
                    cat[name][start:start + len(a)] = a
                else:
                    copy_to_host(xp, a, cat[name][start:start + len(a)])
                start += len(a)
        else:
            room(sum(int(a.nbytes) for a in arrays))
            cat[name] = xp.concatenate(arrays)
        for p in pieces:
            setattr(p, name, None)
        del arrays
    return BlockGroup(**cat, rank=np.concatenate([p.rank for p in pieces]), on_host=on_host)


class _Route:
    """How the CPU gets a level's blocks for ACA: by their point kernel matrices
    (point_aca.py: a row is one kernel value per point of the other side) or whole (every
    entry of the block by element pairs, each pair's kernel values shared by all the entries
    it feeds, then ACA on the stored block). The point matrices take several times fewer
    kernel evaluations at every level measured, but a block's cost depends on its rank,
    known only after ACA: the level's first PROBE blocks run by points, the next PROBE whole,
    and the rest go the way that cost fewer kernel evaluations per entry (counts, not
    timings: the same choice on every run)."""

    PROBE = 32

    def __init__(self, kernel, far, sel):
        self.far = far
        self.whole = False
        self.cost = {}  # way -> kernel evaluations per block entry of its probe
        self.decided = kernel.elements is None or len(sel) < 4 * self.PROBE \
            or not _clusters_partition(far, sel)
        self.area = int(far["m"][sel].max()) * int(far["n"][sel].max())

    def probe(self) -> int:
        return self.PROBE if not self.decided else 1 << 62

    def measured(self, ids, evaluations):
        if self.decided:
            return
        self.cost[self.whole] = evaluations / float(np.sum(self.far["m"][ids] * self.far["n"][ids]))
        if len(self.cost) == 2:
            self.whole, self.decided = self.cost[True] < self.cost[False], True
        else:
            self.whole = True


def _clusters_partition(far, sel) -> bool:
    """Whether the row clusters and the column clusters of blocks `sel` are each disjoint
    (one start, one size), as the element-pair sums of whole blocks need."""
    for start, size in (("r0", "m"), ("c0", "n")):
        s, z = far[start][sel], far[size][sel]
        u, first = np.unique(s, return_index=True)
        if np.any(z != z[first][np.searchsorted(u, s)]) or np.any(u[:-1] + z[first][:-1] > u[1:]):
            return False
    return True


def _aca_of_whole_blocks(kernel, far, ids, eps, dtype, zero_tol, L):
    """ACA+ of blocks `ids` evaluated whole by element pairs (host arrays; the CPU's way).
    Block b's rows are rows b Lr .. b Lr + m_b - 1 of one stacked matrix, so ACA reads its
    entries from the stack by position."""
    blocks = {key: far[key][ids] for key in ("r0", "m", "c0", "n")}
    Lr, Lc = int(blocks["m"].max()), int(blocks["n"].max())
    D = np.zeros((len(ids), Lr, Lc), dtype)
    kernel.add_near_field(blocks, D)
    kernel.entries += int(np.sum(blocks["m"] * blocks["n"]))
    flat = D.reshape(-1)
    return aca_plus_batched(lambda ti, sj: flat[ti * Lc + sj], np.arange(len(ids)) * Lr,
                            blocks["m"], np.zeros(len(ids), np.int64), blocks["n"], eps, np,
                            dtype, zero_tol=zero_tol, length=L)


def assemble_near(kernel, near: dict, xp, correction=None, chunk_entries=1 << 24, store=None,
                  budget_bytes=2 << 30):
    """One dense group for the inadmissible blocks `near`, plus `correction` =
    (row positions, col positions, values, block) in the permuted numbering (repeated
    places summed) added where touching supports need singular quadrature. Stored in `store`
    (default the kernel's dtype); a lower precision is reached a share of blocks at a time
    (at most `budget_bytes` of them in the kernel's), each share's entries and corrections
    summed in the kernel's precision and rounded once."""
    if len(near["r0"]) == 0:
        return None
    Lr, Lc = int(near["m"].max()), int(near["n"].max())
    B = len(near["r0"])
    store = np.dtype(store or kernel.dtype)
    D = xp.zeros((B, Lr, Lc), dtype=store)
    step = B if store == kernel.dtype else \
        max(1, int(budget_bytes // (np.dtype(kernel.dtype).itemsize * Lr * Lc)))
    if correction is not None and len(correction[0]):
        correction = tuple(xp.asarray(a) for a in correction)
    else:
        correction = None
    bar = progress(B, f"near field {kernel.name}", "blocks")
    for s in range(0, B, step):
        e = min(B, s + step)
        share = {key: v[s:e] for key, v in near.items()}
        Ds = D[s:e] if store == kernel.dtype else xp.zeros((e - s, Lr, Lc), dtype=kernel.dtype)
        r0, m, c0, n = (xp.asarray(share[key]) for key in ("r0", "m", "c0", "n"))
        if kernel.elements is not None:
            kernel.add_near_field(share, Ds, bar)
        else:
            _near_by_entries(kernel, share, xp, Ds, r0, m, c0, n, chunk_entries, bar)
        if correction is not None:
            rows, cols, vals, blk = correction
            if step < B:  # this share's corrections, their blocks numbered within it
                mine = xp.nonzero((blk >= s) & (blk < e))[0]
                rows, cols, vals, blk = rows[mine], cols[mine], vals[mine], blk[mine] - s
            flat = blk.astype(xp.int64) * (Lr * Lc) + (rows - r0[blk]) * Lc + (cols - c0[blk])
            scatter_add(Ds.reshape(-1), flat, vals.astype(Ds.dtype, copy=False))
        if Ds.dtype != store:
            D[s:e] = Ds
        del Ds
    bar.close()
    r0, m, c0, n = (xp.asarray(near[key]) for key in ("r0", "m", "c0", "n"))
    return BlockGroup(r0, c0, m, n, D=D)


def _near_by_entries(kernel, near, xp, D, r0, m, c0, n, chunk_entries, bar):
    """The dense stack's entries as flat (test dof, trial dof) pair lists (the GPU's way:
    one launch per chunk of blocks)."""
    B, Lr, Lc = D.shape
    ar, ac = xp.arange(Lr), xp.arange(Lc)
    step = max(1, chunk_entries // (Lr * Lc))
    for s in range(0, B, step):
        sl = slice(s, min(B, s + step))
        ti = r0[sl, None, None] + xp.minimum(ar[None, :, None], m[sl, None, None] - 1)
        sj = c0[sl, None, None] + xp.minimum(ac[None, None, :], n[sl, None, None] - 1)
        ti, sj = xp.broadcast_arrays(ti, sj)
        vals = kernel(ti.ravel(), sj.ravel()).reshape(-1, Lr, Lc)
        inside = (ar[None, :, None] < m[sl, None, None]) & (ac[None, None, :] < n[sl, None, None])
        D[sl] = xp.where(inside, vals, 0)
        bar.update(sl.stop - sl.start)


def near_block_of(near, rows, cols, strict=True):
    """Index of the dense block holding each (row, col) of the permuted matrix (-1 where
    none does and not `strict`), on the array module of rows and cols."""
    xp = array_module(rows)
    # dense blocks pair leaf clusters; leaf starts are the distinct block starts
    rstarts, cstarts = np.unique(near["r0"]), np.unique(near["c0"])
    key_blocks = (np.searchsorted(rstarts, near["r0"]) * len(cstarts)
                  + np.searchsorted(cstarts, near["c0"]))
    order = np.argsort(key_blocks)
    keys = xp.asarray(key_blocks[order])
    key = ((xp.searchsorted(xp.asarray(rstarts), rows, side="right") - 1) * len(cstarts)
           + xp.searchsorted(xp.asarray(cstarts), cols, side="right") - 1)
    at = xp.minimum(xp.searchsorted(keys, key), len(order) - 1)
    blk = xp.asarray(order)[at]
    r0, m, c0, n = (xp.asarray(near[k]) for k in ("r0", "m", "c0", "n"))
    bad = ((keys[at] != key) | (rows - r0[blk] >= m[blk]) | (cols - c0[blk] >= n[blk])
           | (rows < r0[blk]) | (cols < c0[blk]))
    if strict and bool(bad.any()):
        raise WavescatError(f"{int(bad.sum())} singular corrections fall outside the dense "
                            "near field (admissibility must exclude touching supports)")
    return xp.where(bad, -1, blk)
