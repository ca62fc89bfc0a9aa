"""Accuracy and cost of the time-domain cross-check on a unit sphere in a unit medium (c = 1,
rho = 1): `wavescat dg-scatter` itself, run for a sphere case of each boundary kind, and the
relative L2 difference of its amplitudes to the exact series at the probes (per frequency),
with the run's elements, steps, wall and CPU seconds.

    PYTHONPATH=src python bench/bench_dg_scatter.py [--kinds rigid pressure_release impedance fluid]
        [--ka 2] [--count 1] [--backend cpu] [--json out.json] [-- dg-scatter size options]

`--ka 1 4 --count 8` is one pulse over 8 frequencies from ka = 1 to 4. Without size options
the run takes the CPU sizes on the CPU and the case's (order 4, 16 points per wavelength) on
the GPU, as the workflow does; e.g. `-- --full-on-cpu` keeps the case's on the CPU. The probes
are the default config's (about 1.6 radii). CPU seconds count every thread of the process
(NUMBA_NUM_THREADS=1: one core's). Measured figures: bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from wavescat.cli import main as wavescat

PROBES = [[0, 0, -1.6], [0, 0, 1.6], [1.6, 0, 0], [1.2, 0, 1.2], [-1.2, 0, -1.2], [0, 1.5, 0.5]]
BOUNDARIES = {"rigid": {"kind": "rigid"}, "pressure_release": {"kind": "pressure_release"},
              "impedance": {"kind": "impedance", "admittance": [0.5, 0.0]},
              "fluid": {"kind": "fluid", "density_ratio": 2.0, "sound_speed_ratio": 0.8}}


def run(kind: str, ka, backend: str, options: list[str]) -> dict:
    case = {"geometry": {"kind": "sphere", "radius": 1.0}, "boundary": BOUNDARIES[kind],
            "frequencies_hz": [float(k / (2 * np.pi)) for k in ka], "incident": {"direction": [0, 0, 1]},
            "dg_cross_check": {"order": 4, "points_per_wavelength": 16.0, "probes": PROBES}}
    with tempfile.TemporaryDirectory() as tmp:
        summary = os.path.join(tmp, "summary.json")
        t0, c0 = time.perf_counter(), time.process_time()
        rc = wavescat(["dg-scatter", "--case", json.dumps(case), "--medium", '{"density": 1, "sound_speed": 1}',
                       "--out", os.path.join(tmp, "dg.csv"), "--summary", summary, "--backend", backend, *options])
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if rc:
            sys.exit(f"dg-scatter failed for {kind}")
        with open(summary) as fh:
            row = json.load(fh)
    row.update(kind=kind, ka=list(ka), wall_s=wall, cpu_s=cpu)
    errors = ", ".join(f"{e:.4f} (ka {k:.3g})" for k, e in zip(ka, row["relative_l2_vs_exact"]))
    print(f"{kind} sphere, N={row['order']}, {row['points_per_wavelength']:g} points per wavelength "
          f"({row['sizes']} sizes), {row['elements']} elements, {row['steps']} steps: run {row['run_s']:.1f} s, "
          f"{wall:.1f} s with meshing ({cpu:.1f} CPU s) on {row['device']}; relative L2 to the series {errors}",
          flush=True)
    return row


def main(argv=None) -> list[dict]:
    argv = sys.argv[1:] if argv is None else argv
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kinds", nargs="+", default=list(BOUNDARIES), choices=list(BOUNDARIES))
    p.add_argument("--ka", type=float, nargs="+", default=[2.0], help="one ka, or the band's ends")
    p.add_argument("--count", type=int, default=1, help="frequencies of the band")
    p.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    p.add_argument("--json", default=None)
    a = p.parse_args(argv[:split])
    ka = np.linspace(min(a.ka), max(a.ka), a.count) if a.count > 1 else np.array(a.ka[:1])
    rows = [run(kind, ka, a.backend, argv[split + 1:]) for kind in a.kinds]
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=2))
    return rows


if __name__ == "__main__":
    main()
