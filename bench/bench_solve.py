"""Rigid unit sphere, end to end (assemble -> OSRC Burton-Miller GMRES -> far field):
DOFs, GMRES iterations, time per stage and accuracy against the exact series.

    python bench/bench_solve.py --ka 2 5 10 20 --epw 10 [--backend cpu|gpu] [--mesher gmsh]

Meshes (h = wavelength / epw): `gmsh` (default) is the workflow's sphere
(wavescat.geometry.sphere: eight patches bounded by great-circle arcs, as Bempp builds it,
i.e. the peer's mesh family); `icosphere` (or no gmsh, as on the GPU machine) the icosphere
level closest to h; `--mesh FILE` any stored mesh of the unit sphere. One incidence (+z),
361 receivers in the xz plane; times are wall-clock seconds of each stage. The case goes
through the workflow's normalisation (`prepare_config`): the quadrature, GMRES and OSRC
settings are the ones `wavescat solve` gets from the `solve` rule.

Measured 2026-11-23, octant meshes (before they became the workflow's sphere; gmsh's default
algorithm, a few % fewer DOFs), 10 elements per wavelength, GMRES tolerance 1e-5:
    ka  DOFs    its  where                 assembly precond  solve  far field  total   RMS TS  rel. L2
     2    180    4   2-core CPU, dense       0.68    0.01    0.01    0.03      0.80 s  0.213 dB 3.51%
     5   1054    6   2-core CPU, dense       2.87    0.03    0.02    0.26      3.18 s  0.046 dB 0.82%
    10   3862    5   2-core CPU, dense      25.93    0.17    0.17    1.21     27.49 s  0.019 dB 0.34%
    20  15219    6   2-core CPU, dense     480.7     1.77    3.27    4.02    489.8 s   0.010 dB 0.13%
    10   3862    5   H200, dense            0.32    0.25    0.07    0.01      0.66 s  (first run in the
                                                                  process 13.8 s: CUDA context, NVRTC)
    50  94090    6   H200, H-matrix       160.4    19.0     5.7     3.7     189.6 s   0.014 dB 0.056%
(--repeat 3 for the ka = 10 GPU row; ka = 50 is a first run, compilation included.)
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from wavescat import defaults
from wavescat.problem import farfield
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import rigid_sphere
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh

C = defaults.MEDIUM["sound_speed"]


def sphere_mesh(ka: float, epw: float, mesher: str):
    h = 2 * math.pi / ka / epw
    if mesher == "gmsh":
        try:
            from wavescat.geometry.sizing import MeshOptions
            from wavescat.geometry.sphere import Sphere

            return Sphere(radius=1.0).build(MeshOptions(h=h))
        except ImportError:
            pass
    levels = [icosphere(s) for s in range(7)]
    return min(levels, key=lambda m: abs(m.edge_lengths.mean() - h))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ka", type=float, nargs="+", default=[2, 5, 10, 20])
    p.add_argument("--epw", type=float, default=defaults.MESH["elements_per_wavelength"])
    p.add_argument("--backend", default="cpu")
    p.add_argument("--precision", default="double")
    p.add_argument("--format", default="dense")
    p.add_argument("--mesher", default="gmsh", choices=["gmsh", "icosphere"])
    p.add_argument("--mesh", default="", help="a mesh file of the unit sphere to use for every ka")
    p.add_argument("--repeat", type=int, default=1,
                   help="solves per ka; the first pays CUDA/NVRTC start-up, the best is reported")
    p.add_argument("--json", default="", help="also write the rows to this file")
    args = p.parse_args(argv)
    rows = []
    print(f"{'ka':>5} {'dofs':>6} {'elem':>6} {'epw':>5} {'its':>4} {'assembly':>9} {'precond':>8} "
          f"{'solve':>7} {'farfld':>7} {'total':>7} {'rmsTS_dB':>9} {'relL2':>8}", flush=True)
    for ka in args.ka:
        mesh = SurfaceMesh.from_file(args.mesh) if args.mesh else sphere_mesh(ka, args.epw, args.mesher)
        f = ka * C / (2 * math.pi)
        case = solve_case(prepare_config({"run": ["sphere"], "cases": {"sphere": {
            "geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [f],
            "incident": {"direction": [0.0, 0.0, 1.0]}, "receivers": {"plane": "xz", "count": 361},
            "solver": {"operator_format": args.format, "backend": args.backend,
                       "precision": args.precision}}}}), "sphere")
        best, cold = None, None
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            res = solve_frequency(case, mesh, f)
            total = time.perf_counter() - t0
            cold = total if cold is None else cold
            best = (total, res) if best is None or total < best[0] else best
        total, res = best
        exact = rigid_sphere.far_field(ka, 1.0, [0, 0, 1], res.receivers.vectors)
        err = farfield.far_field_errors(res.far_field[:, 0], exact)
        t = res.timings
        row = {"ka": ka, "dofs": res.dofs, "elements": res.elements,
               "elements_per_wavelength": res.elements_per_wavelength,
               "iterations": int(res.iterations[0]), **{f"{k}_s": v for k, v in t.items()},
               "total_s": total, "cold_total_s": cold, **err, "backend": res.backend["device"]}
        rows.append(row)
        print(f"{ka:5.1f} {res.dofs:6d} {res.elements:6d} {res.elements_per_wavelength:5.1f} "
              f"{row['iterations']:4d} {t['assembly']:9.2f} {t['preconditioner']:8.2f} "
              f"{t['solve']:7.2f} {t['far_field']:7.2f} {total:7.2f} "
              f"{err['rms_ts_error_db']:9.4f} {100 * err['relative_l2_error']:7.3f}%"
              + (f"  (first run {cold:.2f} s)" if args.repeat > 1 else ""), flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return rows


if __name__ == "__main__":
    main()
