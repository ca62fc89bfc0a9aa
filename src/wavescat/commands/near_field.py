"""`wavescat near-field`: the scattered and total pressure on a plane through a body (a
case's `near_field`), from solutions of `wavescat solve`: per solution a table and a map."""
from __future__ import annotations

import logging
import math
from pathlib import Path

from ..results.near_field import near_field, write_csv
from ..results.notices import plot_note
from ..results.plots import near_field_map
from ..solve.records import read_solution
from . import case_arguments

log = logging.getLogger("wavescat.near_field")


def run_near_field(args) -> int:
    case = case_arguments(args, required=("near_field",))
    settings = case.near_field
    folder = Path(args.out)
    folder.mkdir(parents=True, exist_ok=True)  # the rule's output directory
    title = (args.name or "") + (f"\n{case.description}" if case.description else "")
    for path in args.solutions:
        solution = read_solution(path)
        field = near_field(solution, settings.plane, settings.center, settings.size,
                           settings.points, settings.incidence, case.solver.backend)
        spacing = float(abs(field.grid.u[1] - field.grid.u[0]))
        wavelength = 2 * math.pi / field.wavenumber
        log.info("%s: %d x %d points %.4g m apart on the %s plane, wavelength %.4g m", path,
                 len(field.grid.u), len(field.grid.v), spacing, settings.plane, wavelength)
        if spacing > wavelength / 4:
            log.warning("near_field.points = %d: the points are %.3g wavelengths apart at "
                        "%.6g Hz, so the map undersamples the wave; raise points",
                        settings.points, spacing / wavelength, field.frequency_hz)
        stem = Path(path).stem
        write_csv(folder / f"{stem}.csv", field)
        near_field_map(folder / f"{stem}.png", field, title, plot_note(solution["warnings"]))
    log.info("wrote %d near-field map(s) to %s", len(args.solutions), folder)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("near-field", help="pressure on a plane through the body")
    p.add_argument("--name", default="", help="case name (plot titles)")
    p.add_argument("--case", required=True,
                   help="case config as JSON with its near_field block (inline or a .json file)")
    p.add_argument("--solutions", nargs="+", required=True, help="HDF5 files of `wavescat solve`")
    p.add_argument("--out", required=True, help="folder for <solution>.csv and <solution>.png")
    p.set_defaults(func=run_near_field)
