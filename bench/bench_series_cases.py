"""Sphere and concentric-sphere cases of a config against their exact series, the workflow's
way: per case and frequency the DOFs, GMRES iterations, time per stage, and the TS error
at every receiver (or aspect) against `reference.sphere.case_series`.

    python bench/bench_series_cases.py config/examples/shells.yaml [--cases a b]
        [--frequencies 12000 38000] [--set mesh.elements_per_wavelength=6 ...]
        [--backend cpu|gpu] [--meshes DIR] [--write-meshes] [--ts-out ts.csv]
    mpiexec -n 4 python bench/bench_series_cases.py ... --ranks 4   # one solve on 4 ranks

Each case goes as the workflow sends it: `prepare_config` fills the schema's defaults (mesh
sizing, quadrature, GMRES, `operator_format: auto`), `mesh_case` makes the mesh of the
frequency (what `wavescat mesh` runs for a band of one frequency), `solve_frequency` gets
the case as `wavescat solve` receives it (`solve_case`). `--set key=value` (dotted case keys,
YAML values) changes every selected case, e.g. `boundary.absorption_db_per_wavelength=1.364`
or `mesh.resolve_interior=false`. On a machine without gmsh (the GPU machine) `--meshes DIR`
reads DIR/<case>_f<hz>.npz, which `--write-meshes` makes where gmsh is installed.
`--ranks N` (under `mpiexec -n N`) solves each case on N ranks the way `solver.ranks: N`
does (solve/parallel.py: each rank holds its share of the operators); rank 0 prints.
Prints one row per case and frequency and, per case, the RMS and largest TS error (dB);
cases without a series (a spheroid, a fish) print their TS alone (`--ts-out` keeps all).
`--stages` adds a line per solve: every stage's seconds (assembly, preconditioner, GMRES,
far field), the iterations per incidence, the device's high-water memory (CuPy's pool) and
the host's peak; `--hodlr-build` how HODLR preconditioners are built (from the H-matrix
blocks, or peeled from products: HierarchicalBlockTriangular.build). A fish end to end on
a GPU machine, its mesh made here first:

    python bench/bench_series_cases.py config/examples/fish.yaml --cases sardine_120k \
        --frequencies 200000 --meshes .gpu --write-meshes
    python bench/bench_series_cases.py config/examples/fish.yaml --cases sardine_120k \
        --frequencies 200000 --meshes .gpu --backend gpu --stages --log
"""
from __future__ import annotations

import argparse
import copy
import logging
import time
from pathlib import Path

import numpy as np
import yaml

from bench_submarine import DevicePeak  # a sibling: run as a script, bench/ is on the path
from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix.report import host_peak_bytes
from wavescat.bem.formulations.muller_preconditioner import HierarchicalBlockTriangular
from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.configuration.config_files import load_config_files
from wavescat.reference.sphere import case_series, has_series
from wavescat.solve import parallel
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh


def _set(case: dict, dotted: str, value) -> None:
    node = case
    keys = dotted.split(".")
    for key in keys[:-1]:
        node = node.setdefault(int(key) if isinstance(node, list) else key, {})
    node[keys[-1]] = value


def _mesh(config, name, case, f, args):
    path = Path(args.meshes or ".") / f"{name}_f{f:g}.npz"
    if args.meshes and not args.write_meshes:
        data = np.load(path)
        return SurfaceMesh(data["vertices"], data["triangles"],
                           surface_ids=data["surface_ids"] if "surface_ids" in data else None), 0.0
    from wavescat.geometry import mesh_case  # noqa: PLC0415 (gmsh: not on every machine)

    t0 = time.perf_counter()
    mesh, _ = mesh_case(case.with_frequencies([f]))
    seconds = time.perf_counter() - t0
    if args.write_meshes:
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = {} if mesh.surface_ids is None else {"surface_ids": mesh.surface_ids}
        np.savez_compressed(path, vertices=mesh.vertices, triangles=mesh.triangles, **extra)
    return mesh, seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("config")
    ap.add_argument("--cases", nargs="*")
    ap.add_argument("--frequencies", nargs="*", type=float)
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--backend", default=None)
    ap.add_argument("--meshes")
    ap.add_argument("--write-meshes", action="store_true")
    ap.add_argument("--ts-out", help="append every TS (case,f,dofs,dx,dz,ts_db) to this CSV")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks of each solve (mpiexec -n)")
    ap.add_argument("--log", action="store_true", help="the solver's log (stages, GMRES) on stderr")
    ap.add_argument("--stages", action="store_true",
                    help="per solve: every stage's seconds, the iterations, peak memory")
    ap.add_argument("--hodlr-build", default="leaves", choices=["leaves", "peeling"],
                    help="how HODLR preconditioners are built")
    args = ap.parse_args()
    HierarchicalBlockTriangular.build = args.hodlr_build
    if args.log:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    ranks = parallel.start(args.ranks)  # before CuPy: binds a GPU per rank
    say = print if ranks.is_root else (lambda *a, **k: None)

    raw = copy.deepcopy(load_config_files([args.config]))  # over the default config
    names = args.cases or raw["run"]
    for name in names:
        for item in args.set:
            key, value = item.split("=", 1)
            _set(raw["cases"][name], key, yaml.safe_load(value))
        raw["cases"][name].setdefault("solver", {})["ranks"] = ranks.size
        if args.backend:
            raw["cases"][name].setdefault("solver", {})["backend"] = args.backend
        if args.frequencies:
            raw["cases"][name]["frequencies_hz"] = list(args.frequencies)
    config = prepare_config(raw)
    peak = DevicePeak(get_backend(args.backend or "auto")) if args.stages else None
    say(f"{'case':28s} {'f Hz':>8s} {'dofs':>7s} {'its':>5s} {'mesh s':>7s} {'asm s':>7s} "
          f"{'gmres s':>7s} {'TS dB':>8s} {'exact':>8s} {'max err':>8s}")
    for name in names:
        case = Case.from_config(config, name)
        series = case_series(case) if has_series(case) else None
        errors = []
        for f in case.frequencies_hz:
            mesh, mesh_s = _mesh(config, name, case, f, args)
            if args.write_meshes:
                say(f"{name:28s} {f:8g} mesh {mesh.n_vertices} vertices, {mesh_s:.1f} s")
                continue
            res = solve_frequency(solve_case(config, name), mesh, f, ranks=ranks)
            if not ranks.is_root:  # rank 0 holds the far field
                continue
            k = case.medium.wavenumber(f)
            mono = res.monostatic_far_field is not None
            bem = res.monostatic_far_field if mono else res.far_field[:, 0]
            exact = bem if series is None else (
                series.monostatic_far_field(k, res.incidence.directions) if mono else
                series.far_field(k, res.incidence.directions[0], res.receivers.vectors))
            err = 20 * np.log10(np.abs(bem) / np.abs(exact))
            if series is not None:
                errors.append(err)
            t = res.timings
            print(f"{name:28s} {f:8g} {res.dofs:7d} {int(res.iterations.max()):5d} "
                  f"{mesh_s:7.1f} {t['assembly']:7.1f} {t['solve']:7.1f} "
                  f"{20 * np.log10(abs(bem[0])):8.3f} {20 * np.log10(abs(exact[0])):8.3f} "
                  f"{np.abs(err).max():8.4f}", flush=True)
            if peak is not None:
                peak.sample()
                print(f"  stages (s): {', '.join(f'{key} {value:.1f}' for key, value in t.items())}; "
                      f"iterations {res.iterations.tolist()}; device high-water "
                      f"{peak.arrays / 2**30:.2f} GiB (pool {peak.held / 2**30:.2f} GiB), "
                      f"host peak {host_peak_bytes() / 2**30:.2f} GiB", flush=True)
            for share in res.parallel.get("per_rank", []) if ranks.size > 1 else []:
                print(f"  rank {share['rank']}: operators {share['operator_bytes'] / 1e9:.1f} GB"
                      + (f", device pool {share['device_pool_bytes'] / 1e9:.1f} GB"
                         if "device_pool_bytes" in share else ""), flush=True)
            if args.ts_out:  # every TS of the case (aspect sweeps: one per direction)
                with open(args.ts_out, "a") as out:
                    for d, value in zip(res.incidence.directions if mono else
                                        res.receivers.vectors, bem):
                        out.write(f"{name},{f:g},{res.dofs},{d[0]:.6f},{d[2]:.6f},"
                                  f"{20 * np.log10(abs(value)):.4f}\n")
        if errors:
            e = np.concatenate(errors)
            print(f"{name}: RMS TS error {np.sqrt(np.mean(e**2)):.4f} dB, largest "
                  f"{np.abs(e).max():.4f} dB over {len(e)} values", flush=True)


if __name__ == "__main__":
    main()
