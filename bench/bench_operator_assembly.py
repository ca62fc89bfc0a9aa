"""Assembly time of each boundary operator the formulations use, on one sphere mesh, with
the H-matrix's own breakdown (singular quadrature, near field, ACA).

    python bench/bench_operator_assembly.py --ka 10 [--format hmatrix|dense] [--backend cpu|gpu]
        [--icosphere R] [--operators hypersingular double_layer]

The rigid body assembles K and W, the pressure-release body V and K', the impedance body
all four: this prints each operator's time on the same mesh (the workflow's sphere at
10 elements per wavelength, or an icosphere where gmsh is missing), so the cost of a
condition is the sum of its rows; `--icosphere R` takes the geodesic unit sphere of
refinement R instead (10 4^R + 2 DOFs: R = 5, 10,242). Settings are the workflow's
(`solver` defaults).
Times are wall-clock seconds; NUMBA_NUM_THREADS sets the CPU threads.
"""
from __future__ import annotations

import argparse
import math
import os
import time

from wavescat import defaults
from wavescat.backend import get_backend
from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations import FORMULATIONS
from wavescat.configuration.case import Case, SolverSettings
from wavescat.geometry.icosphere import icosphere
from wavescat.solve.driver import boundary_operator

C = defaults.MEDIUM["sound_speed"]


def sphere_mesh(ka: float, epw: float):
    """The workflow's unit sphere (mesh_case, geometry sizing included) or, without gmsh,
    the icosphere level closest to h."""
    f = ka * C / (2 * math.pi)
    try:
        from wavescat.geometry import mesh_case

        case = {"geometry": {"kind": "sphere", "radius": 1.0, "center": [0.0, 0.0, 0.0]},
                "frequencies_hz": [f], "mesh": {**defaults.MESH, "elements_per_wavelength": epw}}
        return mesh_case(Case.from_dict(case, {"sound_speed": C}))[0], "gmsh"
    except ImportError:
        h = 2 * math.pi / ka / epw
        return min((icosphere(s) for s in range(7)),
                   key=lambda m: abs(m.edge_lengths.mean() - h)), "icosphere"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ka", type=float, default=10.0)
    p.add_argument("--epw", type=float, default=defaults.MESH["elements_per_wavelength"])
    p.add_argument("--format", default="hmatrix", choices=["dense", "hmatrix"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--operators", nargs="+", default=None,
                   help="default: every operator of every formulation")
    p.add_argument("--icosphere", type=int, default=None, metavar="R",
                   help="the geodesic unit sphere of refinement R instead of the workflow's")
    args = p.parse_args(argv)
    names = args.operators or list(dict.fromkeys(
        n for cls in FORMULATIONS.values() for n in cls.operators))
    mesh, mesher = (icosphere(args.icosphere), f"icosphere({args.icosphere})") \
        if args.icosphere is not None else sphere_mesh(args.ka, args.epw)
    space = spaces.p1(mesh)
    settings = SolverSettings.from_dict({"backend": args.backend})
    be = get_backend(args.backend)
    print(f"ka = {args.ka:g}, {space.n_dofs} DOFs ({mesher} mesh), {args.format} on {be.name} "
          f"({be.device_name}), NUMBA_NUM_THREADS={os.environ.get('NUMBA_NUM_THREADS', '-')}",
          flush=True)
    rows = []
    for name in names:
        t0 = time.perf_counter()
        op = boundary_operator(name, space, args.ka, operator_format=args.format, backend=be,
                               precision="double",
                               quadrature=settings.quadrature,
                               hmatrix_options=settings.hmatrix.options())
        be.synchronize()
        seconds = time.perf_counter() - t0
        parts = ""
        if args.format == "hmatrix":
            t = op.report["time_s"]
            parts = "  " + ", ".join(f"{key} {t[key]:.2f}" for key in
                                     ("singular_quadrature", "trees", "near_field", "aca",
                                      "recompression")
                                     if key in t)
        print(f"{name:22s} {seconds:8.2f} s{parts}", flush=True)
        rows.append({"operator": name, "seconds": seconds})
    for kind, cls in FORMULATIONS.items():
        total = sum(r["seconds"] for r in rows if r["operator"] in cls.operators)
        print(f"  {kind:18s} assembly {total:8.2f} s ({' + '.join(cls.operators)})", flush=True)
    return rows


if __name__ == "__main__":
    main()
