"""Propagator form of the GPU half step: scalar advection with q >= 3(2m+1).

The half step is then three 1D operators P_d ((m+1) x 2(m+1), propagator.py), built on
the host once per dt and passed as kernel arguments: they sit in the constant bank and
feed the FMAs directly, so no recompilation when dt changes. A cell needs 12 (m+1)^4
FLOPs against 2 (m+1)^3 values read and written, so the kernel is built for bandwidth,
to read each node from DRAM about once:

- a block is ROWS x LANES threads over the (i1, i2) plane, one node column per thread, and
  marches along i0 through `planes` cell planes, keeping the previous node plane's data in
  registers: each node is loaded once per block (plus one plane per march);
- per node plane: the axis-0 pass in registers (previous and current plane), axis 2 with a
  warp shuffle from the next lane, axis 1 through shared memory from the next row. The last
  lane and the last row are halo: they load and interpolate but own no cell, so blocks
  overlap by one node in i1 and i2, and the halo loads of neighbouring blocks hit L2;
- loads and stores go dof by dof as rows of LANES consecutive nodes (coalesced).

Tunables (a `Tile`): LANES and ROWS (compile time: shuffle width, shared memory) and `planes`
(launch time; 0 picks about two waves of blocks); bench_hermite.py --tiles times them. The kernel
is gpu_propagator.cu with straight-line statements generated per m; tests run it on the CPU
through a C++ host harness.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

import numpy as np

from ...errors import InputError
from . import propagator
from .gpu_common import compile_module, render

SHARED_LIMIT = 48 * 1024
LANE_CHOICES = (32, 16, 8)


@dataclass(frozen=True)
class Tile:
    """Threads LANES (along i2) x ROWS (along i1) per block, marching `planes` cells along i0."""

    lanes: int = 32
    rows: int = 8
    planes: int = 0  # 0: chosen per grid (about two waves of blocks)

    @property
    def threads(self) -> int:
        return self.lanes * self.rows

    def shared_bytes(self, m: int, itemsize: int) -> int:
        """One buffer of axis-2 results: (m+1)^3 values per thread."""
        return (m + 1) ** 3 * self.threads * itemsize

    def buffers(self, m: int, itemsize: int) -> int:
        """Two buffers (one barrier per plane) where they fit, else one (two barriers)."""
        return 2 if 2 * self.shared_bytes(m, itemsize) <= SHARED_LIMIT else 1

    def grid(self, cells, resident: int) -> tuple[tuple[int, int, int], int]:
        """(blocks along i2, i1, i0; planes per block) for `cells` = (n0, n1, n2); blocks overlap
        by their halo lane and row. planes = 0 takes about two waves of `resident` threads."""
        n0, n1, n2 = cells
        gx, gy = math.ceil(n2 / (self.lanes - 1)), math.ceil(n1 / (self.rows - 1))
        planes = self.planes or math.ceil(n0 / max(1, round(2 * resident / (gx * gy * self.threads))))
        return (gx, gy, math.ceil(n0 / planes)), planes

    @classmethod
    def parse(cls, text: str) -> "Tile":
        try:
            lanes, rows, planes = (int(x) for x in text.lower().split("x"))
        except ValueError:
            raise InputError(f"propagator tile {text!r}: expected LANESxROWSxPLANES, e.g. 32x8x0") from None
        return cls(lanes, rows, planes)


def fit_tile(m: int, itemsize: int, tile: Tile | None = None) -> Tile:
    """The tile to use: `tile` (default 32x8x0) with ROWS, then LANES, reduced until a block's
    shared memory fits in 48 KiB."""
    tile = tile or Tile()
    if tile.lanes not in LANE_CHOICES or tile.rows < 2 or tile.threads % 32 or tile.threads > 1024 \
            or tile.planes < 0:
        raise InputError(f"propagator tile {tile}: LANES in {LANE_CHOICES}, ROWS >= 2, LANES x ROWS a "
                          "multiple of 32 up to 1024, planes >= 0")
    candidates = [replace(tile, rows=r) for r in range(tile.rows, 1, -1)]
    candidates += [replace(tile, lanes=16, rows=2), replace(tile, lanes=8, rows=4)]  # 32 threads
    for t in candidates:
        if t.threads % 32 == 0 and t.shared_bytes(m, itemsize) <= SHARED_LIMIT:
            return t
    raise InputError(f"hermite kernel = 'propagator': m = {m} needs {(m + 1) ** 3 * itemsize} bytes of "
                      f"shared memory per thread, too many for {SHARED_LIMIT // 1024} KiB blocks")


def model(m: int, itemsize: int) -> dict:
    """Useful work of one cell's half step: FLOPs (FMA = 2) of the three axis passes, each
    (m+1)^2 lines x (m+1) outputs x 2(m+1) inputs, and the DRAM bytes if every value is read
    once and written once (halo and march overlaps are L2 hits)."""
    m1 = m + 1
    return {"flops": 3 * 2 * m1 ** 2 * m1 * 2 * m1, "bytes": 2 * m1 ** 3 * itemsize}


def _op(d: int, k: int, i: int) -> str:
    return f"p{d}_{k}_{i}"


def _apply(d: int, k: int, left, right) -> str:
    """Row k of P_d on two vertices' data: sum_i P_d[k, i] [left | right]_i."""
    m1 = len(left)
    return " + ".join([f"{_op(d, k, i)} * {x}" for i, x in enumerate(left)]
                      + [f"{_op(d, k, m1 + i)} * {x}" for i, x in enumerate(right)])


def _plane(m: int) -> tuple[list[str], list[str]]:
    """Statements of one node plane: (passes along axes 0 and 2 into shared memory,
    axis 1 from shared memory into dst). u = previous plane, c = current loads,
    t = axis-0 results, w = the next lane's t, r and v = this row's and the next row's axis-2 results."""
    m1 = m + 1
    rng = range(m1)

    def dof(a, b, c):
        return (a * m1 + b) * m1 + c

    def u(l0, l1, l2):
        return f"u{l0}_{l1}_{l2}"

    first = []
    for l1 in rng:
        for l2 in rng:
            first += [f"c{l0} = __ldg(s + {dof(l0, l1, l2)}LL * plane)" for l0 in rng]
            first += [f"t{k0}_{l2} = " + _apply(0, k0, [u(l0, l1, l2) for l0 in rng], [f"c{l0}" for l0 in rng])
                      for k0 in rng]
            first += [f"{u(l0, l1, l2)} = c{l0}" for l0 in rng]
        for k0 in rng:
            first += [f"w{l2} = __shfl_down_sync(0xffffffffu, t{k0}_{l2}, 1, LANES)" for l2 in rng]
            first += [f"sb[{dof(k0, l1, k2)} * THREADS] = "
                      + _apply(2, k2, [f"t{k0}_{l2}" for l2 in rng], [f"w{l2}" for l2 in rng]) for k2 in rng]
    second = []
    for k0, k2 in itertools.product(rng, rng):
        second += [f"r{l1} = sb[{dof(k0, l1, k2)} * THREADS]" for l1 in rng]
        second += [f"v{l1} = sb[{dof(k0, l1, k2)} * THREADS + LANES]" for l1 in rng]
        second += [f"d[{dof(k0, k1, k2)}LL * plane] = " + _apply(1, k1, [f"r{l1}" for l1 in rng],
                                                                [f"v{l1}" for l1 in rng]) for k1 in rng]
    return first, second


def kernel_source(m: int, dtype, lanes: int, rows: int) -> str:
    """CUDA source of `hermite_propagator` (gpu_propagator.cu) for one (m, dtype, LANES, ROWS)."""
    itemsize = np.dtype(dtype).itemsize
    m1 = m + 1
    tile = Tile(lanes, rows)
    # straight-line code: its registers, operator entries and statements are per coefficient
    first, second = _plane(m)
    names = [f"u{a}_{b}_{c}" for a, b, c in itertools.product(range(m1), repeat=3)]
    temps = ([f"c{i}" for i in range(m1)] + [f"t{k}_{i}" for k in range(m1) for i in range(m1)]
             + [f"{v}{i}" for v in "wrv" for i in range(m1)])
    ops = [f"T {_op(d, k, i)}" for d in range(3) for k in range(m1) for i in range(2 * m1)]
    defines = {"LANES": lanes, "ROWS": rows, "THREADS": tile.threads, "NDOF": m1 ** 3,
               "BUFFERS": tile.buffers(m, itemsize)}
    return render("gpu_propagator.cu", dtype, defines, OPERATORS=", ".join(ops), NODES=", ".join(names),
                  TEMPS=", ".join(temps), LOADS=[f"{u} = __ldg(s + {i}LL * plane);" for i, u in enumerate(names)],
                  AXES02=[f"{ln};" for ln in first], AXIS1=[f"{ln};" for ln in second])


class PropagatorKernel:
    """The propagator half step for one (m, dtype, tile); `parameters` turns the operators
    (propagator.operators, per dt) into the kernel's scalar arguments."""

    def __init__(self, xp, m: int, q: int, system, dtype, tile: Tile | None = None):
        propagator.require(system, m, q)
        self.xp, self.m, self.q = xp, m, q
        self.dtype = np.dtype(dtype)
        self.tile = fit_tile(m, self.dtype.itemsize, tile)
        self.threads = self.tile.threads
        self.module = compile_module(xp, kernel_source(m, self.dtype, self.tile.lanes, self.tile.rows))
        self._kernel = self.module.get_function("hermite_propagator")
        rt = xp.cuda.runtime  # cudaDevAttrMultiProcessorCount = 16, ...MaxThreadsPerMultiProcessor = 39
        self._resident = rt.deviceGetAttribute(16, rt.getDevice()) * rt.deviceGetAttribute(39, rt.getDevice())
        self.planes = self.tile.planes  # as launched last (0 until then if chosen per grid)
        self.cells = (self.tile.lanes - 1) * (self.tile.rows - 1) * self.planes

    def resources(self) -> dict:
        """Registers and spilled bytes per thread (for tuning reports), where CuPy tells them."""
        return {key: getattr(self._kernel, attr, None) for key, attr in (("registers", "num_regs"),
                                                                         ("spill_bytes", "local_size_bytes"))}

    def parameters(self, ops: np.ndarray) -> tuple:
        return tuple(self.dtype.type(v) for v in np.asarray(ops, dtype=float).ravel())

    def half_step(self, src, dst, params, shift: int) -> None:
        n0, n1, n2 = src.shape[-3:]
        blocks, self.planes = self.tile.grid((n0, n1, n2), self._resident)
        self.cells = (self.tile.lanes - 1) * (self.tile.rows - 1) * self.planes
        self._kernel(
            blocks, (self.threads,),
            (src, dst, np.int32(shift), np.int32(n0), np.int32(n1), np.int32(n2), np.int32(self.planes)) + params)
