"""CUDA source of the DG right-hand side: the .cu files beside this module after the #defines
of one variant. Several elements per block (Kloeckner, Warburton & Hesthaven style), element
data staged in shared memory, the reference operators read through the read-only cache or
staged in shared memory.

- volume (volume.cu and its layouts volume_rows.cu, volume_mma.cu): rhs = -A . grad q on each
  element (6 matrix-vector rows of length Np per node: grad p and div v = Dr (r_x . v) +
  Ds (s_x . v) + Dt (t_x . v), using affine factors), one frame (staging, prefetching
  persistent grids) around two layouts: rows of threads with register tiles over elements and
  nodes (FMA units), or warp matrix products on the tensor cores (DMMA in fp64, 3xTF32 in fp32;
  fields as the mma's A, or transposed as its B); the variant is a layout.VolumeTuning;
- surface (surface.cu): upwind flux at the 4 Nfp face nodes into shared memory (boundary
  conditions as exterior states, media of different impedance), then rhs += LIFT flux;
- update (surface.cu): the low-storage RK stage res = a res + dt rhs, q += b res.

gpu_kernels.GpuKernels compiles and launches them; its CPU twin is cpu_kernels.CpuKernels.
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from .layout import MMA_GEO_STRIDE, STATIC_SHARED_LIMIT, VolumeTuning, mma_tiles, volume_layout

NVRTC_OPTIONS = ("-std=c++17",)


def _cu(name: str) -> str:
    return Path(__file__).with_name(name).read_text()


def _layout(name: str) -> tuple[str, dict]:
    """A volume layout's .cu: its definitions, and its parts after `//// __NAME__` lines by
    placeholder name (the frame's __SETUP__ and __BATCH__)."""
    head, *parts = re.split(r"^//// (__[A-Z]+__).*\n", _cu(name), flags=re.M)
    return head, dict(zip(parts[::2], parts[1::2]))


_COMMON, _VOLUME, _SURFACE = _cu("common.cu"), _cu("volume.cu"), _cu("surface.cu")
_ROWS, _MMA = _layout("volume_rows.cu"), _layout("volume_mma.cu")


def _defines(defs: dict) -> str:
    return "".join(f"#define {k} {v}\n" for k, v in defs.items())


def _real(dtype) -> dict:
    itemsize = np.dtype(dtype).itemsize
    return {"REAL": "double" if itemsize == 8 else "float", "ALIGN4": str(4 * itemsize)}


def volume_source(n_nodes: int, dtype, tuning: VolumeTuning, sponge: bool, index32: bool = False) -> str:
    """CUDA source of the volume kernel; index32: 32-bit indices (every index into the state and
    the affine factors of the meshes it runs on is below 2^32, see `layout.fits_index32`)."""
    itemsize = np.dtype(dtype).itemsize
    lay = volume_layout(n_nodes, tuning, itemsize)
    bounds = f"__launch_bounds__({lay.threads}" + (f", {tuning.min_blocks})" if tuning.min_blocks else ")")
    defs = {**_real(dtype), "NP": n_nodes, "NTHREADS": lay.threads,
            "NGEO": -(-lay.elements * 9 // lay.threads),
            "PREFETCH": int(tuning.persistent > 0), "KBV": lay.elements, "SQS": lay.sqs,
            "SHARED_BYTES": lay.shared_bytes, "GEO_OFFSET": lay.geo_offset, "D_OFFSET": lay.operator_offset,
            "STATIC_POOL": int(lay.shared_bytes <= STATIC_SHARED_LIMIT),
            "D_SHARED": int(tuning.d_shared), "SPONGE": int(sponge), "BOUNDS": bounds, "INDEX32": int(index32),
            "GEO_STRIDE": MMA_GEO_STRIDE if tuning.tensor else 9}
    staged = n_nodes  # nodes staged per element: tensor, the padding nodes too (as zeros)
    if tuning.tensor:
        tiles = mma_tiles(n_nodes, itemsize, tuning.transposed)
        staged = tiles.k_steps * tiles.k_step
        defs.update({"MMA_TF32": int(itemsize == 4), "TRANSPOSED": int(tuning.transposed),
                     "NNT": tiles.node_tiles, "NKS": tiles.k_steps,
                     "STAGED_OUT": int(tuning.staged_output), "SPLIT_ON_LOAD": int(tuning.split_on_load),
                     "PREFETCH_K": int(tuning.prefetch_k),
                     "NGROUPS": lay.node_groups, "ET": tuning.elements_per_thread, "NG": tuning.nodes_per_thread})
        prelude, parts = _MMA
    else:
        defs.update({"NT": lay.nt, "NPT": tuning.nodes_per_thread, "TE": tuning.kb_volume,
                     "EPT": tuning.elements_per_thread, "RV": lay.rv, "DVA": lay.dva})
        prelude, parts = _ROWS
    defs.update({"NSN": staged, "NSTAGE": -(-lay.elements * staged // lay.threads)})
    body = _VOLUME
    for name, part in parts.items():
        body = body.replace(name, part)
    body = body.replace("__UNROLL__", str(lay.unroll))
    return _defines(defs) + _COMMON + prelude + body


def surface_source(n_nodes: int, face_nodes: int, face_mask, dtype, kb_surface: int, media: bool = False) -> str:
    """CUDA source of the surface and update kernels; media: elements of several media."""
    defs = {**_real(dtype), "NP": n_nodes, "NFP": face_nodes, "KBS": kb_surface, "MEDIA": int(media)}
    fmask = ", ".join(str(int(i)) for i in np.ravel(face_mask))
    return _defines(defs) + _COMMON + _SURFACE.replace("__FMASK__", fmask)


