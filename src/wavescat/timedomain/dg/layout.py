"""Thread and memory layout of the DG volume kernel: the variant record (`VolumeTuning`), the
launch geometry and shared pool it implies (`volume_layout`), and the operators in the order
the kernel reads them (`volume_operators`). The CUDA source is kernel_source.py; which variant
a device runs by default, tuning.py."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

MMA_GEO_STRIDE = 12  # tensor layout: affine factors staged as rows of three real4 (vector loads)
SHARED_LIMIT = 227 * 1024  # bytes of shared memory a block may use on Hopper (opt-in above 48 KB)
STATIC_SHARED_LIMIT = 48 * 1024  # a pool up to this size is declared static, above it dynamic
TENSOR_CORES_MIN_CC = 80  # mma.sync TF32 m16n8k8 and DMMA m8n8k4: compute capability 8.0


class VolumeTuning(NamedTuple):
    """One variant of the volume kernel (see volume_rows.cu and volume_mma.cu). With tensor, the
    counts mean: kb_volume element groups per batch, elements_per_thread element tiles (16
    elements fp32, 8 fp64 or transposed) and nodes_per_thread node tiles (8 nodes, 16 fp32
    transposed) per warp."""

    kb_volume: int  # TE: rows of threads per block, one element per row and EPT step
    elements_per_thread: int = 1  # EPT: register blocking over elements (operator reuse)
    nodes_per_thread: int = 1  # NPT: register blocking over nodes (staged-field reuse)
    d_shared: bool = False  # operators staged in shared memory (else the read-only cache)
    unroll: int = 0  # m-loop unroll; 0: full when the body is small, else 4
    min_blocks: int = 0  # __launch_bounds__ minimum blocks per SM (caps registers); 0: none
    persistent: int = 0  # blocks per SM of a persistent grid that prefetches its next batch; 0: none
    warp_rows: bool = False  # threads per element row padded to a power of two (or a multiple of
    # 32), so that no row straddles two warps: a staged-field read is one address per warp row
    tensor: bool = False  # warp matrix products on the tensor cores (DMMA fp64, 3xTF32 fp32)
    staged_output: bool = False  # tensor: the rhs through shared memory, written in coalesced rows
    split_on_load: bool = False  # tensor, fp32 (fp64 has no split): fields staged unsplit, split when loaded
    transposed: bool = False  # tensor: the operators the mma's A, the fields its B (fp32: tiles of
    # 8 elements x 16 nodes; a warp splits a field fragment once for all its node tiles)
    prefetch_k: bool = False  # tensor: a k step's fragments loaded during the step before

    def __repr__(self) -> str:  # only what differs from the defaults
        changed = [f"{k}={v!r}" for k, v in zip(self._fields, self)
                   if k == "kb_volume" or v != self._field_defaults[k]]
        return f"VolumeTuning({', '.join(changed)})"

    def changed(self) -> dict:
        """The fields that differ from the defaults (kb_volume always): the tuning table's entry."""
        return {k: v for k, v in zip(self._fields, self) if k == "kb_volume" or v != self._field_defaults[k]}


TENSOR_OPTIONS = ("staged_output", "split_on_load", "transposed", "prefetch_k")


class VolumeLayout(NamedTuple):
    nt: int  # threads per element row (tensor: 32, a warp)
    rv: int  # thread slots per operator row (>= nt; tensor: unused)
    dva: int  # alignment of a thread's NPT operator entries (bytes): their vector load width
    sqs: int  # element stride of the staged fields in shared memory
    threads: int  # per block
    elements: int  # per block
    unroll: int
    shared_bytes: int  # the shared pool: staged fields, affine factors, operators (d_shared)
    geo_offset: int  # bytes into the pool
    operator_offset: int
    node_groups: int = 0  # tensor: warps per element group, NG node tiles each


def default_elements_per_block(n_nodes: int, target_threads: int = 256) -> int:
    return max(1, target_threads // n_nodes)


def warp_row_width(nt: int) -> int:
    """Threads per element row with warp_rows: a power of two up to 32, else a multiple of 32."""
    return 1 << (nt - 1).bit_length() if nt <= 32 else -(-nt // 32) * 32


class MmaTiles(NamedTuple):
    """Tile sizes of the tensor-core variant: the mma shape of the precision and Np's tiling."""
    elements: int  # EM: elements per tile (the mma's M, its N when transposed)
    nodes: int  # NM: nodes n per tile (the mma's N, its M when transposed)
    k_step: int  # KS: nodes m per k step
    node_tiles: int  # NNT: node tiles covering Np
    k_steps: int  # NKS: k steps covering Np
    operator_regs: int  # registers per lane of an operator fragment (of TF32 hi or lo)


def mma_tiles(n_nodes: int, itemsize: int, transposed: bool = False) -> MmaTiles:
    """TF32 m16n8k8 (fp32) or DMMA m8n8k4 (fp64); transposed: the operators are the mma's A."""
    if itemsize == 8:
        em, nm, ks = 8, 8, 4
    else:
        em, nm, ks = (8, 16, 8) if transposed else (16, 8, 8)
    return MmaTiles(em, nm, ks, -(-n_nodes // nm), -(-n_nodes // ks), nm * ks // 32)


def volume_layout(n_nodes: int, tuning: VolumeTuning, itemsize: int) -> VolumeLayout:
    """Thread and memory layout of a volume-kernel variant; ValueError if it cannot launch."""
    te, ept, npt = tuning.kb_volume, tuning.elements_per_thread, tuning.nodes_per_thread
    if min(te, ept, npt) < 1 or tuning.unroll < 0 or tuning.min_blocks < 0:
        raise ValueError(f"{tuning}: counts must be positive")
    if tuning.persistent < 0:
        raise ValueError(f"{tuning}: persistent must be >= 0")
    if tuning.tensor:
        return _mma_layout(n_nodes, tuning, itemsize)
    if any(getattr(tuning, name) for name in TENSOR_OPTIONS):
        raise ValueError(f"{tuning}: {', '.join(TENSOR_OPTIONS)} are options of tensor, not of the row layout")
    nt = -(-n_nodes // npt)
    if tuning.warp_rows:  # the node map t + i NT still covers every node once (NT NPT >= Np)
        nt = warp_row_width(nt)
    entry = npt * itemsize  # bytes per thread and operator row
    dva = min(16, entry & -entry)
    # rows in global memory start on 128-byte lines; in shared memory they need no padding
    line = 128 // np.gcd(128, entry)
    rv = nt if tuning.d_shared else -(-nt // line) * line
    sqs = n_nodes | 1
    threads = te * nt
    unroll = tuning.unroll or (n_nodes if n_nodes * 6 * ept * npt <= 1536 else 4)
    dbytes = 3 * n_nodes * rv * entry if tuning.d_shared else 0
    return _checked(VolumeLayout(nt, rv, dva, sqs, threads, te * ept, unroll, *_pool(te * ept, sqs, itemsize, dbytes)),
                    tuning, n_nodes)


def _mma_layout(n_nodes: int, tuning: VolumeTuning, itemsize: int) -> VolumeLayout:
    if tuning.warp_rows:
        raise ValueError(f"{tuning}: warp_rows is an option of the row layout, not of tensor")
    tiles = mma_tiles(n_nodes, itemsize, tuning.transposed)
    groups = -(-tiles.node_tiles // tuning.nodes_per_thread)
    if (groups - 1) * tuning.nodes_per_thread >= tiles.node_tiles:
        raise ValueError(f"{tuning} for Np={n_nodes}: a node group without node tiles")
    elements = tuning.kb_volume * tuning.elements_per_thread * tiles.elements
    kpad = tiles.k_steps * tiles.k_step
    if itemsize == 4:  # (hi, lo) of each value in fragment order, or the value (split_on_load)
        sqs = kpad if tuning.split_on_load else 2 * kpad
    else:  # = 4 (mod 8) doubles
        sqs = kpad + (4 - kpad) % 8
    entry = tiles.operator_regs * itemsize * (2 if itemsize == 4 else 1)  # bytes of a dentry: TF32 holds hi and lo
    dbytes = 3 * tiles.node_tiles * tiles.k_steps * 32 * entry if tuning.d_shared else 0
    unroll = tuning.unroll or (tiles.k_steps if tiles.k_steps <= 12 else 2)
    lay = VolumeLayout(32, 0, 0, sqs, 32 * tuning.kb_volume * groups, elements, unroll,
                       *_pool(elements, sqs, itemsize, dbytes, MMA_GEO_STRIDE), node_groups=groups)
    return _checked(lay, tuning, n_nodes)


def _pool(elements: int, sqs: int, itemsize: int, operator_bytes: int, geo_stride: int = 9) -> tuple[int, int, int]:
    """(bytes, geo offset, operator offset) of the shared pool: 4 sqs values per staged element,
    their 9 affine factors (geo_stride values apart), the operators; each part on a 32-byte
    boundary."""
    up = lambda n: -(-n // 32) * 32  # noqa: E731
    geo = up(4 * sqs * elements * itemsize)
    ops = up(geo + geo_stride * elements * itemsize)
    return ops + operator_bytes, geo, ops


def _checked(lay: VolumeLayout, tuning: VolumeTuning, n_nodes: int) -> VolumeLayout:
    if lay.threads > 1024 or lay.shared_bytes > SHARED_LIMIT:
        raise ValueError(f"{tuning} for Np={n_nodes}: {lay.threads} threads, {lay.shared_bytes} bytes of shared "
                         f"memory per block (limits 1024, {SHARED_LIMIT})")
    return lay


def volume_grid(layout: VolumeLayout, tuning: VolumeTuning, k: int, sms: int) -> int:
    """Blocks of a volume launch on k elements: one per batch of layout.elements, or a
    persistent grid of tuning.persistent blocks per SM, each looping over batches."""
    batches = -(-k // layout.elements)
    return min(batches, tuning.persistent * sms) if tuning.persistent else batches


def fits_index32(n_elements: int, n_nodes: int) -> bool:
    """Whether the volume kernel's indices (4 K Np state entries, 9 K affine factors) fit 32 bits."""
    return 4 * n_elements * n_nodes < 2**32 and 9 * n_elements < 2**32


def volume_node_map(n_nodes: int, layout: VolumeLayout, npt: int) -> np.ndarray:
    """(rv, npt) node computed by thread slot t, entry i: t + i NT, or -1 (padding); row layout."""
    n = np.arange(layout.rv)[:, None] + layout.nt * np.arange(npt)[None, :]
    return np.where((n < n_nodes) & (np.arange(layout.rv)[:, None] < layout.nt), n, -1)


def volume_operators(Dr, Ds, Dt, tuning: VolumeTuning, layout: VolumeLayout, xp=np):
    """The operators as the volume kernel reads them, zero at padding nodes. Row layout: D[d, m,
    t, i] = D_d[n, m] with n = t + i NT. Tensor: mma_operators."""
    if tuning.tensor:
        host = [np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64) for a in (Dr, Ds, Dt)]
        return xp.asarray(mma_operators(np.stack(host), np.dtype(Dr.dtype).itemsize, tuning.transposed))
    nodes = volume_node_map(Dr.shape[0], layout, tuning.nodes_per_thread)
    d = xp.stack([Dr.T, Ds.T, Dt.T])  # [d, m, n]
    d = xp.concatenate([d, xp.zeros_like(d[:, :, :1])], axis=2)  # index -1: zero
    return xp.ascontiguousarray(d[:, :, xp.asarray(nodes)])  # [d, m, t, i]


def tf32_round(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to TF32 (10 mantissa bits, to nearest, ties away: cvt.rna.tf32)."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def mma_operators(D: np.ndarray, itemsize: int, transposed: bool = False) -> np.ndarray:
    """D[d, n, m] (3, Np, Np) in fragment order, zero past Np: [d, node tile, k step, lane,
    register] = D_d[NM tile + g + dn_r, KS step + t + dm_r] (g, t = lane // 4, lane % 4), as the
    mma's B (dn_r = 0, dm_r = 4 r) or, transposed, its A (dn_r = 8 (r & 1), dm_r = 4 (r >> 1)).
    TF32: the registers' hi parts, then their lo parts (x = hi + lo + O(2^-22 x))."""
    npn = D.shape[1]
    tiles = mma_tiles(npn, itemsize, transposed)
    padded = np.zeros((3, tiles.nodes * tiles.node_tiles, tiles.k_step * tiles.k_steps))
    padded[:, :npn, :npn] = D
    lane, r = np.arange(32), np.arange(tiles.operator_regs)
    as_a = transposed and tiles.operator_regs == 4  # fp64: one register, the same either way
    dn, dm = (8 * (r & 1), 4 * (r >> 1)) if as_a else (0 * r, 4 * r)
    n = (tiles.nodes * np.arange(tiles.node_tiles)[:, None, None, None] + (lane // 4)[None, None, :, None]
         + dn[None, None, None, :])
    m = (tiles.k_step * np.arange(tiles.k_steps)[None, :, None, None] + (lane % 4)[None, None, :, None]
         + dm[None, None, None, :])
    frag = padded[:, n, m]  # [d, nt, ks, lane, r]
    if itemsize == 8:
        return np.ascontiguousarray(frag)
    hi = tf32_round(frag)
    lo = tf32_round(frag - hi)
    return np.ascontiguousarray(np.concatenate([hi, lo], axis=-1))
