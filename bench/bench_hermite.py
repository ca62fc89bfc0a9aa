"""Hermite-Taylor GPU benchmark: the Table 1 case of Vargas, Chan, Hagstrom & Warburton.

Advection u_t = u_x + u_y + u_z on a periodic 150^3 grid, 200 time steps (400 half steps),
m = 1, 2, 3 with q = 3(2m+1), single precision, two-kernel and monolithic forms, and the
propagator form (gpu_propagator.py: at full q the Taylor series of advection is a translation,
three 1D operators per half step).
Prints time per run, speed-up over the paper's GTX 980 (monolithic: 2.09, 13.77, 36.17 s),
and achieved bandwidth / FLOP rate against the device roofline. FLOPs and bytes are counted
analytically from what the kernels execute (gpu.py); bytes assume every dof is read once
(perfect reuse of the shared vertices), so they are the ideal DRAM traffic.

Propagator model, per cell and half step: 12 (m+1)^4 FLOPs (three axis passes, each (m+1)^2
lines x (m+1) outputs x 2(m+1) FMA inputs: 192, 972, 3072 for m = 1, 2, 3; halo lanes and rows
execute about 20% more, not counted) against 2 (m+1)^3 x 4 bytes (64, 216, 512): 3 to 6
FLOP/byte, under the fp32 ridge (14 on an H200, 18 on an H100), so its roofline is the bandwidth.
Its setting column is the tile LANESxROWSxPLANES (--tiles; planes 0 = about two waves).

    PYTHONPATH=src python bench/bench_hermite.py [--cells 150] [--steps 200] [--json out.json]
    PYTHONPATH=src python bench/bench_hermite.py --forms monolithic-shared --cells-per-block 4 8 16 32

--forms picks the half-step forms (HermiteSolver's kernel), --cells-per-block the shared
forms' block sizes and --tiles the propagator's tiles to time. Measured figures: bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

import numpy as np

from wavescat.timedomain.hermite.gpu import FORMS

PAPER_SECONDS = {"monolithic": {1: 2.09, 2: 13.77, 3: 36.17}, "two-kernel": {1: 2.42, 2: 13.77, 3: 37.23}}
# peak DRAM bandwidth (B/s) and fp32 FMA rate (FLOP/s, non-tensor) by device name
ROOFLINES = {"H200": (4.8e12, 67e12), "H100": (3.35e12, 60e12), "A100": (2.0e12, 19.5e12)}


def roofline(device: str):
    for key, peaks in ROOFLINES.items():
        if key in device:
            return peaks
    return (np.nan, np.nan)


def flops_per_cell(m: int, q: int, couplings, n_fields: int) -> dict:
    """FLOPs one cell costs in one half step, as the CUDA kernels execute them (FMA = 2)."""
    n, m1, top = 2 * m + 2, m + 1, 3 * (2 * m + 1)
    # three passes of H~: per column, m+1 even/odd sums of pairs, then n outputs x (m+1) FMAs
    interp = 3 * n_fields * n * n * (2 * m1 + 2 * n * m1)
    taylor = 0
    for s in range(1, q + 1):
        for j0 in range(n):
            for j1 in range(n):
                if max(0, j0 - m) + max(0, j1 - m) > q - s or j0 + j1 > top - s:
                    continue  # idle or zero column
                for d, _, _, _ in couplings:
                    if (d == 0 and j0 + 1 < n) or (d == 1 and j1 + 1 < n):
                        taylor += 2 * n
                    elif d == 2:
                        taylor += 2 * (n - 1)
                taylor += n_fields * m1  # sums of the centre data
    return {"interpolate": interp, "evolve": taylor}


def register_flops_per_cell(m: int, q: int, couplings) -> dict:
    """FLOPs of the generated straight-line register kernel: its arithmetic operators."""
    from wavescat.timedomain.hermite.gpu_cell import generate_body

    rhs = [re.sub(r"L\([^)]*\)", "K", line.split("=", 1)[1]) for line in generate_body(m, q, couplings, 1)]
    ops = sum(r.count(op) for r in rhs for op in ("+", "-", "*"))
    return {"total": ops}


def _ops(lines) -> int:
    rhs = [re.sub(r"\bL\([^)]*\)", "K", line.split("=", 1)[1]) for line in lines if "SHFL" not in line]
    return sum(r.count(op) for r in rhs for op in ("+", "-", "*"))


def warp_flops_per_cell(m: int, q: int, couplings) -> dict:
    """FLOPs of the generated warp kernel: 2m+2 lanes per cell, shuffles not counted."""
    from wavescat.timedomain.hermite import gpu_warp

    n, top = 2 * m + 2, 3 * (2 * m + 1)
    interp = n * _ops(gpu_warp._interp_2d(m, 1) + gpu_warp._interp_axis0(m, 1))
    evolve = n * sum(_ops(st) for s in range(1, q + 1)
                     for e12, d12, st in gpu_warp._stage(m, q, couplings, 1) if e12 <= q - s and d12 <= top - s)
    return {"interpolate": interp, "evolve": evolve}


def propagator_flops_per_cell(m: int) -> dict:
    """FLOPs of the propagator kernel's three axis passes (gpu_propagator.model)."""
    from wavescat.timedomain.hermite.gpu_propagator import model

    return {"passes": model(m, 4)["flops"]}


def bytes_per_cell(m: int, n_fields: int, form: str, itemsize: int) -> int:
    dofs = n_fields * (m + 1) ** 3
    moved = 2 * dofs  # read the source once, write the target once
    if form == "two-kernel":
        moved += 2 * n_fields * (2 * m + 2) ** 3  # coefficients written, then read back
    return moved * itemsize


def _settings(form: str, m: int, args) -> list[dict]:
    """HermiteSolver's tuning arguments of each run of `form` at degree m; [] if it does not fit."""
    from wavescat.timedomain.hermite import gpu_cell, gpu_warp
    from wavescat.timedomain.hermite.gpu_propagator import Tile, fit_tile

    if form == "monolithic-register" and (2 * m + 2) ** 3 > gpu_cell.MAX_VALUES:
        return []
    if form == "monolithic-warp" and (2 * m + 2) ** 2 > gpu_warp.MAX_VALUES:
        return []
    if form == "propagator":  # distinct tiles once shrunk to fit
        return [{"tile": t} for t in dict.fromkeys(fit_tile(m, 4, Tile.parse(t)) for t in args.tiles)]
    if form in ("two-kernel", "monolithic-shared", "monolithic"):
        return [{"cells_per_block": cap or None} for cap in args.cells_per_block]
    return [{}]


def _describe(kernel) -> str:
    """The tuning setting a run used: the propagator's tile (planes as launched), else cells per block."""
    tile = getattr(kernel, "tile", None)
    return f"{tile.lanes}x{tile.rows}x{kernel.planes}" if tile else str(kernel.cells)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=150)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--degrees", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--forms", nargs="+", choices=FORMS,
                        default=["two-kernel", "monolithic-shared", "monolithic-register", "monolithic-warp",
                                 "propagator"], help="half-step forms to time")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cells-per-block", type=int, nargs="+", default=[0],
                        help="caps to try for the shared forms (0: the default choice)")
    parser.add_argument("--tiles", nargs="+", default=["32x8x0", "32x4x0", "32x16x0", "32x8x8", "32x8x24"],
                        help="propagator tiles LANESxROWSxPLANES to try (rows shrink to fit shared memory)")
    parser.add_argument("--json", help="also write the figures here")
    args = parser.parse_args(argv)

    from wavescat.backend import get_backend
    from wavescat.timedomain.hermite import HermiteSolver, advection

    backend = get_backend("gpu")
    xp = backend.xp
    bw_peak, fl_peak = roofline(backend.device_name)
    ncells = args.cells ** 3
    system = advection((1.0, 1.0, 1.0))
    print(f"device: {backend.device_name}; roofline {bw_peak / 1e12:.2f} TB/s, {fl_peak / 1e12:.0f} TFLOP/s fp32")
    print(f"advection, {args.cells}^3 cells, {args.steps} steps ({2 * args.steps} half steps), single precision")
    print(f"{'m':>2} {'q':>3} {'form':>19} {'setting':>9} {'time s':>9} {'paper s':>8} {'speed-up':>9} "
          f"{'TB/s':>6} {'%bw':>5} {'TFLOP/s':>8} {'%peak':>6}")
    results = []
    runs = [(m, form, tuning) for m in args.degrees for form in args.forms for tuning in _settings(form, m, args)]
    for m, form, tuning in runs:
        solver = HermiteSolver(system, args.cells, 1.0, m, cfl=0.9, backend="gpu",
                               precision="single", kernel=form, **tuning)
        solver.state[...] = (1e-2 * xp.random.standard_normal(solver.state.shape)).astype(solver.dtype)
        solver.step(2)  # warm-up: compiles, allocates the coefficient buffer
        xp.cuda.Device().synchronize()
        times = []
        for _ in range(args.repeats):
            start, end = xp.cuda.Event(), xp.cuda.Event()
            start.record()
            solver.step(args.steps)
            end.record()
            end.synchronize()
            times.append(xp.cuda.get_elapsed_time(start, end) / 1e3)
        finite = bool(xp.isfinite(solver.state).all())
        t = min(times)
        fl = (register_flops_per_cell(m, solver.q, system.couplings()) if form == "monolithic-register"
              else warp_flops_per_cell(m, solver.q, system.couplings()) if form == "monolithic-warp"
              else propagator_flops_per_cell(m) if form == "propagator"
              else flops_per_cell(m, solver.q, system.couplings(), 1))
        setting = _describe(solver._gpu)
        flops = sum(fl.values()) * ncells * 2 * args.steps
        moved = bytes_per_cell(m, 1, form, 4) * ncells * 2 * args.steps
        paper = PAPER_SECONDS["monolithic"][m] * (args.cells / 150) ** 3 * args.steps / 200
        row = {"m": m, "q": solver.q, "form": form, "seconds": t, "all_seconds": times,
               "paper_monolithic_s": paper, "speedup_vs_paper_monolithic": paper / t,
               "bandwidth_Bps": moved / t, "bandwidth_fraction": moved / t / bw_peak,
               "flops_per_s": flops / t, "flop_fraction": flops / t / fl_peak,
               "flops_per_cell_half_step": fl, "bytes_per_cell_half_step": bytes_per_cell(m, 1, form, 4),
               "cells_per_block": solver._gpu.cells, "threads_per_block": solver._gpu.threads,
               "setting": setting, "kernel": type(solver._gpu).__name__, "finite": finite}
        if form == "propagator":
            row["resources"] = solver._gpu.resources()
        results.append(row)
        print(f"{m:>2} {solver.q:>3} {form:>19} {setting:>9} {t:9.4f} {paper:8.2f} {paper / t:8.1f}x "
              f"{moved / t / 1e12:6.2f} {100 * moved / t / bw_peak:4.0f}% {flops / t / 1e12:8.2f} "
              f"{100 * flops / t / fl_peak:5.0f}%", row.get("resources", ""), flush=True)
        del solver
        xp.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": backend.device_name, "cells": args.cells, "steps": args.steps,
                       "roofline": {"bandwidth_Bps": bw_peak, "fp32_flops": fl_peak}, "runs": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
