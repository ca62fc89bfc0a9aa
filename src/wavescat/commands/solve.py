"""`wavescat solve`: one case, one frequency -> HDF5 (`wavescat collect`, which gathers a
case's frequencies, is commands/collect.py: a solve job does not load matplotlib)."""
from __future__ import annotations

import logging

from ..planning.resources import solve_format
from ..planning.sensitivity import solve_preflight
from ..progress import announce_compilation
from ..solve.driver import solve_frequency
from ..solve.parallel import start
from ..solve.records import write_solution
from ..surface import SurfaceMesh
from . import case_arguments

log = logging.getLogger("wavescat.solve")


def run_solve(args) -> int:
    case = case_arguments(args)
    # the MPI ranks first (solver.ranks), before anything starts CuPy: one GPU per rank
    ranks = start(case.solver.ranks)
    with ranks.stop_all_on_error("solve"):
        mesh = SurfaceMesh.from_file(args.mesh)
        # before any assembly: refuse a mesh far too coarse, warn of a hypersensitive case
        cautions = solve_preflight(case, mesh, float(args.frequency))
        for w in cautions:
            log.warning(w)
        announce_compilation(log)
        # operator_format auto against this machine's memory (planning.resources)
        result = solve_frequency(case, mesh, float(args.frequency), ranks=ranks,
                                 choose_format=solve_format)
        if not ranks.is_root:  # rank 0 writes what every rank solved
            return 0
        result.warnings.extend(w for w in cautions if w not in result.warnings)
        write_solution(args.out, result, mesh, case_name=args.name or "")
    t = result.timings
    log.info("wrote %s: %d DOFs, iterations %s, assembly %.2f s, preconditioner %.2f s, "
             "solve %.2f s, far field %.2f s", args.out, result.dofs, result.iterations.tolist(),
             t["assembly"], t["preconditioner"], t["solve"], t["far_field"])
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("solve", help="BEM solve of one case at one frequency (the "
                              "formulation of its boundary)")
    p.add_argument("--case", required=True, help="case config as JSON (inline or a .json file)")
    p.add_argument("--medium", required=True, help="medium as JSON: {sound_speed, density}")
    p.add_argument("--mesh", required=True, help="surface mesh (.msh)")
    p.add_argument("--frequency", required=True, type=float, help="frequency in Hz")
    p.add_argument("--out", required=True, help="HDF5 file to write")
    p.add_argument("--name", default="", help="case name stored in the file")
    p.set_defaults(func=run_solve)
