"""H-matrix assembly: trees, dense near field, batched ACA+ on every device, report.

`assemble_from_clouds` works on any pair of quadrature clouds plus an optional sparse
correction of the touching pairs; `assemble_hmatrix` (galerkin.py) feeds it the Galerkin
operators of `wavescat.bem`.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ....backend import array_module, resolve, to_host
from ....defaults import HMATRIX
from ....errors import InputError, WavescatError
from ...kernels.green import Operator
from . import host_blocks
from .batched_aca import assemble_near, compress_far, near_block_of, release_cached, sync
from .block_tree import build_block_tree
from .cluster_tree import build_cluster_tree
from .elementwise import mirror_blocks
from .hmatrix import DevicePart, HMatrix, transposed
from .kernels import PairKernel
from .report import host_peak_bytes, log_report, rank_histogram

log = logging.getLogger("wavescat.hmatrix")


def check_parameters(eps, eta, leaf_size, kd_max=None, storage="double"):
    if not (isinstance(eps, (float, int)) and 0 < eps < 1):
        raise InputError(f"H-matrix eps = {eps!r}: must be a number in (0, 1)")
    if not (isinstance(eta, (float, int)) and eta > 0):
        raise InputError(f"H-matrix eta = {eta!r}: must be a positive number")
    if not (isinstance(leaf_size, (int, np.integer)) and leaf_size >= 2):
        raise InputError(f"H-matrix leaf_size = {leaf_size!r}: must be an integer >= 2")
    if kd_max is not None and not (isinstance(kd_max, (float, int)) and kd_max > 0):
        raise InputError(f"H-matrix kd_max = {kd_max!r}: must be a positive number or null")
    if storage not in ("auto", "single", "double"):
        raise InputError(f"H-matrix storage = {storage!r}: must be auto, single or double")


# `storage: auto` stores in single precision while its rounding (2^-24 = 6e-8 relative per
# entry) stays at most 1/16 of the ACA tolerance: below it the factors would carry more
# rounding than approximation error
SINGLE_STORAGE_EPS = 1e-6


def stored_dtype(dtype, storage: str, eps: float) -> np.dtype:
    """The dtype the blocks of entries of `dtype` are stored in: single storage rounds
    double entries to complex64 (float32 if real) and never raises single ones; auto is
    single for eps >= SINGLE_STORAGE_EPS, else double."""
    dtype = np.dtype(dtype)
    if storage == "auto":
        storage = "single" if eps >= SINGLE_STORAGE_EPS else "double"
    if storage == "double" or dtype in (np.complex64, np.float32):
        return dtype
    return np.dtype(np.complex64 if dtype.kind == "c" else np.float32)


# A[i, j] = A[j, i] for one space as trial and test (the kernel and the rule are symmetric)
SYMMETRIC_OPERATORS = frozenset({Operator.single_layer, Operator.hypersingular})


def _one_space(test_cloud, trial_cloud) -> bool:
    return test_cloud is trial_cloud or all(
        np.array_equal(getattr(test_cloud, key), getattr(trial_cloud, key))
        for key in ("pos", "nrm", "w", "curl"))


def _compressed_share(far: dict, symmetric: bool) -> np.ndarray:
    """The admissible blocks to compress: all, or for a symmetric matrix with a symmetric
    partition those above the diagonal (each one below is the transpose of its mirror)."""
    every = np.arange(len(far["r0"]))
    if not symmetric or not len(every) or mirror_blocks(far) is None:
        return every
    return every[far["c0"] > far["r0"]]


@dataclass(frozen=True, eq=False)
class BlockPlan:
    """The cluster trees and block tree of a pair of clouds, and the admissible blocks ACA
    compresses: all, or (`mirrored`) those above the diagonal of a symmetric operator on one
    space, each block below being the transpose of its mirror."""

    rows: object  # ClusterTree of the test cloud
    cols: object  # ClusterTree of the trial cloud
    blocks: object  # BlockTree
    compressed: np.ndarray  # indices into blocks.far
    mirrored: bool


def block_plan(name, k, test_cloud, trial_cloud, eta=HMATRIX["eta"],
               leaf_size=HMATRIX["leaf_size"], kd_max=HMATRIX["kd_max"], trees=None) -> BlockPlan:
    """The trees of operator `name` at wavenumber k between two clouds (host arrays only);
    `trees`: (rows, cols, blocks) of another plan of the same clouds and parameters, reused."""
    if trees is None:
        rtree = build_cluster_tree(test_cloud.lo, test_cloud.hi, leaf_size)
        ctree = rtree if trial_cloud is test_cloud else build_cluster_tree(trial_cloud.lo, trial_cloud.hi, leaf_size)
        trees = rtree, ctree, build_block_tree(rtree, ctree, eta, k=float(np.real(k)), kd_max=kd_max)
    rtree, ctree, btree = trees
    # V and W of one space: ACA on the blocks above the diagonal, those below transposed
    compressed = _compressed_share(btree.far, Operator.named(name) in SYMMETRIC_OPERATORS
                                   and _one_space(test_cloud, trial_cloud))
    return BlockPlan(rtree, ctree, btree, compressed, len(compressed) < len(btree.far["r0"]))


def _share(blocks: dict, part: int, nparts: int) -> np.ndarray:
    """Every nparts-th block of each level: a balanced share of the work per device."""
    order = np.lexsort((np.arange(len(blocks["r0"])), blocks["level"]))
    return np.sort(order[part::nparts])


def assemble_from_clouds(name, k, test_cloud, trial_cloud, *, correction=None,
                         backend=None, precision="double", eps=HMATRIX["eps"],
                         eta=HMATRIX["eta"], leaf_size=HMATRIX["leaf_size"],
                         kd_max=HMATRIX["kd_max"], storage=HMATRIX["storage"], recompression=True,
                         devices=None, work_bytes=None, label=None, plan=None, share=None,
                         quiet=False):
    """H-matrix of the regular-quadrature kernel matrix between two clouds plus
    `correction` = (rows, cols, values) in original numbering (touching pairs only).
    Entries, ACA and recompression run in `precision`; the blocks are stored in `storage`
    (`stored_dtype`) and multiplied in `precision`. `plan`: the clouds' BlockPlan, if made
    already; `share`: the blocks this process assembles and keeps (a BlockShare of
    distributed.py; None: all of them)."""
    check_parameters(eps, eta, leaf_size, kd_max, storage)
    be = resolve(backend)
    t_all = time.perf_counter()
    times = {"trees": 0.0, "near_field": 0.0, "aca": 0.0, "transfers": 0.0, "correction": 0.0}
    t0 = time.perf_counter()
    if plan is None:
        plan = block_plan(name, k, test_cloud, trial_cloud, eta, leaf_size, kd_max)
    rtree, ctree, btree = plan.rows, plan.cols, plan.blocks
    times["trees"] = time.perf_counter() - t0

    ndev = 1
    if be.is_gpu:
        ndev = be.device_count if devices is None else int(devices)
    corr = None
    dropped = 0
    if correction is not None and len(correction[0]):
        # in tree numbering with the dense block each lands in (repeated places are summed
        # into the blocks), on the array module that holds them; several devices take
        # their shares from the host
        t0 = time.perf_counter()
        rows, cols, vals = correction if ndev == 1 else (to_host(c) for c in correction)
        correction = None  # the caller passes it on: these are the last references
        xc = array_module(rows)
        rows = xc.asarray(rtree.iperm.astype(np.int32))[rows]
        cols = xc.asarray(ctree.iperm.astype(np.int32))[cols]
        block = near_block_of(btree.near, rows, cols, strict=False).astype(np.int32)
        inside = block >= 0
        dropped = int(xc.sum(~inside))
        corr = tuple(c[inside] for c in (rows, cols, vals, block))
        del rows, cols, vals, block, inside
        times["correction"] += time.perf_counter() - t0
    # one device's share of the corrections lives until its dense blocks have taken it
    held = {"corr": corr}
    del corr
    device_ids = list(range(ndev))
    tcl, scl = test_cloud.permuted(rtree.perm), trial_cloud.permuted(ctree.perm)
    compressed = plan.compressed if share is None else share.far
    near_ids = np.arange(len(btree.near["r0"])) if share is None else share.near

    def build_part(d):
        xp = be.xp
        st = {"evaluations_near": 0, "evaluations_aca": 0, "pairs_near": 0, "pairs_aca": 0}
        with be.device(d):
            t0 = time.perf_counter()
            kern = PairKernel(name, k, tcl, scl, be, precision)
            sync(xp)
            st["transfers"] = time.perf_counter() - t0
            pick = near_ids[_share({key: v[near_ids] for key, v in btree.near.items()}, d, ndev)]
            near = {key: v[pick] for key, v in btree.near.items()}
            upper = {key: v[compressed] for key, v in btree.far.items()}
            far = {key: v[_share(upper, d, ndev)] for key, v in upper.items()}
            store = stored_dtype(kern.dtype, storage, eps)
            itemsize = store.itemsize
            near_entries = int(len(near["r0"]) * near["m"].max(initial=0) * near["n"].max(initial=0))
            budget = work_bytes or (2 << 30)
            # the stored stack, and while it is lower than the kernel's precision a share
            # of it in the kernel's
            need_near = near_entries * itemsize + (0 if store == kern.dtype else min(
                near_entries * np.dtype(kern.dtype).itemsize, budget))
            room = None
            if be.is_gpu:
                # blocks of operators assembled before may go to the host (host_blocks.py)
                # to make room for this step, and for each step of ACA below
                room = host_blocks.Room(be, d)
                # low-rank storage is not known before ACA: count rank 2 per block (a
                # floor: Laplace blocks at eps = 1e-4 have ranks 3-8), more is caught as
                # an out-of-memory error below
                guess = int(np.sum((far["m"] + far["n"]) * 2) * itemsize)
                room(need_near + guess + budget)
                free = host_blocks.device_free_bytes(be, d)
                need = need_near + kern.device_bytes + guess + min(budget, free // 8)
                if need > free:
                    raise WavescatError(
                        f"H-matrix of {name} with {rtree.n} x {ctree.n} dofs needs about "
                        f"{need / 2**30:.1f} GiB on GPU {d} (dense near field "
                        f"{need_near / 2**30:.1f} GiB, low-rank part ~{guess / 2**30:.1f} GiB) "
                        f"but {free / 2**30:.1f} GiB are available; use more GPUs, a larger "
                        f"hmatrix.eps or a smaller hmatrix.leaf_size, or backend: cpu")
                budget = min(budget, max(free - need_near - guess, 256 << 20) // 2)
            t0 = time.perf_counter()
            ev0 = kern.evaluations
            part = _part_correction(held["corr"], pick, len(btree.near["r0"]), xp)
            if ndev == 1:
                held["corr"] = None
            dense = assemble_near(kern, near, xp, part, store=store, budget_bytes=budget)
            del part
            sync(xp)
            release_cached(xp)  # the corrections' memory, before ACA's larger arrays
            st["near_field"] = time.perf_counter() - t0
            st["evaluations_near"] = kern.evaluations - ev0
            st["pairs_near"] = int(np.sum(near["m"] * near["n"]))
            scale = _largest_magnitude(dense.D, xp) if dense is not None else 1.0
            zero_tol = 10 * np.finfo(np.dtype(kern.dtype).type(0).real.dtype).eps * scale
            t0 = time.perf_counter()
            ev0, en0 = kern.evaluations, kern.entries
            low = compress_far(kern, far, eps, xp, recompression=recompression,
                               budget_bytes=budget, zero_tol=zero_tol, stats=st, store=store,
                               room=room) \
                if len(far["r0"]) else []
            if plan.mirrored:  # the blocks below the diagonal
                low += [transposed(g, xp) for g in low]
            sync(xp)
            release_cached(xp)
            st["aca"] = time.perf_counter() - t0
            st["evaluations_aca"] = kern.evaluations - ev0
            st["pairs_aca"] = kern.entries - en0
            return DevicePart(be, d, [dense], low, btree.shape), st, kern

    try:
        if ndev == 1:
            results = [build_part(0)]
        else:
            with ThreadPoolExecutor(ndev) as pool:
                results = list(pool.map(build_part, device_ids))
    except Exception as exc:
        if type(exc).__name__ == "OutOfMemoryError":  # cupy.cuda.memory.OutOfMemoryError
            raise WavescatError(f"H-matrix of {name} with {rtree.n} x {ctree.n} dofs ran out "
                                f"of GPU memory ({exc}); use more GPUs, a larger hmatrix.eps, "
                                f"or backend: cpu") from None
        raise
    parts = [r[0] for r in results]
    stats = [r[1] for r in results]
    kern = results[0][2]
    for key in ("near_field", "aca", "transfers", "aca_cross_s", "recompression_s"):
        times[key.removesuffix("_s")] = times.get(key.removesuffix("_s"), 0.0) + max(
            s.get(key, 0.0) for s in stats)  # devices run concurrently
    times["total"] = time.perf_counter() - t_all
    H = HMatrix(parts, rtree.perm, ctree.perm, kern.dtype, btree, {})
    H.report = _report(H, name, k, be, precision, eps, eta, leaf_size, times, stats, label, kern)
    H.report["kd_max"] = kd_max
    H.report["storage"] = storage
    H.report["corrections_in_admissible_blocks"] = dropped
    if not quiet:  # galerkin.assemble_hmatrix logs it with its own stages added
        log_report(H.report)
    return H


def _largest_magnitude(D, xp, chunk=1 << 26) -> float:
    """max |D| a chunk of entries at a time (|D| of all the near field at once would be as
    large as a real copy of it)."""
    flat = D.reshape(-1)
    return max((float(xp.max(xp.abs(flat[s:s + chunk]))) for s in range(0, flat.shape[0], chunk)),
               default=1.0)


def _part_correction(corr, pick, total, xp=np):
    """The corrections (rows, cols, values, block) that fall in this device's share `pick`
    (host indices) of the `total` dense blocks, with their blocks numbered within the share.
    The corrections stay where they are: on the host (several devices share them) or on the
    backend `xp`'s device (one device: a rank's share)."""
    if corr is None:
        return None
    if len(pick) == total and np.array_equal(pick, np.arange(total)):  # every block, in order
        return corr
    rows, cols, vals, block = corr
    on = np if isinstance(block, np.ndarray) else xp
    local = np.full(int(pick.max(initial=-1)) + 2, -1, np.int64)
    local[pick] = np.arange(len(pick))
    local = on.asarray(local)
    block = local[on.minimum(block, len(local) - 1)]
    mine = block >= 0
    return rows[mine], cols[mine], vals[mine], block[mine]


def _report(H, name, k, be, precision, eps, eta, leaf_size, times, stats, label, kern) -> dict:
    m, n = H.shape
    ranks = np.concatenate([g.rank for g in H.groups() if g.D is None] or [np.zeros(0, int)])
    n_far = len(H.block_tree.far["r0"])
    ranks_all = np.concatenate([ranks, np.zeros(n_far - len(ranks), int)])
    stored = sum(g.stored_entries() for g in H.groups())
    padded = sum(p.nbytes for p in H.parts)  # V and W: the blocks below share their mirrors'
    item = H.storage_dtype.itemsize
    dev_bytes = padded + kern.device_bytes * len(H.parts) if be.is_gpu else 0
    evals = sum(s["evaluations_near"] + s["evaluations_aca"] for s in stats)
    pairs = sum(s["pairs_near"] + s["pairs_aca"] for s in stats)
    busy = times["near_field"] + times["aca"]
    return {
        "operator": name, "label": label, "wavenumber": float(np.real(k)),
        "shape": [m, n], "dtype": str(H.dtype), "storage_dtype": str(H.storage_dtype),
        "precision": precision,
        "backend": be.describe(), "devices": len(H.parts),
        "eps": eps, "eta": eta, "leaf_size": leaf_size,
        "blocks": {"admissible": n_far, "dense": int(len(H.block_tree.near["r0"])),
                   "aca_steps": int(sum(s.get("aca_steps", 0) for s in stats)),
                   "aca_host_syncs": int(sum(s.get("aca_host_syncs", 0) for s in stats)),
                   "aca_whole": int(sum(s.get("aca_whole_blocks", 0) for s in stats)),
                   # each device's levels: blocks, chunks, ACA steps, seconds
                   "aca_levels": [s.get("aca_levels", []) for s in stats]},
        "compression_ratio": stored / (m * n),
        "stored_entries": int(stored),
        "bytes_tight": int(stored * item),
        "device_bytes": int(dev_bytes),
        "host_bytes": int(host_peak_bytes()),
        # what the device holds beside the blocks (other operators, caches) once this is done
        "device_pool_used_bytes": _pool_used(be),
        "storage_bytes": int(padded),
        "rank_histogram": rank_histogram(ranks_all),
        "rank_max": int(ranks_all.max(initial=0)),
        "rank_mean": float(ranks_all.mean()) if len(ranks_all) else 0.0,
        "time_s": times,
        "entries": int(pairs),
        "aca_entries": int(sum(s["pairs_aca"] for s in stats)),  # rows and columns computed
        "kernel_evaluations": int(evals),
        "aca_kernel_evaluations": int(sum(s["evaluations_aca"] for s in stats)),
        "entries_per_s": pairs / busy if busy > 0 else 0.0,
        "kernel_evaluations_per_s": evals / busy if busy > 0 else 0.0,
        # the near field is one flat kernel launch per chunk: the kernel's own rate,
        # to compare with the device's ceiling; ACA adds pivoting and factor updates
        "near_field_evaluations_per_s": _rate(stats, "evaluations_near", "near_field"),
        "aca_evaluations_per_s": _rate(stats, "evaluations_aca", "aca"),
    }


def _pool_used(be) -> int:
    return int(be.xp.get_default_memory_pool().used_bytes()) if be.is_gpu else 0


def _rate(stats, count, time_key) -> float:
    t = max(s[time_key] for s in stats)
    return sum(s[count] for s in stats) / t if t > 0 else 0.0
