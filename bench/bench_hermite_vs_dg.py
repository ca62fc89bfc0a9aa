"""Hermite-Taylor against nodal DG on the one problem both solve: a standing mode of a rigid
unit cube (c = rho = 1), p = cos(l pi x) cos(l pi y) cos(l pi z) cos(w t), run for whole
periods. Prints, per method, degree and grid: values per field (DOFs), steps, seconds, time per
DOF and step, the relative max nodal error of p at the end (DOFs per wavelength: the cube
root of the DOFs per unit volume times the mode's wavelength 2 / (l sqrt 3)); then, per degree, the DOFs and
seconds that reach each target error (log-log interpolation between the bracketing grids):
the cost of each method at equal accuracy. Measured figures and what they say about a
hybrid Hermite-DG scheme: bench/README.md.

    PYTHONPATH=src NUMBA_NUM_THREADS=1 python bench/bench_hermite_vs_dg.py [--mode 4]
        [--periods 4] [--backend cpu|gpu] [--precision double] [--targets 1e-2 1e-3]
        [--dg-orders 2 3 4] [--hermite-degrees 1 2 3] [--sphere cpu full] [--json out.json]
        [--costs earlier.json]

DG runs at the CFL number of the scattering runs (0.75) on Kuhn cubes of 6 tetrahedra,
Hermite at its default (0.9) with q = 3(2m + 1) Taylor stages. DOFs are nodal values per field
(DG: elements x (N+1)(N+2)(N+3)/6; Hermite: grid nodes x (m+1)^3). A first run of the smallest
grid of each degree compiles its kernels and is not timed. Seconds are CPU seconds of the
process on the CPU (run with NUMBA_NUM_THREADS=1: one core's), wall seconds on the GPU.
"""
from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from wavescat.backend import get_backend
from wavescat.timedomain.dg import AcousticsDG, box_tet_mesh, build_space
from wavescat.timedomain.dg.cavity import cavity_mode
from wavescat.timedomain.dg.space import BC_RIGID
from wavescat.timedomain.hermite.equations import acoustics
from wavescat.timedomain.hermite.exact import acoustic_standing_mode, hermite_data
from wavescat.timedomain.hermite.solver import HermiteSolver

# cells per side by degree at mode 4 (scaled with the mode, so that a higher mode runs the same
# DOFs per wavelength on larger grids: --mode 16 for a GPU); at 4 periods errors from 20-40%
# down past 1e-3 (DG order 2: 1e-2)
DG_CELLS = {1: [8, 12, 16, 24, 32], 2: [8, 12, 16, 24], 3: [6, 8, 12, 16], 4: [4, 6, 8, 12],
            5: [3, 4, 6, 8]}
HERMITE_CELLS = {1: [12, 16, 24, 32, 48], 2: [6, 8, 12, 16, 24], 3: [4, 6, 8, 12, 16]}


class Clock:
    """Seconds of the block: the process's CPU time on the CPU (unaffected by other jobs on a
    shared machine), the wall time between device synchronisations on the GPU."""

    def __init__(self, backend):
        self.backend = backend
        self.read = time.perf_counter if backend.is_gpu else time.process_time

    def __enter__(self):
        self.backend.synchronize()
        self.start = self.read()
        return self

    def __exit__(self, *exc):
        self.backend.synchronize()
        self.seconds = self.read() - self.start


def dg_run(order: int, cells: int, mode: int, t_final: float, backend, precision: str) -> dict:
    space = build_space(box_tet_mesh(cells), order, BC_RIGID)
    modes = (mode,) * 3
    dg = AcousticsDG(space, backend, precision)
    dg.set_state(cavity_mode(space.xyz, 0.0, modes))
    steps = max(1, math.ceil(t_final / dg.stable_dt(0.75) - 1e-9))
    with Clock(backend) as clock:
        for _ in range(steps):
            dg.step(t_final / steps)
    error = np.abs(dg.state()[0] - cavity_mode(space.xyz, t_final, modes)[0]).max()
    return {"method": "DG", "degree": order, "cells": cells, "dofs": space.n_nodes,
            "steps": steps, "seconds": clock.seconds, "error": float(error)}


def hermite_run(m: int, cells: int, mode: int, t_final: float, backend, precision: str) -> dict:
    # the rigid-box mode is the periodic standing mode of period 2 / mode with zero phases
    exact = acoustic_standing_mode(acoustics(), 1.0, 1.0, (2.0 / mode,) * 3, phases=(0.0, 0.0, 0.0))
    solver = HermiteSolver(exact.system, cells, (1.0, 1.0, 1.0), m, backend=backend.name,
                           precision=precision, boundary="wall")
    coords = solver.node_coords()
    solver.set_state(hermite_data(exact.terms(0.0), coords, solver.h, m))
    steps = max(1, math.ceil(t_final / solver.dt * (1 - 1e-12)))
    solver.set_time_step(t_final / steps)
    with Clock(backend) as clock:
        solver.step(steps)
    final = hermite_data(exact.terms(t_final), coords, solver.h, m)[0, 0, 0, 0]
    error = np.abs(solver.get_state()[0, 0, 0, 0] - final).max()
    return {"method": "Hermite", "degree": m, "cells": cells,
            "dofs": int(np.prod(solver.nodes)) * (m + 1) ** 3, "steps": steps, "seconds": clock.seconds,
            "error": float(error)}


def at_accuracy(rows: list[dict], target: float) -> dict | None:
    """DOFs and seconds that reach `target`, interpolated in log-log between the two grids
    whose errors bracket it; None where no grid reaches it or none is coarse enough."""
    for a, b in zip(rows, rows[1:]):
        if a["error"] > target >= b["error"]:
            s = math.log(target / a["error"]) / math.log(b["error"] / a["error"])
            return {key: math.exp((1 - s) * math.log(a[key]) + s * math.log(b[key]))
                    for key in ("dofs", "seconds", "steps")}
    return None


def verify_sphere(sizes: str, dg_cost: float, hermite: list[dict], overlap_cells: float) -> list[dict]:
    """What a hybrid would cost on the verify sphere (the default config's sphere_band, the DG
    mesh dg-scatter makes at `sizes`): DG kept in a shell of `overlap_cells` Hermite cells
    around the body, at the global DG step; Hermite on the cube around the outer sphere at its
    own step, with cells from the largest that reaches the target error on the cavity (each
    entry of `hermite`) down to a quarter of it (finer cells, thinner shell: the cheapest is
    printed). Cost per unit of simulated time: DOFs / step x seconds per DOF-step of the cavity
    runs (dg_cost for the DG order). The coupling (DG data to the Hermite nodes of the overlap,
    Hermite data to the DG boundary at every DG stage) is not counted."""
    from pathlib import Path

    import yaml

    from wavescat.cli import build_parser
    from wavescat.commands.dg import scattering_mesh, scattering_problem
    from wavescat.configuration.config import prepare_config
    from wavescat.timedomain.dg.scattering import scattering_space

    config = yaml.safe_load((Path(__file__).parents[1] / "config" / "config.yaml").read_text())
    config["run"] = ["sphere_band"]
    case = prepare_config(config)["cases"]["sphere_band"]
    args = build_parser().parse_args(
        ["dg-scatter", "--case", json.dumps({k: case[k] for k in ("geometry", "frequencies_hz", "incident",
                                                                   "dg_cross_check")}),
         "--medium", json.dumps(config["medium"]), "--out", "unused", "--backend", "cpu"]
        + (["--full-on-cpu"] if sizes == "full" else []))
    body, freqs, _, setup, _, _ = scattering_problem(args)
    mesh, regions = scattering_mesh(args, setup)
    space = scattering_space(setup, mesh, args.order, regions)
    dt_dg = AcousticsDG(space, "cpu", "double", rho=setup.rho, c=setup.c).stable_dt(0.75)
    depth = np.linalg.norm(mesh.vertices[mesh.tets].mean(axis=1) - body.center, axis=1) - body.inner()
    nodes = space.n_nodes
    pure = nodes / dt_dg * dg_cost
    # DG alone with local time steps: each element at the largest step 2^j dt_dg within its own
    # CFL limit (that of stable_dt with the element's own Fscale)
    own = 0.75 / (setup.c * max(args.order**2, 2) * space.fscale.max(axis=1))
    per_step = space.ref.n_nodes / 2.0 ** np.floor(np.log2(own / dt_dg + 1e-12))  # node-steps per dt_dg
    local = per_step.sum()
    wavelength = setup.c / freqs.max()
    print(f"verify sphere ({sizes} sizes): order {args.order}, {mesh.n_elements} elements, {nodes} nodes, "
          f"DG step {dt_dg * setup.c / wavelength:.4f} wavelengths (of ka {2 * np.pi / wavelength:.3g}) / c, "
          f"outer radius {setup.outer_size:.3g}, sponge from {setup.sponge_start:.3g} (body radius "
          f"{body.inner():.3g}); DG with local time steps (powers of 2) takes {local / nodes:.2f} of the "
          "node-steps")
    out = []
    for entry in hermite:
        m = entry["degree"]
        best = None
        for h in (m + 1) * wavelength / entry["dofs_per_wavelength"] / 2.0 ** np.linspace(0, 2, 13):
            shell = depth < overlap_cells * h
            kept = int(shell.sum()) * space.ref.n_nodes
            cells = int(np.ceil(2 * setup.outer_size / h))
            dofs = (cells + 1) ** 3 * (m + 1) ** 3
            dt_h = 0.9 * h / setup.c
            row = {"sizes": sizes, "order": args.order, "dg_nodes": nodes, "dg_step": dt_dg,
                   "dg_local_steps": local / nodes, "m": m, "target": entry["target"],
                   "overlap_cells": overlap_cells, "hermite_cell": h, "shell_nodes": kept,
                   "hermite_dofs": dofs, "hermite_step": dt_h, "dg_shell": kept / nodes,
                   "hermite": dofs / dt_h * entry["ns_per_dof_step"] * 1e-9 / pure,
                   "dg_shell_local": per_step[shell].sum() / nodes}
            row["ratio"] = row["dg_shell"] + row["hermite"]
            row["ratio_local"] = row["dg_shell_local"] + row["hermite"]
            if best is None or row["ratio"] < best["ratio"]:
                best = row
        print(f"  hybrid, Hermite m = {m} (error {entry['target']:g} on the cavity from "
              f"{entry['dofs_per_wavelength']:.1f} DOFs per wavelength): cheapest with cells of "
              f"{best['hermite_cell']:.3g} = {best['hermite_cell'] / wavelength:.2f} wavelengths, DG within "
              f"{overlap_cells:g} cell(s) of the body ({best['dg_shell']:.0%} of its nodes), "
              f"{best['hermite_dofs']} Hermite DOFs at {best['hermite_step'] / dt_dg:.0f} DG steps a step: "
              f"{best['ratio']:.2f} of pure DG's cost (DG shell {best['dg_shell']:.2f}, Hermite "
              f"{best['hermite']:.2f}), the coupling not counted; with local time steps in its DG shell "
              f"{best['ratio_local']:.2f}, against DG's {local / nodes:.2f}")
        out.append(best)
    return out


def main(argv=None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", type=int, default=4, help="l of the (l, l, l) mode (wavelength 2 / l per "
                   "axis); the grids grow with it")
    p.add_argument("--periods", type=float, default=4.0, help="run length (the error grows with it)")
    p.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    p.add_argument("--precision", default="double", choices=["double", "single"])
    p.add_argument("--dg-orders", type=int, nargs="*", default=[2, 3, 4])
    p.add_argument("--hermite-degrees", type=int, nargs="*", default=[1, 2, 3])
    p.add_argument("--grids", type=int, default=None, help="only the first GRIDS grids of each degree")
    p.add_argument("--targets", type=float, nargs="+", default=[1e-2, 1e-3])
    p.add_argument("--sphere", nargs="*", default=[], choices=["cpu", "full"],
                   help="also estimate a hybrid's cost on the verify sphere at these dg-scatter sizes "
                   "(cpu: order 2, full: order 4, which --dg-orders must include)")
    p.add_argument("--overlap-cells", type=float, nargs="+", default=[1.0, 2.0],
                   help="DG shell around the body, in Hermite cells (the hybrid's overlap)")
    p.add_argument("--json", default=None)
    p.add_argument("--costs", default=None, metavar="JSON",
                   help="no cavity runs: take the costs at accuracy from the --json of an earlier run "
                   "(e.g. a GPU's, for --sphere where gmsh runs)")
    a = p.parse_args(argv)
    backend = get_backend(a.backend)
    wavelength = 2.0 / (math.sqrt(3.0) * a.mode)  # |k| = pi l sqrt(3); c = 1: also the period
    t_final = a.periods * wavelength
    print(f"rigid unit cube, mode ({a.mode}, {a.mode}, {a.mode}), {a.periods:g} period(s), "
          f"{backend.name} ({backend.device_name}), {a.precision}")
    def grids(cells):
        return [max(2, round(n * a.mode / 4)) for n in cells[:a.grids]]

    runs = [(dg_run, "DG", n, grids(DG_CELLS[n])) for n in a.dg_orders] + \
        [(hermite_run, "Hermite", m, grids(HERMITE_CELLS[m])) for m in a.hermite_degrees]
    rows, summary = [], []
    if a.costs:
        earlier = json.loads(open(a.costs).read())
        print(f"costs from {a.costs}: {earlier['device']}, {earlier['precision']}, mode {earlier['mode']}")
        runs, rows, summary = [], earlier["runs"], earlier["at_accuracy"]
    for run, method, degree, cells in runs:
        run(degree, cells[0], a.mode, t_final, backend, a.precision)  # compile, untimed
        these = []
        for n in cells:
            row = run(degree, n, a.mode, t_final, backend, a.precision)
            row["ns_per_dof_step"] = 1e9 * row["seconds"] / (row["dofs"] * row["steps"])
            row["dofs_per_wavelength"] = row["dofs"] ** (1 / 3) * wavelength
            print(f"{method:7s} {degree} cells {n:3d}: {row['dofs']:9d} DOFs ({row['dofs_per_wavelength']:5.1f}"
                  f" per wavelength), {row['steps']:5d} steps, {row['seconds']:8.3f} s, "
                  f"{row['ns_per_dof_step']:6.1f} ns per DOF-step, error {row['error']:.3e}", flush=True)
            these.append(row)
        rows += these
        for target in a.targets:
            hit = at_accuracy(these, target)
            summary.append({"method": method, "degree": degree, "target": target, **(hit or {}),
                            "ns_per_dof_step": float(np.median([r["ns_per_dof_step"] for r in these])),
                            "dofs_per_wavelength": hit["dofs"] ** (1 / 3) * wavelength if hit else None})
            print(f"  {method} {degree} at error {target:g}: " + (
                f"{hit['dofs']:.3g} DOFs ({hit['dofs'] ** (1 / 3) * wavelength:.1f} per wavelength), "
                f"{hit['steps']:.0f} steps, {hit['seconds']:.3g} s" if hit else "not bracketed by its grids"))
    sphere = []
    for sizes in a.sphere:
        order = 2 if sizes == "cpu" else 4  # the CPU sizes' and the case's
        dg_cost = [s["ns_per_dof_step"] * 1e-9 for s in summary if s["method"] == "DG" and s["degree"] == order]
        if not dg_cost:
            raise SystemExit(f"--sphere {sizes}: needs the DG order {order} runs (--dg-orders)")
        for overlap in a.overlap_cells:
            sphere += verify_sphere(sizes, dg_cost[0], [s for s in summary if s["method"] == "Hermite"
                                                        and s.get("dofs")], overlap)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"mode": a.mode, "periods": a.periods, "backend": backend.name,
                       "device": backend.device_name, "precision": a.precision, "runs": rows,
                       "at_accuracy": summary, "verify_sphere": sphere}, fh, indent=2)
    return rows


if __name__ == "__main__":
    main()
