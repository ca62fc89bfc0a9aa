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
faster. Measured 2026-11-23 on an NVIDIA H200, a plain run of the defaults
(`bench_dg.py --repeats 10`), volume kernel as a fraction of its bound:
    fp32: N=1 59.5% of BW, N=2 51.1% of BW, N=3 41.1% of BW (rows; 1.97 TB/s), N=4 36.4% of
          compute (21.8 TF/s), N=5 44.4% (26.6 TF/s), N=6 55.2% (33.1 TF/s)
    fp64: N=1 73.8% of BW, N=2 61.7% of BW, N=3 54.9% of BW (2.63 TB/s), N=4 44.9% of compute
          (13.5 TF/s), N=5 47.6% (14.3 TF/s), N=6 61.1% (18.3 TF/s)
    RK stage, fp32: 10.3-10.6 Gnode/s (N <= 3), 9.0 (N=4), 8.2 (N=5), 7.4 (N=6); fp64 3.8-6.1.
Runs a few minutes apart differ by up to 3 points (fp64 N=4 44.9-48.2%, N=5 47.6-51.8%); the
tuning runs behind the tables (`--tune --stages tensor codegen --orders N --precisions P
--repeats 10`, same machine) fall in those ranges. The goal of 40% for N >= 3 is met everywhere
but fp32 N=4 (36.4%).

Why the tensor-core layout: the row layout was bound by the L1/TEX pipe (shared-memory field
reads and read-only-cache operator reads, Nsight Compute: 92-93% busy at N = 3-5, FMA pipe
30-43%). A warp's m16n8k8 (TF32) or m8n8k4 (DMMA) product reads one fragment of 16 x 8 (8 x 4)
field values per 1024 (256) multiply-adds, where a row-layout thread loads a staged value for
every 3-6 FMAs. What made it fast, in the order found (fp64 N=4,
fp32 N=5): DMMA alone 36-38% / 35%; the rhs written through shared memory in coalesced rows
(staged_output) 47% / 40%; fp32 fields staged in fragment order with hi and lo rows and a
parity swizzle (conflict-free fragment loads, Nsight showed 44% of shared wavefronts were bank
conflicts) and paired staging threads (conflict-free stores) 44% fp32 N=5; fp32 fields split
into TF32 hi and lo when loaded instead of when staged (split_on_load: half the shared traffic)
fp32 N=4 31 -> 35%; the epilogue computing all of a lane's rhs before storing any, and the
split in three instructions per value, 36.4%.
Why fp32 N=4 stays below 40% (Nsight Compute, before the last two changes): L1/TEX 67% busy, issue slots 57%,
tensor pipe 29%, stalls mostly on fixed-latency dependencies and the two barriers per batch.
Its 327 warp instructions per element are the staging (each node's 4 loads, affine transform and
stores), the 3xTF32 split of every fragment value (3 instructions) and the epilogue; each of its
5 node tiles is a warp that loads and splits the element tile's fragments again. One warp per
element tile for all node tiles (a fifth of that) needs 80 accumulator registers and ran at 21%
for lack of warps.
Tried and dropped: one element per lane in the row layout (15-33% of compute bound); element
rows padded to warp-aligned widths help only the row layout's fp64 N=5.
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
