"""A fish case of config/examples/fish.yaml end to end at one frequency, by the solver's own
`solve_frequency` (assembly, preconditioner, GMRES for every tilt, far field), from a stored
mesh: stage times, GMRES iterations, the gas bladder's preconditioner and peak memory.

    # make the mesh with the workflow's meshing (gmsh) where it is installed, and store it
    python bench/bench_fish.py --freq 200e3 --mesh .gpu/sardine_200kHz.npz --mesh-only
    # solve from the stored mesh (numpy only: no gmsh or meshio needed)
    PYTHONUNBUFFERED=1 python bench/bench_fish.py --freq 200e3 --mesh .gpu/sardine_200kHz.npz \
        --backend gpu [--fluid-preconditioner hodlr] [--build leaves|peeling] [--out ts.csv]

The case is `--case` (default sardine_120k: the 21 cm sardine, flesh around a lossy gas swim
bladder, 31 tilts) at `--freq`, its mesh made by `mesh_case` at that frequency (the `mesh`
rule's meshing) when `--mesh` does not exist yet, then stored there (.npz: vertices,
triangles, surface ids, compressed; or .msh through meshio). Stages print as the solver logs
them (a run stopped by a time limit shows those done); the summary line gives the stage
seconds, the iterations per tilt, the device's high-water memory (CuPy's pool) and the
host's peak.
"""
from __future__ import annotations

import argparse
import json
import logging
import time
from pathlib import Path

import numpy as np
import yaml

from bench_submarine import DevicePeak, say  # a sibling: run as a script, bench/ is on the path
from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix.report import host_peak_bytes
from wavescat.bem.formulations.muller_preconditioner import HierarchicalBlockTriangular
from wavescat.case import Case
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh

ROOT = Path(__file__).resolve().parents[1]


def fish_case(args) -> Case:
    """Case `args.case` of `args.config` at `args.freq`, on `args.backend`."""
    config = yaml.safe_load(Path(args.config).read_text())
    block = config["cases"][args.case]
    block["frequencies_hz"] = [args.freq]
    solver = block.setdefault("solver", {})
    solver["backend"] = args.backend
    if args.fluid_preconditioner:
        solver["fluid_preconditioner"] = args.fluid_preconditioner
    return Case.from_dict(block, config["medium"], args.case, base_dir=ROOT)


def stored_mesh(path: Path, case: Case) -> SurfaceMesh:
    """The mesh at `path` (.npz or a meshio file); made by mesh_case and stored there when
    absent."""
    if path.suffix == ".npz" and path.exists():
        with np.load(path) as data:
            ids = data["surface_ids"] if data["surface_ids"].ndim else None
            return SurfaceMesh(data["vertices"], data["triangles"], {"source": str(path)}, ids)
    if path.exists():
        return SurfaceMesh.from_file(path)
    from wavescat.geometry import mesh_case  # noqa: PLC0415 - gmsh: not on every machine

    t = time.perf_counter()
    mesh, _ = mesh_case(case)
    say(f"meshed in {time.perf_counter() - t:.1f} s: {mesh.n_vertices} vertices, "
        f"{mesh.n_triangles} triangles; stored in {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".npz":
        np.savez_compressed(path, vertices=mesh.vertices, triangles=mesh.triangles,
                            surface_ids=mesh.surface_ids)
    else:
        mesh.write(path)
    return mesh


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(ROOT / "config" / "examples" / "fish.yaml"))
    ap.add_argument("--case", default="sardine_120k")
    ap.add_argument("--freq", type=float, default=200e3)
    ap.add_argument("--mesh", required=True, help="stored mesh (.npz or .msh): read, or made")
    ap.add_argument("--mesh-only", action="store_true", help="make and store the mesh, no solve")
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    ap.add_argument("--fluid-preconditioner", default="",
                    help="solver.fluid_preconditioner over the case's (auto)")
    ap.add_argument("--build", default="leaves", choices=["leaves", "peeling"],
                    help="how HODLR inverses are built (HierarchicalBlockTriangular.build)")
    ap.add_argument("--out", default="", help="write the monostatic TS per tilt (CSV)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    case = fish_case(args)
    mesh = stored_mesh(Path(args.mesh), case)
    say(f"{args.case} at {args.freq:g} Hz: {mesh.n_vertices} vertices "
        f"({[len(range(mesh.n_vertices)[mesh.surface_vertices(i)]) for i in range(mesh.n_surfaces)]}"
        f" per surface), {mesh.n_triangles} triangles")
    if args.mesh_only:
        return
    HierarchicalBlockTriangular.build = args.build
    be = get_backend(args.backend)
    peak = DevicePeak(be)
    t = time.perf_counter()
    result = solve_frequency(case, mesh, args.freq)
    total = time.perf_counter() - t
    peak.sample()
    ts = 20 * np.log10(np.abs(result.monostatic_far_field))
    timings = {key: round(value, 2) for key, value in result.timings.items()}
    say(f"total {total:.1f} s {json.dumps(timings)}; {result.dofs} DOFs, iterations "
        f"{result.iterations.tolist()}; TS {ts.min():.2f} .. {ts.max():.2f} dB; device "
        f"high-water {peak.arrays / 2**30:.2f} GiB (pool {peak.held / 2**30:.2f} GiB), "
        f"host peak {host_peak_bytes() / 2**30:.2f} GiB, on {be.device_name}")
    if args.out:
        aspects = np.degrees(np.arctan2(-result.incidence.directions[:, 2],
                                        -result.incidence.directions[:, 0]))
        np.savetxt(args.out, np.column_stack([aspects, ts]), delimiter=",",
                   header="aspect_deg,ts_db", comments="")


if __name__ == "__main__":
    main()
