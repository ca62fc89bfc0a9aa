"""One case solved on 1, 2, 4, ... MPI ranks through `wavescat solve` (the solve rule's own
command), stage by stage: time, memory of each rank, GMRES iterations, the reductions, and
the far field against the first run's.

    PYTHONUNBUFFERED=1 python bench/bench_ranks.py --case submarine --freq 1000 \
        --ranks 1 2 4 [--backend gpu] [--mesh hull.msh | --mesh-dir meshes/] \
        [--reduction auto mpi nccl] [--work DIR] [--config config/config.yaml] \
        [--format directional]

The case is `--case` of `--config` (default: the workflow's config/config.yaml) at one
frequency, with `solver.ranks` set to each count and `--backend`; its mesh is `--mesh`, else
`--mesh-dir`/<case>_<f>Hz.msh when that exists, else the workflow's meshing (saved there for
the next run). Each run is `mpiexec -n N python -m wavescat solve ...` (the mpiexec beside
this Python: pip install -e '.[mpi]'), one rank per GPU on a GPU machine (solve/parallel.py
binds rank r of a node to its r-th GPU). Per run it prints the stages (assembly,
preconditioner, GMRES, far field: rank 0's, the ranks wait for each other in every
product), the slowest rank's assembly, each rank's operator storage, host peak and device
pool, the GMRES iterations, the reductions (method, count, bytes, seconds) and the far
field's largest relative difference and RMS TS difference (dB) from the first run.
`--reduction` repeats each count with WAVESCAT_REDUCTION set (device arrays: NCCL or MPI
through the host). A run's log is in --work (default: a temporary folder).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]

from wavescat.configuration.case import Case
from wavescat.configuration.config import SOLVE_KEYS, case_json, medium_json, prepare_config

GIB = 2**30


def say(text=""):
    print(text, flush=True)


def case_and_medium(args):
    """(the solve rule's case block, the medium block, the whole Case) of `--case`."""
    cfg = yaml.safe_load(Path(args.config).read_text())
    case = cfg["cases"][args.case]
    case["frequencies_hz"] = [float(args.freq)]
    case["solver"] = {**(case.get("solver") or {}), "backend": args.backend}
    if args.format:
        case["solver"]["operator_format"] = args.format
    cfg["run"] = [args.case]
    prepared = prepare_config(cfg, base_dir=ROOT)
    return (json.loads(case_json(prepared, args.case, SOLVE_KEYS)),
            json.loads(medium_json(prepared)), Case.from_config(prepared, args.case))


def mesh_file(args, full_case) -> Path:
    """`--mesh`, else `--mesh-dir`/<case>_<f>Hz.msh, made by the workflow's meshing if absent."""
    if args.mesh:
        return Path(args.mesh)
    folder = Path(args.mesh_dir) if args.mesh_dir else Path(args.work)
    stored = folder / f"{args.case}_{args.freq:g}Hz.msh"
    if not stored.exists():
        from wavescat.geometry import mesh_case  # noqa: PLC0415

        t0 = time.perf_counter()
        mesh, _stats = mesh_case(full_case)
        stored.parent.mkdir(parents=True, exist_ok=True)
        mesh.write(stored, "gmsh22")
        say(f"meshed {args.case} at {args.freq:g} Hz in {time.perf_counter() - t0:.1f} s: {stored}")
    return stored


def run(args, case, medium, mesh, ranks, reduction):
    """One solve on `ranks` ranks; its solution file's attributes and arrays."""
    import h5py  # noqa: PLC0415

    from wavescat.planning.resources import mpiexec_command  # noqa: PLC0415

    # the workflow's default launcher: Open MPI's unbound
    mpiexec = mpiexec_command(shlex.quote(
        shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or "mpiexec"))
    tag = f"ranks{ranks}_{reduction}"
    out = Path(args.work) / f"{tag}.h5"
    case = {**case, "solver": {**case["solver"], "ranks": ranks}}
    command = [*shlex.split(mpiexec), "-n", str(ranks), sys.executable, "-m", "wavescat", "solve",
               "--case", json.dumps(case), "--medium", json.dumps(medium), "--mesh", str(mesh),
               "--frequency", repr(float(args.freq)), "--out", str(out)]
    env = {**os.environ, "WAVESCAT_REDUCTION": reduction}
    t0 = time.perf_counter()
    with open(Path(args.work) / f"{tag}.log", "w") as log:
        done = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        say(f"{ranks} rank(s), reduction {reduction}: failed (exit {done.returncode}), log "
            f"{Path(args.work) / f'{tag}.log'}")
        return None
    with h5py.File(out) as f:
        res = dict(f.attrs)
        res["far_field"] = f["far_field"][()]
        res["iterations"] = f["iterations"][()]
    res["parallel"] = json.loads(res["parallel"])
    res["wall"] = wall
    res["osrc"] = [line.strip() for line in (Path(args.work) / f"{tag}.log").read_text().splitlines()
                   if "OSRC:" in line]
    return res


def report(res, first):
    par = res["parallel"]
    stages = {s: float(res[f"time_{s}_s"]) for s in ("assembly", "preconditioner", "solve",
                                                       "far_field")}
    ranks = par["ranks"]
    red = par["reductions"]
    say(f"{ranks} rank(s): wall {res['wall']:.1f} s (with start-up and kernel loading); "
        + ", ".join(f"{s} {t:.2f} s" for s, t in stages.items())
        + f"; GMRES iterations {res['iterations'].tolist()}")
    slowest = max(r["timings_s"]["assembly"] for r in par["per_rank"])
    say(f"  assembly of the slowest rank {slowest:.2f} s; reductions: {red['calls']} x "
        f"{red['bytes'] / max(red['calls'], 1) / 2**20:.2f} MiB by {red['method']}, "
        f"{red['seconds']:.3f} s in all")
    for r in par["per_rank"]:
        device = f", device pool {r['device_pool_bytes'] / GIB:.2f} GiB" \
            if "device_pool_bytes" in r else ""
        if r.get("operator_host_bytes"):
            device += f", blocks moved to host {r['operator_host_bytes'] / GIB:.2f} GiB"
        say(f"  rank {r['rank']}: operators {r['operator_bytes'] / GIB:.3f} GiB, host peak "
            f"{r['host_peak_bytes'] / GIB:.2f} GiB{device}, {r.get('threads', '?')} threads ({r.get('blas_threads', '?')} "
            f"BLAS) on {r.get('cpus', '?')} CPUs")
        for name, op in (r.get("operators") or {}).items():
            t = op["time_s"]
            say(f"  rank {r['rank']}: {name} " + ", ".join(
                f"{part} {t[part]:.2f}" for part in ("trees", "singular_quadrature", "near_field",
                                                     "aca", "transfers", "total") if part in t) + " s")
            for device in op.get("aca_levels", []):
                say("    ACA by level (level L: blocks, chunks, steps, seconds): " + "; ".join(
                    f"{v['level']} {v['L']}: {v['blocks']}, {v['chunks']}, {v['steps']}, "
                    f"{v['seconds']:.2f}" for v in device))
        pr = r.get("products") or {}
        if pr.get("count"):
            ops = pr.get("operator_seconds")
            split = "" if ops is None else \
                f" (boundary operators {ops:.2f} s, sparse solves and the rest {pr['seconds'] - ops:.2f} s)"
            say(f"  rank {r['rank']}: GMRES's {pr['count']} products {pr['seconds']:.2f} s{split}")
    for line in res.get("osrc", []):
        say(f"  rank 0: {line}")
    if first is not None and first is not res:
        a, b = first["far_field"], res["far_field"]
        rel = float(np.linalg.norm(b - a) / np.linalg.norm(a))
        ts = lambda F: 20 * np.log10(np.abs(F))  # noqa: E731
        rms = float(np.sqrt(np.mean((ts(b) - ts(a)) ** 2)))
        say(f"  far field against {first['parallel']['ranks']} rank(s): relative difference "
            f"{rel:.2e}, RMS TS difference {rms:.2e} dB")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", default=str(ROOT / "config" / "config.yaml"))
    p.add_argument("--case", default="submarine")
    p.add_argument("--freq", type=float, required=True)
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    p.add_argument("--format", default="", choices=["", "hmatrix", "directional"],
                   help="solver.operator_format over the case's (auto: hmatrix on several ranks)")
    p.add_argument("--mesh", default="")
    p.add_argument("--mesh-dir", default="")
    p.add_argument("--reduction", nargs="+", default=["auto"], choices=["auto", "mpi", "nccl"])
    p.add_argument("--work", default="")
    args = p.parse_args(argv)
    args.work = args.work or tempfile.mkdtemp(prefix="bench_ranks_")
    Path(args.work).mkdir(parents=True, exist_ok=True)
    case, medium, full_case = case_and_medium(args)
    mesh = mesh_file(args, full_case)
    k = full_case.medium.wavenumber(args.freq)
    say(f"{args.case} at {args.freq:g} Hz (k = {k:.4f}/m), mesh {mesh}, backend {args.backend}; "
        f"runs in {args.work}")
    first = None
    for ranks in args.ranks:
        for reduction in args.reduction:
            res = run(args, case, medium, mesh, ranks, reduction)
            if res is None:
                continue
            first = first or res
            if reduction != args.reduction[0]:
                say(f"[WAVESCAT_REDUCTION={reduction}]")
            report(res, first)


if __name__ == "__main__":
    main()
