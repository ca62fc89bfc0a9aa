"""Throughput of the DG kernels on the GPU: node updates per second per RK stage, and the
volume / surface / update kernels' FLOP/s and bandwidth against the device's roofline, with
the default volume-kernel variant of the device (tuning.json; tune_dg.py makes its entries).

    PYTHONPATH=src python bench/bench_dg.py [--orders 1 2 3 4 5 6] [--nodes 1.2e6] [--json out.json]

Meshes are structured Kuhn meshes of a box built in NumPy (no gmsh needed). Byte counts
are the compulsory DRAM traffic (each array read/written once; operators assumed cached),
FLOPs count the useful multiply-adds of the algorithm as 2 each; a kernel's fraction of its
roofline is max(FLOPs / peak FLOP/s, bytes / peak bandwidth) / time. Timed launches cycle
through copies of the state and mesh data (at least --footprint times the L2 size in volume
-kernel traffic) so that each launch reads DRAM as in a run, not the L2 its predecessor left
warm; at most 32 copies, so tiny meshes stay cached. Measured figures: bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

# peak figures by device: (fp32 FLOP/s, fp64 FLOP/s, DRAM bytes/s)
PEAKS = {"H100": (60e12, 30e12, 3.35e12), "H200": (60e12, 30e12, 4.8e12)}


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
        self.space, self.precision, self.device = space, precision, backend.device_name
        self.npn, nfn = space.ref.n_nodes, 4 * space.ref.n_face_nodes
        self.k = space.n_elements
        pf32, pf64, self.peak_bw = peaks_for(backend.device_name)
        self.peak_flops = pf32 if precision == "single" else pf64
        self.itemsize = 4 if precision == "single" else 8
        self.compute_capability = int(cp.cuda.Device().compute_capability)
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


def add_run_options(ap: argparse.ArgumentParser) -> None:
    """The mesh, precision and timing options of bench_dg.py and tune_dg.py."""
    ap.add_argument("--orders", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    ap.add_argument("--nodes", type=float, default=1.2e6)
    ap.add_argument("--precisions", nargs="+", default=["single", "double"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--footprint", type=float, default=3.0,
                    help="volume-kernel data cycled through per timing, in L2 sizes (0: one copy)")
    ap.add_argument("--json", default=None, help="also write the figures here")


def order_benches(args):
    """(device name, then per order and precision) an OrderBench on a box of about --nodes
    nodes, its memory freed once the caller moves on."""
    from wavescat.backend import get_backend
    from wavescat.timedomain.dg import box_tet_mesh, build_space
    from wavescat.timedomain.dg.reference import reference_tetrahedron

    backend = get_backend("gpu")
    print(f"device: {backend.device_name}; peaks fp32/fp64/BW = {peaks_for(backend.device_name)}")
    for order in args.orders:
        ref = reference_tetrahedron(order)
        cells = int(np.ceil((args.nodes / ref.n_nodes / 6) ** (1 / 3)))
        t0 = time.perf_counter()
        space = build_space(box_tet_mesh(cells), order)
        print(f"  (N={order}: mesh + space build {time.perf_counter() - t0:.1f} s)", flush=True)
        for precision in args.precisions:
            yield OrderBench(space, backend, precision, args.footprint)
            backend.xp.get_default_memory_pool().free_all_blocks()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(ap)
    args = ap.parse_args(argv)
    from wavescat.timedomain.dg.tuning import default_volume_tuning

    rows, device = [], None
    for bench in order_benches(args):
        device = bench.device
        dtype = np.float32 if bench.precision == "single" else np.float64
        default = default_volume_tuning(bench.npn, dtype, bench.compute_capability)
        row = bench.stage(default, args.repeats)
        rows.append(row)
        print_row(row, default)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": device, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
