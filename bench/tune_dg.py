"""Tuning of the DG volume kernel on the GPU: a greedy search over its variants
(layout.VolumeTuning) that prints, per order and precision, the best variant as an entry of
src/wavescat/timedomain/dg/tuning.json.

    PYTHONPATH=src python bench/tune_dg.py --precisions single [--orders 3 4] [--stages tensor codegen]

Stages (TUNING_STAGES), each starting from the best variant so far (the row stages from the best
row-layout variant): register tile (elements, nodes per thread), persistent grid with prefetch
(and larger tiles), warp-aligned rows, the tile's neighbours, rows per block, operator placement;
then the tensor-core grid; then unroll, occupancy and the tensor-core options of the best.
Timings as bench_dg.py takes them (its OrderBench: data cycled through --footprint L2 sizes).
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import sys

import numpy as np

from bench_dg import OrderBench, add_run_options, order_benches  # a sibling: bench/ is on the path

from wavescat.timedomain.dg.kernel_source import NVRTC_OPTIONS, volume_source
from wavescat.timedomain.dg.layout import (SHARED_LIMIT, VolumeTuning, default_elements_per_block,
                                           fits_index32, mma_tiles, volume_layout, warp_row_width)
from wavescat.timedomain.dg.tuning import default_volume_tuning

# the row layout's stages, then the tensor-core grid, then code generation of the best of all
TUNING_STAGES = ("tile", "prefetch", "rows", "refine", "block", "operators", "tensor", "codegen")
ROW_STAGES = TUNING_STAGES[:6]


def tuning_candidates(stage: str, n_nodes: int, base: VolumeTuning, itemsize: int) -> list[VolumeTuning]:
    """Variants that `tune_dg.py` tries in one stage of its greedy search around `base`
    (the best so far): register tiles (EPT, NPT) at about the base's threads per block, their
    neighbours, rows per block, operator placement (ROW_STAGES: `base` is a row-layout
    variant), the tensor-core variants, unrolling and occupancy."""
    if stage in ROW_STAGES and base.tensor:
        raise ValueError(f"tuning stage {stage!r} varies a row-layout variant, not {base!r}")
    nt_of = lambda npt: -(-n_nodes // npt)  # noqa: E731
    threads = base.kb_volume * nt_of(base.nodes_per_thread)
    rows = lambda npt, t=threads: max(1, round(t / nt_of(npt)))  # noqa: E731
    cap = 24 if itemsize == 4 else 16  # EPT NPT: the 4 EPT NPT accumulators stay in registers
    npts = [n for n in range(1, 7) if nt_of(n) * n <= 1.1 * n_nodes]  # <= 10% padding nodes
    ept, npt = base.elements_per_thread, base.nodes_per_thread

    def fit(t):  # the most rows up to t's that fit the shared memory, or None
        for kb in range(t.kb_volume, 0, -1):
            try:
                volume_layout(n_nodes, t._replace(kb_volume=kb), itemsize)
                return t._replace(kb_volume=kb)
            except ValueError:
                pass
        return None

    def tiles(pairs):  # as many rows as fit the shared memory, up to the base's threads
        fit = lambda e: SHARED_LIMIT // (e * ((n_nodes | 1) * 4 + 9) * itemsize)  # noqa: E731
        return [base._replace(kb_volume=max(1, min(rows(n), fit(e))), elements_per_thread=e,
                              nodes_per_thread=n, unroll=0)
                for e, n in pairs if e >= 1 and n in npts and e * n <= cap]

    if stage == "tile":
        out = tiles([(1, 1)] + [(e, n) for e in (2, 4) for n in npts])
    elif stage == "rows":  # rows aligned to warps, where that pads at most 15% of the nodes
        padded = lambda n: warp_row_width(nt_of(n)) * n <= 1.15 * n_nodes  # noqa: E731
        cands = [base] + [base._replace(kb_volume=rows(n), elements_per_thread=e, nodes_per_thread=n, unroll=0)
                          for e in (1, 2, 3, 4) for n in range(1, 8) if e * n <= cap]
        out = [fit(t._replace(warp_rows=True)) for t in cands if padded(t.nodes_per_thread)]
    elif stage == "prefetch":  # large tiles hide their load latency with a persistent grid
        big = [base] + tiles([(e, n) for e, n in ((3, 3), (4, 2), (4, 3), (3, 4), (4, 4), (6, 2))])
        out = [fit(t._replace(persistent=p, d_shared=ds)) for t in big for p in (1, 2, 4) for ds in (False, True)]
    elif stage == "refine":
        i = npts.index(npt) if npt in npts else 0
        near = npts[max(0, i - 1):i + 2]
        out = tiles([(ept - 1, npt), (ept + 1, npt)] + [(ept, n) for n in near])
    elif stage == "block":
        nt = nt_of(npt)
        out = [base._replace(kb_volume=r) for r in
               {rows(npt, t) for t in (32, 64, 128, 256)} | {32 // int(np.gcd(nt, 32))}]
    elif stage == "operators":
        out = [base._replace(d_shared=s) for s in (False, True)]
    elif stage == "tensor":  # tensor-core variants: tiles per warp, element groups, prefetch, operators
        out = []
        for tr in (False, True):
            tiles = mma_tiles(n_nodes, itemsize, tr)
            # node tiles per warp, one per count of node groups, at most 6 (one node tile per warp included)
            groups = sorted(g for g in {-(-tiles.node_tiles // k) for k in range(1, tiles.node_tiles + 1)} if g <= 6)
            # at most 96 accumulator registers per lane (ET NG tiles of 4 accumulators)
            pairs = [(e, g) for e in (1, 2, 3) for g in groups
                     if e * g * 4 * tiles.elements * tiles.nodes * itemsize // 4 <= 96 * 32]
            # (staged_output, split_on_load): fp64 has no split; transposed fp32 splits a fragment once per warp
            outputs = ([(True, False)] if tr else [(False, False), (True, False)]) + \
                ([(True, True)] if itemsize == 4 else [])
            out += [VolumeTuning(kb, elements_per_thread=e, nodes_per_thread=g, tensor=True, persistent=p,
                                 d_shared=ds, staged_output=so, split_on_load=sl, transposed=tr)
                    for e, g in pairs for kb in (1, 2) for p in (0, 2) for ds in (False, True) for so, sl in outputs]
    elif stage == "codegen":
        lay = volume_layout(n_nodes, base, itemsize)
        if base.tensor:  # a full unroll of a long k loop compiles slowly
            k_steps = mma_tiles(n_nodes, itemsize, base.transposed).k_steps
            unrolls = [2, 4] + ([k_steps] if k_steps <= 16 else [])
        else:  # FMAs per m; a full unroll of a large body compiles slowly
            unrolls = [2, 4, 8] + ([n_nodes] if n_nodes * 6 * ept * npt <= 4096 else [])
        blocks = {min(32, -(-t // lay.threads)) for t in (640, 768, 896, 1024, 1280, 1536)}  # >= 31-75% occupancy
        out = [base._replace(unroll=u) for u in unrolls if u != lay.unroll] + [base._replace(min_blocks=b) for b in blocks]
        if base.persistent:  # blocks per SM of the persistent grid
            out += [base._replace(persistent=p) for p in (1, 2, 3, 4, 6, 8)]
        if base.tensor:
            out.append(base._replace(prefetch_k=not base.prefetch_k))
            if itemsize == 4:
                out.append(base._replace(split_on_load=not base.split_on_load))
    else:
        raise ValueError(f"unknown tuning stage {stage!r}")
    keep = []
    for t in out:
        if t is None:
            continue
        try:
            volume_layout(n_nodes, t, itemsize)
        except ValueError:
            continue
        if t != base and t not in keep:
            keep.append(t)
    return keep




def precompile(cp, sources, jobs: int) -> None:
    """Compile volume-kernel sources in threads (NVRTC releases the GIL) into CuPy's cache;
    whatever fails here is compiled, and reported, again when it is used."""
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
    """Greedy search from the default variant over stage_names (default: all of TUNING_STAGES);
    returns (best, {variant: volume seconds})."""
    dtype = np.float32 if bench.precision == "single" else np.float64
    best = default_volume_tuning(bench.npn, dtype, bench.compute_capability)
    times = {}
    generic = VolumeTuning(default_elements_per_block(bench.npn))  # a row-layout start
    stages = [("default", [best])] + [(name, None) for name in stage_names or TUNING_STAGES]
    for name, cands in stages:
        if cands is None:
            base = best
            if name in ROW_STAGES:  # the row stages vary the best row-layout variant
                rows = [c for c in times if not c.tensor]
                base = min(rows, key=times.get) if rows else generic
            cands = [c for c in tuning_candidates(name, bench.npn, base, bench.itemsize) if c not in times]
        index32 = fits_index32(bench.k, bench.npn)  # as GpuKernels compiles them
        precompile(bench.cp, [volume_source(bench.npn, dtype, c, False, index32) for c in cands], jobs)
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


def table_entry(npn: int, tuning: VolumeTuning) -> str:
    """The tuning.json line of a variant: "Np": {its fields that differ from the defaults}."""
    return f'    "{npn}": {json.dumps(tuning.changed())}'


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_options(ap)
    ap.add_argument("--stages", nargs="+", default=None, metavar="STAGE",
                    help=f"tuning stages to run, in order (default: all of {', '.join(TUNING_STAGES)})")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="parallel compiles")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.stages or ()) - set(TUNING_STAGES))
    if unknown:
        ap.error(f"unknown tuning stages {unknown}; choose from {', '.join(TUNING_STAGES)}")
    tuned, entries, device = [], {}, None
    for bench in order_benches(args):
        device = bench.device
        dtype = np.float32 if bench.precision == "single" else np.float64
        default = default_volume_tuning(bench.npn, dtype, bench.compute_capability)
        best, times = tune(bench, args.repeats, args.jobs, args.stages)
        v, d = bench.figures("volume", times[best]), bench.figures("volume", times[default])
        entries.setdefault(("tensor" if best.tensor else "rows", bench.precision), []).append(
            table_entry(bench.npn, best))
        order = bench.space.ref.order
        print(f"  N={order} {bench.precision}: best {best!r}: {v['frac_roofline'] * 100:.1f}% of {v['bound']} "
              f"bound ({v['gflops']:.0f} GF/s, {v['gbytes_s']:.0f} GB/s; default "
              f"{d['frac_roofline'] * 100:.1f}%)", flush=True)
        tuned.append({"order": order, "precision": bench.precision, "best": best._asdict(),
                      "variants": [{"tuning": c._asdict(), **bench.figures("volume", t)} for c, t in times.items()]})
    for (layout, precision), lines in entries.items():
        print(f'\nEntries for tuning.json, table "layout": "{layout}", "{precision}" (measured on {device}; '
              "a tensor table's entry wins over the rows table's on devices with tensor cores):")
        print(",\n".join(lines))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": device, "tune": tuned}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
