"""Make the kernel manifest (src/wavescat/kernel_cache.py): run representative GPU solves
with empty caches and record every kernel they compile.

    WAVESCAT_RECORD_KERNELS=src/wavescat/kernels.json.gz python bench/record_kernels.py \
        [--submarine-mesh M.msh]

The solves: each boundary kind on a small sphere in the dense and the H-matrix formats, in
double and single precision, and the default submarine on a stored mesh (the workflow's
solver settings; `--submarine-formats`, default auto and directional: the directional far
field's kernels too), each through the solver's own path (solve/driver.py). What they compile
is merged into the manifest at exit (every compile request is recorded, whether the caches
held it or not); a kernel a later code change adds compiles on first use
until the manifest is made again.
"""
from __future__ import annotations

import argparse
import math
import os
import time

import yaml

from wavescat.configuration.case import Case
from wavescat.geometry.icosphere import icosphere
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh

BOUNDARIES = [{"kind": "rigid"}, {"kind": "pressure_release"},
              {"kind": "impedance", "admittance": [0.7, 0.4]},
              {"kind": "fluid", "density_ratio": 0.0012, "sound_speed_ratio": 0.22}]
MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--submarine-mesh", help="a stored mesh of the default submarine")
    ap.add_argument("--submarine-frequency", type=float, default=500.0)
    ap.add_argument("--submarine-formats", nargs="+", default=["auto", "directional"],
                    help="the submarine's operator formats (directional: its far field's kernels)")
    ap.add_argument("--spheres", action=argparse.BooleanOptionalAction, default=True,
                    help="the small spheres' solves (--no-spheres: the submarine's alone)")
    ap.add_argument("--backend", default="gpu", choices=["gpu", "cpu"], help="cpu: a dry run")
    args = ap.parse_args(argv)
    if args.backend == "gpu" and not os.environ.get("WAVESCAT_RECORD_KERNELS"):
        ap.error("set WAVESCAT_RECORD_KERNELS to the manifest to write")
    f = 3.0 * MEDIUM["sound_speed"] / (2 * math.pi)  # ka = 3 on the unit sphere
    for boundary in BOUNDARIES if args.spheres else []:
        for fmt in ("dense", "hmatrix"):
            for precision in ("double", "single"):
                solver = {"operator_format": fmt, "backend": args.backend,
                          "precision": precision}
                case = Case.from_dict({"boundary": boundary, "solver": solver,
                                       "receivers": {"plane": "xz", "count": 19}}, MEDIUM)
                t0 = time.perf_counter()
                solve_frequency(case, icosphere(3), f)
                print(f"{boundary['kind']} {fmt} {precision}: {time.perf_counter() - t0:.1f} s",
                      flush=True)
    if args.submarine_mesh:
        from pathlib import Path  # noqa: PLC0415

        root = Path(__file__).resolve().parents[1]
        cfg = yaml.safe_load((root / "config" / "config.yaml").read_text())
        block = cfg["cases"]["submarine"]
        mesh = SurfaceMesh.from_file(args.submarine_mesh)
        for fmt in args.submarine_formats:
            block["solver"] = {**(block.get("solver") or {}), "backend": args.backend,
                               "operator_format": fmt}
            case = Case.from_dict(block, cfg.get("medium") or MEDIUM)
            t0 = time.perf_counter()
            solve_frequency(case, mesh, args.submarine_frequency)
            print(f"submarine {args.submarine_frequency:g} Hz, {fmt}: "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
