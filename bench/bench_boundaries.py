"""Every boundary condition on the sphere, through the workflow: DOFs, GMRES iterations,
time per stage and accuracy against the exact series of that condition.

    python bench/bench_boundaries.py --ka 2 5 10 20 [--conditions rigid fluid ...] [--backend cpu|gpu]

The unit sphere at each ka, one incidence (+z), 361 receivers in the xz plane, default 10
elements per wavelength. Each case goes the workflow's way: `prepare_config` fills the
schema's defaults (mesh sizing, quadrature, GMRES, OSRC, `operator_format: auto`, which
picks dense or H-matrix by size); the mesh is made by `mesh_case` (what `wavescat mesh`
runs), written and read back as the `solve` rule reads it; `solve_frequency` gets the case
as `wavescat solve` receives it (`solve_case`). Stages are wall-clock seconds: mesh, assembly
(all boundary operators of the formulation), preconditioner (OSRC factorisation and the
right-hand sides), GMRES, far field. Errors: RMS TS error (dB) and relative L2 error of the
far field against the exact series of the condition (reference.sphere.sphere_series);
`x rigid`: the solve time (all stages but the mesh) over the rigid body's on the same mesh.

A sphere's mesh is made once per ka and shared by the conditions (its time is repeated in
each row). A condition this build does not implement is skipped with a line saying so.

On a machine without gmsh or meshio (the GPU machine), `--meshes DIR` reads each ka's mesh
from DIR/sphere_ka<ka>_epw<epw>[_matched].npz (vertices, triangles; _matched: fluid bodies), which the same command writes
where gmsh is installed: mesh here, carry DIR, solve there on the same meshes (mesh time 0).
"""
from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from pathlib import Path

import numpy as np

from wavescat import defaults
from wavescat.problem import farfield
from wavescat.bem.formulations import boundary_from, formulation_for
from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.errors import InputError
from wavescat.geometry import mesh_case
from wavescat.planning.resources import solve_format
from wavescat.reference.sphere import sphere_series
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh

C = defaults.MEDIUM["sound_speed"]
RADIUS = 1.0

# name -> boundary block; fluid bodies of the fisheries benchmark set: a gas-filled one
# (swim bladder) and a weakly scattering one (flesh, zooplankton).
CONDITIONS = {
    "rigid": {"kind": "rigid"},
    "pressure_release": {"kind": "pressure_release"},
    "impedance": {"kind": "impedance", "admittance": [0.7, 0.4]},
    "fluid_gas": {"kind": "fluid", "density_ratio": 0.0012, "sound_speed_ratio": 0.22},
    "fluid_weak": {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.03},
}


def selected_conditions(names: list[str]) -> list[str]:
    """Condition names from the command line; a boundary kind (`fluid`) selects all of its."""
    out = []
    for name in names:
        matches = [n for n, b in CONDITIONS.items() if name in (n, b["kind"])]
        if not matches:
            raise SystemExit(f"--conditions: {name!r} is none of {', '.join(CONDITIONS)} "
                             "(or a boundary kind)")
        out += [m for m in matches if m not in out]
    return out


def available(names: list[str]) -> list[str]:
    """The conditions this build implements; one line for each kind it does not."""
    out, missing = [], {}
    for name in names:
        boundary = CONDITIONS[name]
        try:
            formulation_for(boundary_from(boundary))
            out.append(name)
        except InputError as exc:
            missing.setdefault(boundary["kind"], str(exc))
    for kind, why in missing.items():
        print(f"{kind}: not available in this build ({why})", flush=True)
    return out


def sphere_config(ka: float, boundary: dict, args) -> dict:
    f = ka * C / (2 * math.pi * RADIUS)
    return prepare_config({"medium": {"sound_speed": C}, "run": ["sphere"], "cases": {"sphere": {
        "geometry": {"kind": "sphere", "radius": RADIUS}, "frequencies_hz": [f],
        "incident": {"direction": [0.0, 0.0, 1.0]}, "receivers": {"plane": "xz", "count": 361},
        "boundary": boundary, "mesh": {"elements_per_wavelength": args.epw},
        "solver": {"backend": args.backend, "precision": args.precision,
                   "operator_format": args.format}}}})


def workflow_mesh(config: dict, folder: Path, stored: Path | None) -> tuple[SurfaceMesh, float]:
    """The case's mesh as the mesh rule makes it and the solve rule reads it, and the
    meshing time; read from (or, after meshing, written to) `stored` where given."""
    if stored is not None and stored.is_file():
        with np.load(stored) as data:
            return SurfaceMesh(data["vertices"], data["triangles"]), 0.0
    case = config["cases"]["sphere"]
    t0 = time.perf_counter()
    try:
        mesh, _ = mesh_case(Case.from_json(json.dumps(
            {k: case[k] for k in ("geometry", "frequencies_hz", "mesh", "boundary")}),
            json.dumps(config["medium"])))
    except ImportError as exc:
        raise SystemExit(f"no gmsh here ({exc}) and no stored mesh {stored}: run this command "
                         "with --meshes DIR where gmsh is installed first, then carry DIR") from None
    seconds = time.perf_counter() - t0
    path = folder / "mesh.msh"
    mesh.write(path, "gmsh22")
    mesh = SurfaceMesh.from_file(path)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        np.savez(stored, vertices=mesh.vertices, triangles=mesh.triangles)
    return mesh, seconds


HEADER = (f"{'condition':<17} {'ka':>5} {'dofs':>6} {'format':>7} {'its':>4} {'mesh':>7} "
          f"{'assembly':>9} {'precond':>8} {'gmres':>7} {'farfld':>7} {'total':>8} "
          f"{'rmsTS_dB':>9} {'relL2':>8} {'x rigid':>8}")


def run(ka: float, name: str, mesh: SurfaceMesh, mesh_s: float, config: dict,
        rigid_s: float | None) -> dict:
    """Solve one condition; `rigid_s`: the rigid body's solve time on the same mesh, if
    measured (the last column, solve time over it: what the issue's speed targets compare)."""
    case = solve_case(config, "sphere")
    f = config["cases"]["sphere"]["frequencies_hz"][0]
    t0 = time.perf_counter()
    res = solve_frequency(case, mesh, f, choose_format=solve_format)  # auto: as `wavescat solve`
    solve_s = time.perf_counter() - t0
    try:
        exact = sphere_series(case.boundary).far_field(
            res.wavenumber, RADIUS, [0, 0, 1], res.receivers.vectors)
        err = farfield.far_field_errors(res.far_field[:, 0], exact)
    except InputError as exc:  # a condition without a series in this build
        print(f"{name}: {exc}", flush=True)
        err = {"rms_ts_error_db": math.nan, "max_ts_error_db": math.nan,
               "relative_l2_error": math.nan}
    t = res.timings
    row = {"condition": name, "boundary": CONDITIONS[name], "ka": ka, "dofs": res.dofs,
           "elements": res.elements, "elements_per_wavelength": res.elements_per_wavelength,
           "operator_format": res.operator_format, "iterations": int(res.iterations[0]),
           "mesh_s": mesh_s, **{f"{k}_s": v for k, v in t.items()},
           "solve_total_s": solve_s, "total_s": mesh_s + solve_s,
           "vs_rigid": solve_s / rigid_s if rigid_s else math.nan, **err,
           "device": res.backend["device"]}
    print(f"{name:<17} {ka:5.1f} {res.dofs:6d} {res.operator_format:>7} {row['iterations']:4d} "
          f"{mesh_s:7.2f} {t['assembly']:9.2f} {t['preconditioner']:8.2f} {t['solve']:7.2f} "
          f"{t['far_field']:7.2f} {row['total_s']:8.2f} {err['rms_ts_error_db']:9.4f} "
          f"{100 * err['relative_l2_error']:7.3f}% {row['vs_rigid']:8.2f}", flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ka", type=float, nargs="+", default=[2, 5, 10, 20])
    p.add_argument("--conditions", nargs="+", default=list(CONDITIONS),
                   help=f"any of {', '.join(CONDITIONS)}, or a boundary kind (fluid: both)")
    p.add_argument("--epw", type=float, default=defaults.MESH["elements_per_wavelength"])
    p.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "auto"])
    p.add_argument("--precision", default="double", choices=["double", "single"])
    p.add_argument("--format", default="auto", choices=["auto", "dense", "hmatrix"],
                   help="solver.operator_format (auto: as the workflow picks)")
    p.add_argument("--json", default="", help="also write the rows to this file")
    p.add_argument("--meshes", default="", help="folder of stored sphere meshes (.npz): read "
                   "where present, written after meshing")
    args = p.parse_args(argv)
    names = available(selected_conditions(args.conditions))
    rows = []
    print(HEADER, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for ka in args.ka:
            meshes = {}  # the mesh rule offsets fluid bodies' meshes to the exact volume
            for name in names:
                config = sphere_config(ka, CONDITIONS[name], args)
                matched = CONDITIONS[name]["kind"] == "fluid"
                if matched not in meshes:
                    tag = "_matched" if matched else ""
                    stored = (Path(args.meshes) / f"sphere_ka{ka:g}_epw{args.epw:g}{tag}.npz"
                              if args.meshes else None)
                    meshes[matched] = workflow_mesh(config, Path(tmp), stored)
                mesh, mesh_s = meshes[matched]
                rigid_s = next((r["solve_total_s"] for r in rows
                                if r["ka"] == ka and r["condition"] == "rigid"), None)
                rows.append(run(ka, name, mesh, mesh_s, config, rigid_s))
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    return rows


if __name__ == "__main__":
    main()
