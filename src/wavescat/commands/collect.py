"""`wavescat collect`: all frequencies of a case -> farfield.csv, summary.json, plots,
surface fields in VTU (its own module, so a `wavescat solve` job does not load the plotting
stack)."""
from __future__ import annotations

import logging
from pathlib import Path

from ..results.plots import case_plots
from ..solve import records
from . import case_arguments

log = logging.getLogger("wavescat.solve")


def run_collect(args) -> int:
    solutions = sorted((records.read_solution(p) for p in args.inputs),
                       key=lambda s: s["frequency_hz"])
    prints = {s["mesh_fingerprint"] for s in solutions}
    log.info("%s: %d frequencies solved on %d meshes", args.name, len(solutions), len(prints))
    reference = records.read_farfield_csv(args.reference) if args.reference else None
    mesh_warnings = records.mesh_warnings(args.mesh_stats)
    records.write_farfield_csv(args.farfield, solutions)
    summary = records.summary(solutions, args.name or "", reference, mesh_warnings)
    records.write_json(args.summary, summary)
    for w in summary["warnings"]:
        log.warning(w)
    if args.plots:
        make_plots(solutions, Path(args.plots), args.name or "", reference,
                   case_arguments(args).description, summary["warnings"])
    if args.surface:
        folder = Path(args.surface)
        folder.mkdir(parents=True, exist_ok=True)  # the rule's output directory
        for s in solutions:  # named as the solution files, f<index>.vtu
            records.write_surface_vtu(folder / f"{Path(s['path']).stem}.vtu", s)
    log.info("wrote %s and %s", args.farfield, args.summary)
    return 0


def make_plots(solutions, folder: Path, name: str, reference=None, description="",
               warnings=()) -> list[Path]:

    return case_plots(solutions, folder, name, reference, description, warnings)


def register(subparsers) -> None:
    c = subparsers.add_parser("collect", help="far-field table, summary and plots of a case")
    c.add_argument("--name", default="", help="case name")
    c.add_argument("--case", default="{}", help="case config as JSON (inline or a .json file)")
    c.add_argument("--inputs", nargs="+", required=True, help="HDF5 files of `wavescat solve`")
    c.add_argument("--farfield", required=True, help="farfield.csv to write")
    c.add_argument("--summary", required=True, help="summary.json to write")
    c.add_argument("--plots", default="", help="folder for the PNG plots")
    c.add_argument("--surface", default="",
                   help="folder for each solution's surface fields (<solution>.vtu)")
    c.add_argument("--reference", default="", help="exact reference_farfield.csv (sphere cases)")
    c.add_argument("--mesh-stats", nargs="*", default=[],
                   help="mesh statistics (.json) of the case's meshes; their warnings go into "
                        "the summary")
    c.set_defaults(func=run_collect)
