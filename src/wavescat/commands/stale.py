"""`wavescat stale`: the files under results/<case>/ that the current config no longer builds,
listed or deleted (the workflow's `stale` and `clean_stale` targets).

Only the folders of the cases the config holds are looked at, and in them only what a
change of that case's config leaves behind: band meshes beyond its frequency bands, solutions
beyond its frequencies (with their logs), and the near-field maps and TS averages of a case
that no longer asks for them. Other folders under results/ (cases of another config,
studies, verification) are never touched.
"""
from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

from .solve import _json_arg

log = logging.getLogger("wavescat.stale")

BAND = re.compile(r"(?:meshes/b|logs/mesh_b)(\d+)(?:\.msh|_stats\.json|\.log)$")
FREQUENCY = re.compile(r"(?:solutions/f|logs/solve_f)(\d+)(?:\.h5|\.log)$")


def stale_files(results: Path, plan: dict) -> list[Path]:
    """plan: {case: {"bands": n, "frequencies": n, "near_field": bool, "averages": bool}}."""
    out = []
    for case, built in plan.items():
        folder = results / case
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            name = path.relative_to(folder).as_posix()
            band, index = BAND.match(name), FREQUENCY.match(name)
            if (band and int(band.group(1)) >= built["bands"]
                    or index and int(index.group(1)) >= built["frequencies"]):
                out.append(path)
        if not built["near_field"] and (folder / "near_field").exists():
            out.append(folder / "near_field")
        if not built["averages"]:
            out += [folder / n for n in ("ts_averages.csv", "ts_averages.png")
                    if (folder / n).exists()]
    return out


def run_stale(args) -> int:
    plan = _json_arg(args.plan, "plan")
    found = stale_files(Path(args.results), plan)
    for path in found:
        if args.delete:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        print(("removed " if args.delete else "stale ") + str(path))
    log.info("%d stale file(s) or folder(s) under the %d case folders of this config%s",
             len(found), len(plan), ", removed" if args.delete else
             " (snakemake clean_stale removes them)")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("stale", help="files the current config no longer builds")
    p.add_argument("--plan", required=True,
                   help="JSON {case: {bands, frequencies, near_field, averages}} (or a file)")
    p.add_argument("--results", default="results", help="the results folder")
    p.add_argument("--delete", action="store_true", help="remove them (else list them)")
    p.set_defaults(func=run_stale)
