"""`wavescat bem-probes`: the BEM scattered pressure at points off the surface.

The surface solution and its mesh come from the HDF5 file of `wavescat solve`; the
formulation that wrote it (bem/formulations/) gives the potential of its unknown (for a
rigid body the double-layer potential of the total surface pressure, p_s = DL p).
"""
from __future__ import annotations

import csv
import json

import numpy as np

from ..bem.formulations import formulation_of_record
from ..errors import ConfigError
from ..solve.records import read_solution, solution_mesh
from ..files import atomic_path


def scattered_pressure(solution: dict, points, incidence: int = 0, backend="cpu") -> np.ndarray:
    """BEM scattered pressure at `points` (n, 3) for one incidence direction of a solution."""
    pressure = np.atleast_2d(solution["surface_pressure"])  # (n_incidence, n_dofs)
    if not 0 <= incidence < len(pressure):
        raise ConfigError(f"--incidence = {incidence}: the solution has {len(pressure)} "
                          "incidence direction(s)")
    formulation = formulation_of_record(solution)
    space = formulation.space(solution_mesh(solution))
    potential = formulation.potential(space, np.asarray(points, float),
                                      float(solution["wavenumber"]), backend=backend)
    return np.asarray(potential @ pressure[incidence])


def bem_probes(args) -> None:
    points = np.asarray(json.loads(args.points), float).reshape(-1, 3)
    rows = []
    for path in args.solution:
        solution = read_solution(path)
        p = scattered_pressure(solution, points, args.incidence)
        rows += [[float(solution["frequency_hz"]), *x, v.real, v.imag] for x, v in zip(points, p)]
    with atomic_path(args.out) as tmp, open(tmp, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["frequency_hz", "x", "y", "z", "re_p_bem", "im_p_bem"])
        out.writerows([[repr(float(v)) for v in row] for row in rows])


def register(subparsers) -> None:
    p = subparsers.add_parser("bem-probes", help="BEM scattered pressure at probe points")
    p.add_argument("--solution", required=True, nargs="+",
                   help="HDF5 files of `wavescat solve` (one row per file and point, in this order)")
    p.add_argument("--points", required=True, help="JSON list of [x, y, z] points off the surface")
    p.add_argument("--incidence", type=int, default=0, help="incidence direction index")
    p.add_argument("--out", required=True, help="CSV frequency_hz,x,y,z,re_p_bem,im_p_bem")
    p.set_defaults(func=bem_probes)
