"""`wavescat mesh`: mesh one case's geometry, check it, write mesh and statistics.

Both outputs are written to temporary names in their folders and moved into place only
when everything succeeded, so a failed run leaves no half-written file.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from ..errors import ConfigError


def _json_arg(name: str, text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--{name}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--{name} = {text!r}: must be a JSON object")
    return value


def _temp_beside(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}",
                                dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(name, 0o666 & ~umask)  # mkstemp makes 0600; results should read like any file
    return Path(name)


def run(args) -> int:
    from ..geometry import mesh_case

    case = _json_arg("case", args.case)
    medium = _json_arg("medium", args.medium)
    mesh, stats = mesh_case(case, medium, verbose=args.gmsh_verbose)
    if args.name:
        stats = {"case": args.name, **stats}
    out_mesh, out_stats = Path(args.mesh), Path(args.stats)
    temps = [_temp_beside(out_mesh), _temp_beside(out_stats)]
    try:
        mesh.write(temps[0], "gmsh22")
        temps[1].write_text(json.dumps(stats, indent=2) + "\n")
        os.replace(temps[0], out_mesh)
        os.replace(temps[1], out_stats)
    finally:
        for t in temps:
            t.unlink(missing_ok=True)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("mesh", help="mesh a case's geometry and write mesh statistics",
                              description=__doc__)
    p.add_argument("--case", required=True,
                   help="the validated case as JSON (geometry, frequencies_hz, mesh)")
    p.add_argument("--medium", required=True, help='medium as JSON, e.g. {"sound_speed": 1500}')
    p.add_argument("--mesh", required=True, help="output surface mesh (gmsh 2.2 ASCII .msh)")
    p.add_argument("--stats", required=True, help="output mesh statistics (.json)")
    p.add_argument("--name", default=None, help="case name recorded in the statistics")
    p.add_argument("--gmsh-verbose", action="store_true", help="let gmsh print to the terminal")
    p.set_defaults(func=run)
