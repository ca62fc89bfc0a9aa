"""Throughput of the DG kernels on the GPU: node updates per second per RK stage, and the
volume / surface / update kernels' FLOP/s and bandwidth against the device's roofline.

    PYTHONPATH=src python bench/bench_dg.py [--orders 1 2 3 4 5 6] [--nodes 1.2e6] [--json out.json]
    PYTHONPATH=src python bench/bench_dg.py --tune --precisions single     # volume-kernel variants

Meshes are structured Kuhn meshes of a box built in NumPy (no gmsh needed). Byte counts
are the compulsory DRAM traffic (each array read/written once; operators assumed cached),
FLOPs count the useful multiply-adds of the algorithm as 2 each; a kernel's fraction of its
roofline is max(FLOPs / peak FLOP/s, bytes / peak bandwidth) / time. Timed launches cycle
through copies of the state and mesh data (at least --footprint times the L2 size in volume
-kernel traffic) so that each launch reads DRAM as in a run, not the L2 its predecessor left
warm (a single 1.2M-node fp32 state and its output, about 43 MB, would fit the 50 MB L2;
at most 32 copies, so tiny meshes stay cached).

--tune runs a greedy search over the volume kernel's variants (gpu_kernels.TUNING_STAGES: for
the row layout register tile (elements, nodes per thread), persistent grid with prefetch (and
larger tiles), its neighbours, rows per block, operator packing and placement; then the
tensor-core grid; then unroll, occupancy and the tensor-core options of the best), each stage
starting from the best so far (the row stages from the best row-layout variant), and prints per
order the best variant, its fraction of the bound and the line for its table (VOLUME_TUNING or
TENSOR_TUNING, _FP64 when tuning double). --stages runs some stages only.

Measured before the register-tiled volume kernel (fp32, 1.2-1.4M nodes, a single data copy;
fraction of the volume kernel's roofline bound; node updates per second per RK stage):
    NVIDIA H100 80GB HBM3: N=1 72% of BW 9.1 Gnode/s, N=2 58%, N=3 50%, N=4 31% of BW 7.7 Gnode/s,
      N=5 32% of compute 7.1 Gnode/s, N=6 34% of compute 6.2 Gnode/s (fp64 about half the rate)
    NVIDIA H200: N=3 39.5% of BW, N=4 26.6%, N=5 32.4%, N=6 35.4% of compute
The row layout after its tuning (H200, 3x L2 of data cycled, earlier the same day), now the
fallback below compute capability 8.0: fp32 N=3 42.3% of BW, N=4 29.7% of compute, N=5 37.6%, N=6 43.9%; fp64 N=3
42.2% of BW, N=4 38.0%, N=5 43.0%, N=6 51.1%.

The tensor-core layout (VolumeTuning.tensor; see gpu_kernels._MMA), the default where it is
faster. Measured 2026-11-23 on an NVIDIA H200 (1980 MHz), a plain run of the defaults
(`bench_dg.py --repeats 10`), volume kernel as a fraction of its bound:
    fp32: N=1, 2 (rows) 61.4%, 50.7% of BW, N=3 44.3% of BW (2.13 TB/s), N=4 40.4% of
          compute (24.2 TF/s), N=5 58.4% (35.0 TF/s), N=6 61.2% (36.7 TF/s)
    fp64: N=1, 2 (rows) 76.0%, 61.8% of BW, N=3 56.0% of BW (2.69 TB/s), N=4 50.6% of
          compute (15.2 TF/s), N=5 61.5% (18.5 TF/s), N=6 68.1% (20.4 TF/s)
    RK stage, fp32: 10.3-10.5 Gnode/s (N <= 3), 9.0 (N=4), 8.5 (N=5), 7.4 (N=6); fp64 3.9-6.1.
fp32 N=4 is the closest to the 40% goal: eight more timings of its default in three device calls
gave 40.2-40.6% (runs a few minutes apart have differed by up to 3 points before).
How the tensor-core layout got there (fp32 N=4 unless said; the gains overlap):
    DMMA alone (fp64 N=4) 36-38%; the rhs written through shared memory in coalesced rows
    (staged_output) 47% fp64; fp32 fields staged in fragment order and split into TF32 hi and lo
    when loaded (split_on_load: half the shared traffic) 31 -> 35%; earlier epilogue and split
    work 36.4%. Then: the last k step as m16n8k4 where it holds at most 4 nodes (Np % 8 in 1..4)
    37%; the split in two instructions (the mma truncates lo) and the affine factors as real4
    rows 38%; products field by field (56 registers, not 64: 7 blocks per SM) 39%; the padding
    nodes staged as zeros with the batch (no prologue); 32-bit indices; staging thread i writes
    fragment slot i (contiguous stores, shifts and masks instead of the swizzle's index
    arithmetic): 848 -> 824 instructions per warp and batch, from 1136; two element tiles per
    warp with the next k step's fragments loaded ahead (prefetch_k) at 5 blocks per SM 40.4%.
    The same changes took fp32 N=5 from 44% to 58%, N=6 55 -> 61%, fp64 N=4-6 45-61 -> 51-68%.
Tried and dropped: one element per lane in the row layout (15-33% of compute bound); element
rows padded to warp-aligned widths help only the row layout's fp64 N=5; the transposed products
(VolumeTuning.transposed: operators as the mma's A, tiles of 8 elements x 16 nodes, each field
fragment split once per warp) are slower at N <= 5 (23-37% at N=4: twice the operator traffic
per element, 16-node tiles pad 35 nodes to 48) but the fp32 default at N=6.
Why fp32 N=4 stays lowest: its 35 nodes fill 5 node tiles of 8 (the fifth holds 3) and 4.5 k
steps; staging (global loads, affine transform, fragment-order stores) costs about as many
instructions as the products and their splits; Nsight Compute (earlier) showed no pipe
saturated (L1/TEX 67%, issue 57%, tensor 29%) and stalls on dependencies and barriers.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import os
import sys
import time

import numpy as np

# peak figures by device: (fp32 FLOP/s, fp64 FLOP/s, DRAM bytes/s)
PEAKS = {"H100": (60e12, 30e12, 3.35e12), "H200": (60e12, 30e12, 4.8e12)}
# the volume-kernel table before register tiles over nodes, as a reference in --tune
PREVIOUS_TUNING = {20: dict(kb_volume=3, elements_per_thread=2), 35: dict(kb_volume=7, elements_per_thread=4),
                   56: dict(kb_volume=1, elements_per_thread=2), 84: dict(kb_volume=1, elements_per_thread=4)}


def peaks_for(name: str):
    for key, val in PEAKS.items():
        if key in name:
            return val
    return PEAKS["H100"]


def kernel_models(npn: int, nfn: int, itemsize: int, sponge: bool = False):
    """Per element: (flops, bytes) of the volume, surface and update kernels."""
    vol_flops = npn * (12 * npn + 15 + 3 * 5 + 1 + (8 if sponge else 0))
    vol_bytes = (8 * npn + 9 + (npn if sponge else 0)) * itemsize
    # flux ~ 30 flops per face node; lift: 4 fields x NFN multiply-adds per node
    surf_flops = nfn * 30 + npn * 8 * nfn
    surf_bytes = (4 * npn + 8 * npn + 16) * itemsize + nfn * 8  # q, rhs read+write, face geo, vmapP
    upd_flops = 4 * npn * 4
    upd_bytes = 4 * npn * 5 * itemsize
    return {"volume": (vol_flops, vol_bytes), "surface": (surf_flops, surf_bytes),
            "update": (upd_flops, upd_bytes)}


def time_launches(cp, fns, repeats: int) -> float:
    """Mean seconds per launch over `repeats` rounds through fns (one per data copy)."""
    for fn in fns:
        fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        for fn in fns:
            fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3 / (repeats * len(fns))


class OrderBench:
    """One order and precision on the GPU: copies of the solver data, the kernels' models."""

    def __init__(self, space, backend, precision: str, footprint: float):
        from wavescat.timedomain.dg import AcousticsDG

        self.cp = cp = backend.xp
        self.space, self.precision = space, precision
        self.npn, nfn = space.ref.n_nodes, 4 * space.ref.n_face_nodes
        self.k = space.n_elements
        pf32, pf64, self.peak_bw = peaks_for(backend.device_name)
        self.peak_flops = pf32 if precision == "single" else pf64
        self.itemsize = 4 if precision == "single" else 8
        from wavescat.timedomain.dg.gpu_kernels import TENSOR_CORES_MIN_CC
        self.tensor_cores = int(cp.cuda.Device().compute_capability) >= TENSOR_CORES_MIN_CC
        self.models = kernel_models(self.npn, nfn, self.itemsize)
        try:
            l2 = int(cp.cuda.Device().attributes["L2CacheSize"])
        except Exception:  # attribute name differs between CuPy versions
            l2 = 50 << 20
        copies = min(32, max(1, math.ceil(footprint * l2 / (self.models["volume"][1] * self.k))))
        rng = np.random.default_rng(0)
        self.sets = []
        for _ in range(copies):
            dg = AcousticsDG(space, backend, precision)
            dg.q[...] = cp.asarray(rng.standard_normal(dg.q.shape).astype(dg.dtype))
            self.sets.append(dg)

    def figures(self, kname: str, t: float) -> dict:
        f, b = (x * self.k for x in self.models[kname])
        bound_t = max(f / self.peak_flops, b / self.peak_bw)
        return {"s": t, "gflops": f / t / 1e9, "gbytes_s": b / t / 1e9, "frac_flops": f / t / self.peak_flops,
                "frac_bw": b / t / self.peak_bw, "frac_roofline": bound_t / t,
                "bound": "compute" if f / self.peak_flops > b / self.peak_bw else "memory"}

    def kernels(self, tuning):
        from wavescat.timedomain.dg.gpu_kernels import GpuKernels

        return [GpuKernels(dg.ops, self.cp, **tuning._asdict()) for dg in self.sets]

    def volume_time(self, tuning, repeats: int) -> float:
        fns = [lambda kn=kn, dg=dg: kn.volume(dg.q, dg._rhs) for kn, dg in zip(self.kernels(tuning), self.sets)]
        return time_launches(self.cp, fns, repeats)

    def stage(self, tuning, repeats: int) -> dict:
        """Volume, surface and update kernels with `tuning`: a result row."""
        pairs = list(zip(self.kernels(tuning), self.sets))
        times = {
            "volume": time_launches(self.cp, [lambda kn=kn, dg=dg: kn.volume(dg.q, dg._rhs) for kn, dg in pairs], repeats),
            "surface": time_launches(self.cp, [lambda kn=kn, dg=dg: kn.surface(dg.q, dg._rhs, None)
                                               for kn, dg in pairs], repeats),
            "update": time_launches(self.cp, [lambda kn=kn, dg=dg: kn.update(dg.q, dg._res, dg._rhs, 0.1, 0.2, 1e-9)
                                              for kn, dg in pairs], repeats),
        }
        total = sum(times.values())
        nodes = self.k * self.npn
        row = {"order": self.space.ref.order, "precision": self.precision, "elements": self.k, "nodes": nodes,
               "copies": len(self.sets), "tuning": tuning._asdict(), "kb_surface": pairs[0][0].kbs,
               "node_updates_per_s_per_stage": nodes / total, "stage_s": total}
        row.update({kname: self.figures(kname, t) for kname, t in times.items()})
        return row


def print_row(row: dict, tuning) -> None:
    v, s = row["volume"], row["surface"]
    print(f"N={row['order']} {row['precision']:6s} K={row['elements']:7d} nodes={row['nodes']:8d} "
          f"x{row['copies']} | stage {row['stage_s'] * 1e3:7.3f} ms "
          f"{row['node_updates_per_s_per_stage'] / 1e9:6.2f} Gnode/s | vol {v['gflops']:8.0f} GF/s "
          f"{v['gbytes_s']:6.0f} GB/s {v['frac_roofline'] * 100:5.1f}% of {v['bound']} | "
          f"surf {s['gflops']:7.0f} GF/s {s['gbytes_s']:6.0f} GB/s {s['frac_roofline'] * 100:5.1f}% "
          f"of {s['bound']} | upd {row['update']['gbytes_s']:6.0f} GB/s | {tuning!r}", flush=True)


def precompile(cp, sources, jobs: int) -> None:
    """Compile volume-kernel sources in threads (NVRTC releases the GIL) into CuPy's cache;
    whatever fails here is compiled, and reported, again when it is used."""
    from wavescat.timedomain.dg.gpu_kernels import NVRTC_OPTIONS

    device = cp.cuda.runtime.getDevice()

    def one(src):
        try:
            cp.cuda.Device(device).use()
            cp.RawModule(code=src, options=NVRTC_OPTIONS).compile()
        except Exception:
            pass

    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        list(pool.map(one, sources))


def tune(bench: OrderBench, repeats: int, jobs: int, stage_names=None):
    """Greedy search from the default variant over stage_names (default: all of
    gpu_kernels.TUNING_STAGES); returns (best, {variant: volume seconds})."""
    from wavescat.timedomain.dg import gpu_kernels as gk

    dtype = np.float32 if bench.precision == "single" else np.float64
    best = gk.default_volume_tuning(bench.npn, dtype, bench.tensor_cores)
    times = {}
    previous = gk.VolumeTuning(**PREVIOUS_TUNING[bench.npn]) if bench.npn in PREVIOUS_TUNING else None
    generic = gk.VolumeTuning(gk.default_elements_per_block(bench.npn))  # a row-layout start
    stages = [("default", [best])] + ([("previous", [previous])] if previous else [])
    stages += [(name, None) for name in stage_names or gk.TUNING_STAGES]
    for name, cands in stages:
        if cands is None:
            base = best
            if name in gk.ROW_STAGES:  # the row stages vary the best row-layout variant
                rows = [c for c in times if not c.tensor]
                base = min(rows, key=times.get) if rows else generic
            cands = [c for c in gk.tuning_candidates(name, bench.npn, base, bench.itemsize) if c not in times]
        index32 = gk.fits_index32(bench.k, bench.npn)  # as GpuKernels compiles them
        precompile(bench.cp, [gk.volume_source(bench.npn, dtype, c, False, index32) for c in cands], jobs)
        for c in cands:
            try:
                times[c] = t = bench.volume_time(c, repeats)
            except Exception as exc:  # a variant the device cannot compile or launch is skipped
                print(f"    {name:9s} {c!r}: skipped ({type(exc).__name__}: {str(exc)[:120]})", flush=True)
                continue
            v = bench.figures("volume", t)
            print(f"    {name:9s} {c!r}: {v['frac_roofline'] * 100:5.1f}% of {v['bound']} "
                  f"({v['gflops']:6.0f} GF/s, {v['gbytes_s']:5.0f} GB/s)", flush=True)
        best = min(times, key=times.get)
    return best, times


def table_name(tuning, precision: str) -> str:
    """The gpu_kernels table a tuned variant belongs in."""
    return ("TENSOR_TUNING" if tuning.tensor else "VOLUME_TUNING") + ("_FP64" if precision == "double" else "")


def table_line(npn: int, tuning, figures: dict, device: str, precision: str) -> str:
    return (f"    {npn}: {tuning!r},  # {device} {'fp32' if precision == 'single' else 'fp64'}: "
            f"{figures['frac_roofline'] * 100:.0f}% of {figures['bound']} bound")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orders", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    ap.add_argument("--nodes", type=float, default=1.2e6)
    ap.add_argument("--precisions", nargs="+", default=["single", "double"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--footprint", type=float, default=3.0,
                    help="volume-kernel data cycled through per timing, in L2 sizes (0: one copy)")
    ap.add_argument("--tune", action="store_true", help="greedy search over the volume kernel's variants")
    ap.add_argument("--stages", nargs="+", default=None, metavar="STAGE",
                    help="tuning stages to run, in order (default: all of gpu_kernels.TUNING_STAGES)")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="parallel compiles in --tune")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from wavescat.backend import get_backend
    from wavescat.timedomain.dg import box_tet_mesh, build_space
    from wavescat.timedomain.dg.gpu_kernels import TUNING_STAGES, default_volume_tuning
    unknown = sorted(set(args.stages or ()) - set(TUNING_STAGES))
    if unknown:
        ap.error(f"unknown tuning stages {unknown}; choose from {', '.join(TUNING_STAGES)}")
    from wavescat.timedomain.dg.reference import reference_tetrahedron

    backend = get_backend("gpu")
    device = backend.device_name
    print(f"device: {device}; peaks fp32/fp64/BW = {peaks_for(device)}")
    rows, tuned, lines = [], [], {}
    for order in args.orders:
        ref = reference_tetrahedron(order)
        cells = int(np.ceil((args.nodes / ref.n_nodes / 6) ** (1 / 3)))
        t0 = time.perf_counter()
        space = build_space(box_tet_mesh(cells), order)
        print(f"  (N={order}: mesh + space build {time.perf_counter() - t0:.1f} s)", flush=True)
        for precision in args.precisions:
            bench = OrderBench(space, backend, precision, args.footprint)
            dtype = np.float32 if precision == "single" else np.float64
            default = default_volume_tuning(ref.n_nodes, dtype, bench.tensor_cores)
            row = bench.stage(default, args.repeats)
            rows.append(row)
            print_row(row, default)
            if args.tune:
                best, times = tune(bench, args.repeats, args.jobs, args.stages)
                v, d = bench.figures("volume", times[best]), bench.figures("volume", times[default])
                line = table_line(ref.n_nodes, best, v, device, precision)
                lines.setdefault(table_name(best, precision), []).append(line)
                print(f"  N={order} {precision}: best {best!r}: {v['frac_roofline'] * 100:.1f}% of {v['bound']} "
                      f"bound ({v['gflops']:.0f} GF/s, {v['gbytes_s']:.0f} GB/s; default "
                      f"{d['frac_roofline'] * 100:.1f}%)\n  {line.strip()}", flush=True)
                tuned.append({"order": order, "precision": precision, "best": best._asdict(),
                              "variants": [{"tuning": c._asdict(), **bench.figures("volume", t)}
                                           for c, t in times.items()]})
            del bench
            backend.xp.get_default_memory_pool().free_all_blocks()
    for name, table in lines.items():
        print(f"\nLines for gpu_kernels.{name} (replace the entry of each order; a tensor-core table's entry")
        print("wins over the row table's on devices with tensor cores):")
        print("\n".join(table))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": device, "rows": rows, "tune": tuned}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
