"""Throughput of the DG kernels on the GPU: node updates per second per RK stage, and the
volume / surface / update kernels' FLOP/s and bandwidth against the device's roofline.

    PYTHONPATH=src python bench/bench_dg.py [--orders 1 2 3 4 5 6] [--nodes 1.2e6] [--json out.json]

Meshes are structured Kuhn meshes of a box built in NumPy (no gmsh needed). Byte counts
are the compulsory DRAM traffic (each array read/written once; operators assumed cached),
FLOPs count the useful multiply-adds of the algorithm as 2 each.

Measured (`bench/bench_dg.py --tune`, NVIDIA H100 80GB HBM3, fp32, 1.2-1.4M nodes, best tuning,
which is now the default): volume kernel as a fraction of its roofline bound (memory-bound
for N <= 4, compute-bound for N >= 5) and node updates per second per RK stage
(volume + surface + update):
    N=1  72% of 3.35 TB/s   9.1 Gnode/s      N=4  31% of BW       7.7 Gnode/s
    N=2  58% of BW          9.1 Gnode/s      N=5  32% of 60 TF/s  7.1 Gnode/s
    N=3  50% of BW          9.1 Gnode/s      N=6  34% of 60 TF/s  6.2 Gnode/s
fp64 runs at about half these rates; surface kernel 22-43% of bandwidth.
"""
from __future__ import annotations

import argparse
import json
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


def time_kernel(cp, fn, repeats: int) -> float:
    fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        fn()
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / 1e3 / repeats


def bench_order(order: int, target_nodes: float, precisions, tunings, repeats: int, backend):
    from wavescat.timedomain.dg import AcousticsDG, box_tet_mesh, build_space
    from wavescat.timedomain.dg.reference import reference_tetrahedron

    cp = backend.xp
    ref = reference_tetrahedron(order)
    cells = int(np.ceil((target_nodes / ref.n_nodes / 6) ** (1 / 3)))
    t0 = time.perf_counter()
    space = build_space(box_tet_mesh(cells), order)
    t_build = time.perf_counter() - t0
    k, npn, nfn = space.n_elements, ref.n_nodes, 4 * ref.n_face_nodes
    name = backend.device_name
    pf32, pf64, pbw = peaks_for(name)
    rows = []
    for precision in precisions:
        peak_f = pf32 if precision == "single" else pf64
        itemsize = 4 if precision == "single" else 8
        models = kernel_models(npn, nfn, itemsize)
        for tuning in (tunings if precision == "single" else tunings[:1]):
            try:
                dg = AcousticsDG(space, backend, precision, **tuning)
            except Exception as exc:  # a tuning that does not fit (shared memory) is skipped
                print(f"  N={order} {precision} {tuning}: skipped ({type(exc).__name__}: {exc})")
                continue
            rng = np.random.default_rng(0)
            dg.q[...] = cp.asarray(rng.standard_normal(dg.q.shape).astype(dg.dtype))
            kern = dg.kernels
            times = {
                "volume": time_kernel(cp, lambda: kern.volume(dg.q, dg._rhs), repeats),
                "surface": time_kernel(cp, lambda: kern.surface(dg.q, dg._rhs, None), repeats),
                "update": time_kernel(cp, lambda: kern.update(dg.q, dg._res, dg._rhs, 0.1, 0.2, 1e-9), repeats),
            }
            stage = sum(times.values())
            row = {"order": order, "precision": precision, "elements": k, "nodes": k * npn,
                   "kb_volume": kern.kbv, "kb_surface": kern.kbs, "d_shared": kern.d_shared,
                   "elements_per_thread": kern.ept,
                   "node_updates_per_s_per_stage": k * npn / stage, "stage_s": stage}
            for kname, t in times.items():
                f, b = models[kname]
                flops, bw = f * k / t, b * k / t
                bound_t = max(f * k / peak_f, b * k / pbw)
                row[kname] = {"s": t, "gflops": flops / 1e9, "gbytes_s": bw / 1e9,
                              "frac_flops": flops / peak_f, "frac_bw": bw / pbw,
                              "bound": "compute" if f * k / peak_f > b * k / pbw else "memory",
                              "frac_roofline": bound_t / t}
            rows.append(row)
            v, s = row["volume"], row["surface"]
            print(f"N={order} {precision:6s} K={k:7d} nodes={k * npn:8d} kbv={kern.kbv:2d} "
                  f"Dsh={int(kern.d_shared)} ept={kern.ept} | stage {stage * 1e3:7.3f} ms "
                  f"{row['node_updates_per_s_per_stage'] / 1e9:6.2f} Gnode/s | vol {v['gflops']:8.0f} GF/s "
                  f"{v['gbytes_s']:6.0f} GB/s {v['frac_roofline'] * 100:5.1f}% of {v['bound']} | "
                  f"surf {s['gflops']:7.0f} GF/s {s['gbytes_s']:6.0f} GB/s {s['frac_roofline'] * 100:5.1f}% "
                  f"of {s['bound']} | upd {row['update']['gbytes_s']:6.0f} GB/s", flush=True)
            del dg
            cp.get_default_memory_pool().free_all_blocks()
    print(f"  (mesh + space build {t_build:.1f} s)", flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orders", type=int, nargs="+", default=[1, 2, 3, 4, 5, 6])
    ap.add_argument("--nodes", type=float, default=1.2e6)
    ap.add_argument("--precisions", nargs="+", default=["single", "double"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--tune", action="store_true", help="also try other elements-per-block / D placements")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    from wavescat.backend import get_backend

    backend = get_backend("gpu")
    print(f"device: {backend.device_name}; peaks fp32/fp64/BW = {peaks_for(backend.device_name)}")
    rows = []
    for order in args.orders:
        npn = (order + 1) * (order + 2) * (order + 3) // 6
        tunings = [{}]
        if args.tune:
            for ept in (1, 2, 4):
                for kb in sorted({max(1, 64 // npn), max(1, 256 // npn)}):
                    tunings.append({"kb_volume": kb, "d_shared": False, "elements_per_thread": ept})
            tunings.append({"d_shared": True})
        rows += bench_order(order, args.nodes, args.precisions, tunings, args.repeats, backend)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": backend.device_name, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
