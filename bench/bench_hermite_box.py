"""Hermite-Taylor scattering by a rigid box against the BEM at probe points, over a band, at
several grid sizes (timedomain/hermite/box_scattering.py).

The BEM side is the workflow's: `results/<case>/dg/bem_probes.csv` of a box case with
`dg_cross_check.probes` (config/examples/hermite_box.yaml), e.g.

    snakemake results/box_band/dg/bem_probes.csv --cores 2 --configfile config/examples/hermite_box.yaml
    python bench/bench_hermite_box.py --bem results/box_band/dg/bem_probes.csv --cells 4 8 --degrees 2

Prints per run: the grid, steps, seconds, and the relative L2 difference at the probes per
frequency (the DG check's measure).
"""
from __future__ import annotations

import argparse
import csv
import json
import sys
import time

import numpy as np

from wavescat.configuration.case import Case
from wavescat.timedomain.dg.scatterer import Body
from wavescat.timedomain.dg.scattering import ScatteringSetup, relative_l2
from wavescat.timedomain.hermite.box_scattering import run_box_scattering


def read_bem(path):
    rows = list(csv.DictReader(open(path)))
    freqs = sorted({float(r["frequency_hz"]) for r in rows})
    probes = np.array([[float(r[k]) for k in "xyz"] for r in rows if float(r["frequency_hz"]) == freqs[0]])
    p = np.array([[complex(float(r["re_p_bem"]), float(r["im_p_bem"])) for r in rows
                   if float(r["frequency_hz"]) == f] for f in freqs])
    return np.array(freqs), probes, p


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bem", required=True, help="bem_probes.csv of the box case")
    ap.add_argument("--size", type=float, nargs=3, default=[1.0, 1.0, 1.0], help="the box's sides (m)")
    ap.add_argument("--center", type=float, nargs=3, default=[0.0, 0.0, 0.0], help="the box's centre (m)")
    ap.add_argument("--direction", type=float, nargs=3, default=[1.0, 0.0, 0.0])
    ap.add_argument("--medium", default='{"sound_speed": 1500.0, "density": 1000.0}')
    ap.add_argument("--cells", type=float, nargs="+", default=[4.0, 8.0],
                    help="cells per shortest wavelength (the cell is then cut to divide the box)")
    ap.add_argument("--cells-per-half-side", type=float, nargs="+", default=[0.0],
                    help="cells at least along the shortest half-side, one for all --cells or one "
                    "each (hermite_cross_check.cells_per_half_side; 0: the wavelength's cell)")
    ap.add_argument("--degrees", type=int, nargs="+", default=[2])
    ap.add_argument("--sponge-gap", type=float, default=0.25, help="shortest wavelengths")
    ap.add_argument("--sponge-width", type=float, default=0.5, help="longest wavelengths")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--precision", default="double", choices=["double", "single"])
    ap.add_argument("--json", default=None, help="write the results here")
    args = ap.parse_args()
    halves = args.cells_per_half_side * (len(args.cells) if len(args.cells_per_half_side) == 1 else 1)
    if len(halves) != len(args.cells):
        ap.error("--cells-per-half-side: one value, or one for each of --cells")

    freqs, probes, bem = read_bem(args.bem)
    case = Case.from_json(json.dumps({"geometry": {"kind": "box", "size": args.size,
                                                   "center": args.center},
                                      "frequencies_hz": freqs.tolist(),
                                      "incident": {"direction": args.direction}}),
                          args.medium, required=("geometry", "frequencies_hz", "incident"))
    body = Body(case.geometry, case.boundary, case.medium)
    out = []
    print(f"rigid box {args.size} m, {len(freqs)} frequencies {freqs.min():.1f} to {freqs.max():.1f} Hz, "
          f"{len(probes)} probes, backend {args.backend} ({args.precision})")
    print(f"{'m':>2} {'cells/wl':>8} {'h':>8} {'grid':>14} {'steps':>6} {'s':>8}  relative L2 per frequency")
    for m in args.degrees:
        for cells, half in zip(args.cells, halves):
            setup = ScatteringSetup(body, 2 * np.pi * freqs, args.direction, 10.0, "box")
            t0 = time.perf_counter()
            res, run = run_box_scattering(setup, probes, m, cells, backend=args.backend,
                                          precision=args.precision, sponge_gap=args.sponge_gap,
                                          sponge_width=args.sponge_width, cells_per_half_side=half)
            took = time.perf_counter() - t0
            errs = [relative_l2(a, b) for a, b in zip(res.amplitude, bem)]
            grid = "x".join(map(str, run.grid.cells))
            print(f"{m:>2} {cells:>8g} {run.grid.h:>8.4g} {grid:>14} {res.steps:>6} {took:>8.1f}  "
                  + " ".join(f"{e:.4f}" for e in errs), flush=True)
            out.append({"m": m, "cells_per_wavelength": cells, "cells_per_half_side": half, "h": run.grid.h, "grid": run.grid.cells,
                        "steps": res.steps, "seconds": took, "relative_l2": errs,
                        "frequencies_hz": freqs.tolist()})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
