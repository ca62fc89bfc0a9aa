"""`wavescat mesh`: mesh one case's geometry, check it, write mesh and statistics.

Both outputs are written to temporary names in their folders and moved into place only
when everything succeeded, so a failed run leaves no half-written file.
"""
from __future__ import annotations

import json

from ..files import atomic_path
from ..geometry import mesh_case
from ..geometry.resolution import check_mesh_resolution
from . import case_arguments


def run(args) -> int:
    case = case_arguments(args, required=("geometry", "frequencies_hz"))
    mesh, stats = mesh_case(case, verbose=args.gmsh_verbose)
    # refuse a mesh far too coarse for the band's top frequency before any solve job starts
    check_mesh_resolution(mesh, case, max(case.frequencies_hz))
    if args.name:
        stats = {"case": args.name, **stats}
    with atomic_path(args.mesh) as tmp_mesh, atomic_path(args.stats) as tmp_stats:
        mesh.write(tmp_mesh, "gmsh22")
        tmp_stats.write_text(json.dumps(stats, indent=2) + "\n")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("mesh", help="mesh a case's geometry and write mesh statistics",
                              description=__doc__)
    p.add_argument("--case", required=True,
                   help="the validated case as JSON (geometry, frequencies_hz, mesh, boundary)")
    p.add_argument("--medium", required=True, help='medium as JSON, e.g. {"sound_speed": 1500}')
    p.add_argument("--mesh", required=True, help="output surface mesh (gmsh 2.2 ASCII .msh)")
    p.add_argument("--stats", required=True, help="output mesh statistics (.json)")
    p.add_argument("--name", default=None, help="case name recorded in the statistics")
    p.add_argument("--gmsh-verbose", action="store_true", help="let gmsh print to the terminal")
    p.set_defaults(func=run)
