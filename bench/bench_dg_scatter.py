"""Accuracy and cost of the time-domain cross-check (`wavescat dg-scatter`) on a unit sphere:
the relative L2 difference of the DG amplitudes to the exact series at the probes, per
frequency, with the run's elements, steps, wall and CPU seconds, for the sizes given.

    PYTHONPATH=src python bench/bench_dg_scatter.py [--kind rigid] [--ka 2] [--order 3]
        [--points-per-wavelength 9] [--h-surface 0.3] [--sponge-gap 0.25] [--sponge-width 0.5]
        [--sponge-decay 3] [--probe-radius 1.6] [--backend cpu] [--json out.json]

`--ka 1 4 --count 8` runs one pulse over 8 frequencies from ka = 1 to 4. The probes are the
default config's six sphere_ka2 probes scaled to --probe-radius. CPU seconds count every
thread of the process (NUMBA_NUM_THREADS=1 makes them a single core's). Measured figures:
bench/README.md.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from wavescat.backend import get_backend
from wavescat.reference.sphere import series_for
from wavescat.timedomain.dg.gmsh_volume import scattering_volume_mesh
from wavescat.timedomain.dg.scatterer import Body
from wavescat.timedomain.dg.scattering import (ScatteringSetup, relative_l2, run_scattering,
                                               scattering_mesh_sizes)

PROBES = np.array([[0, 0, -1.6], [0, 0, 1.6], [1.6, 0, 0], [1.2, 0, 1.2], [-1.2, 0, -1.2], [0, 1.5, 0.5]])
BOUNDARIES = {"rigid": None, "pressure_release": {"kind": "pressure_release"},
              "impedance": {"kind": "impedance", "admittance": [0.5, 0.0]},
              "fluid": {"kind": "fluid", "density_ratio": 2.0, "sound_speed_ratio": 0.8}}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", default="rigid", choices=list(BOUNDARIES))
    p.add_argument("--ka", type=float, nargs="+", default=[2.0], help="one ka, or the band's ends")
    p.add_argument("--count", type=int, default=1, help="frequencies of the band")
    p.add_argument("--order", type=int, default=3)
    p.add_argument("--points-per-wavelength", type=float, default=9.0)
    p.add_argument("--h-surface", type=float, default=0.3)
    p.add_argument("--sponge-gap", type=float, default=0.25)
    p.add_argument("--sponge-width", type=float, default=0.5)
    p.add_argument("--sponge-decay", type=float, default=3.0)
    p.add_argument("--probe-radius", type=float, default=1.6)
    p.add_argument("--ramp-periods", type=float, default=2.0)
    p.add_argument("--settle-periods", type=float, default=1.0)
    p.add_argument("--dft-periods", type=int, default=1)
    p.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    p.add_argument("--precision", default="double", choices=["double", "single"])
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    ks = np.linspace(min(a.ka), max(a.ka), a.count) if a.count > 1 else np.array(a.ka[:1])
    body = Body({"kind": "sphere", "radius": 1.0}, BOUNDARIES[a.kind], {"density": 1.0, "sound_speed": 1.0})
    probes = PROBES / np.linalg.norm(PROBES, axis=1)[:, None] * a.probe_radius
    wavelength = 2 * np.pi / ks.max()
    start = a.probe_radius + a.sponge_gap * wavelength
    setup = ScatteringSetup(body, ks, [0, 0, 1], start + a.sponge_width * wavelength, sponge_start=start,
                            sponge_decay=a.sponge_decay, ramp_periods=a.ramp_periods,
                            settle_periods=a.settle_periods, dft_periods=a.dft_periods)
    t0 = time.perf_counter()
    h_in, h_out, h_fill = scattering_mesh_sizes(setup, a.order, a.points_per_wavelength, a.h_surface)
    mesh, regions = scattering_volume_mesh(body, setup.outer_size, h_in, h_out, "sphere", h_fill)
    mesh_s = time.perf_counter() - t0
    backend = get_backend(a.backend)
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_scattering(setup, mesh, a.order, probes, backend, a.precision, regions=regions)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    series = series_for(body.boundary, "boundary", body.medium)
    errors = [relative_l2(amp, series.scattered_field(k, 1.0, [0, 0, 1], probes)) for k, amp in zip(ks, res.amplitude)]
    row = {**{k: v for k, v in vars(a).items() if k != "json"}, "device": backend.device_name,
           "elements": res.elements, "steps": res.steps, "t_final": res.t_final, "mesh_s": mesh_s,
           "run_s": wall, "cpu_s": cpu, "ka": ks.tolist(), "relative_l2_vs_exact": errors}
    print(f"{a.kind} sphere, N={a.order}, {a.points_per_wavelength:g} points per wavelength, "
          f"{res.elements} elements, {res.steps} steps: run {wall:.1f} s ({cpu:.1f} CPU s) on "
          f"{backend.device_name}; relative L2 to the series "
          + ", ".join(f"{e:.4f} (ka {k:g})" for k, e in zip(ks, errors)))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(row, fh, indent=2)
    return row


if __name__ == "__main__":
    main()
