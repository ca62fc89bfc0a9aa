"""The default submarine end to end, stage by stage, at several frequencies.

    PYTHONUNBUFFERED=1 python bench/bench_submarine.py --freq 250 500 1000 2000 \
        [--backend gpu] [--precision double] [--out sub.csv] [--compare-to earlier.csv] \
        [--mesh hull.msh | --mesh-dir meshes/] [--kd-max 30|none] [--format hmatrix] \
        [--storage auto|single|double ...]
    python bench/bench_submarine.py --freq 1000 2000 --blocks none 30 20   # partition only
    python bench/bench_submarine.py --freq 1000 --storage double single   # storage compared

The case is `submarine` of config/config.yaml (broadside incidence, 361 bistatic receivers
in the xy plane, the workflow's solver settings) at each frequency, meshed with the
workflow's own settings (`wavescat.geometry.mesh_case`, as the `mesh` rule does) unless
`--mesh` gives a stored mesh, and solved by the solver's own assembly, GMRES and far field
(`wavescat.solve.driver`: assemble_system, solve_system, far_fields): `--boundary` gives it
any boundary kind.
Every stage prints as soon as it ends (a run stopped by a
time limit still shows the stages done): mesh; per operator the singular quadrature
(near-pair corrections), dense near field, ACA cross steps, recompression, blocks, ACA
steps, compression ratio and ranks; preconditioner; GMRES (iterations); far field; the
device's and the host's peak memory. `--out` writes the far field (the `farfield.csv`
columns); `--compare-to` an earlier such file prints the RMS TS difference in dB per
frequency over the receivers (the accuracy goal: within 0.05 dB of the reference at 1 kHz).

Device memory, two measures: "at stage ends" is the CuPy pool's size sampled when each stage
ends (what the tables of bench/README.md before 2026-11-28 call the peak); "high-water" is
the largest the pool's arrays and the pool itself reached at any allocation (an allocator
hook): the memory the run needs and the memory it held. `--storage` (solver.hmatrix.storage)
with several values runs each in its own process (the host peak is a process's) and prints a
table: per storage the operators' storage and compression, the peaks, and the TS against
the first storage's (RMS and max dB over the receivers).

Partition of the default submarine (`--blocks none 40 30 20`, eta 1, leaf 64; the 2-core
CPU, 2026-11-25): at 250 Hz (6,459 DOFs) the largest admissible block has k diam = 21, so
kd_max >= 30 leaves the partition as it was (20: 2,002 blocks in place of 1,990). At 1 kHz
(75,650 DOFs) without the bound: 124,548 admissible blocks, the largest 18,913 rows wide
with k diam = 87.6, 56 blocks wider than 4,096 rows; kd_max = 30: 128,268 blocks (+3%),
none wider than 1,183 rows (k diam <= 29.5), so the big blocks batch instead of running one
to a chunk. The GPU figures (time per stage against frequency, --kd-max none against the
default) are the coordinator's runs:
    python bench/bench_submarine.py --freq 1000 --backend gpu --kd-max none --out ref.csv
    python bench/bench_submarine.py --freq 250 500 1000 2000 --backend gpu --out new.csv \
        --compare-to ref.csv
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix.block_tree import build_block_tree
from wavescat.bem.assembly.hmatrix.clouds import space_cloud
from wavescat.bem.assembly.hmatrix.cluster_tree import build_cluster_tree
from wavescat.bem.assembly.hmatrix.report import host_peak_bytes
from wavescat.bem.formulations import formulation_for_case
from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.planning.resources import solve_format
from wavescat.solve.driver import assemble_system, far_fields, solve_system


def say(text=""):
    print(text, flush=True)


class DevicePeak:
    """Largest memory the backend's pool held at the stage ends (`peak`) and at any
    allocation (`arrays`: bytes of live arrays; `held`: the pool's size) (CuPy), else 0."""

    def __init__(self, be):
        self.be, self.peak, self.arrays, self.held = be, 0, 0, 0
        if be.is_gpu:
            pool = be.xp.get_default_memory_pool()

            def malloc(size):
                mem = pool.malloc(size)
                self.arrays = max(self.arrays, pool.used_bytes())
                self.held = max(self.held, pool.total_bytes())
                return mem

            be.xp.cuda.set_allocator(malloc)

    def live(self) -> str:
        """'; device memory in use N GiB' (CuPy's pool: arrays alive now), or ''."""
        if not self.be.is_gpu:
            return ""
        used = self.be.xp.get_default_memory_pool().used_bytes()
        return f"; device memory in use {used / 2**30:.2f} GiB"

    def sample(self):
        if self.be.is_gpu:
            self.be.synchronize()
            self.peak = max(self.peak, int(self.be.xp.get_default_memory_pool().total_bytes()))
        return self.peak


def case_at(frequency, args):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    case = cfg["cases"]["submarine"]
    case["frequencies_hz"] = [float(frequency)]
    case["solver"] = {**(case.get("solver") or {}), "operator_format": args.format,
                      "backend": args.backend, "precision": args.precision}
    case["solver"]["hmatrix"] = {**(case["solver"].get("hmatrix") or {}),
                                 "storage": args.storage[0]}
    if args.kd_max is not None:
        kd = None if args.kd_max.lower() == "none" else float(args.kd_max)
        case["solver"]["hmatrix"] = {**(case["solver"].get("hmatrix") or {}), "kd_max": kd}
    if args.directional:
        aca, eta2, order = args.directional.split(":")
        case["solver"]["directional"] = {"aca_kd_max": float(aca), "eta2": float(eta2),
                                         "order": int(order)}
    if args.boundary:
        case["boundary"] = json.loads(args.boundary)
    cfg["run"] = ["submarine"]
    prepared = prepare_config(cfg, base_dir=ROOT)
    return solve_case(prepared, "submarine"), Case.from_config(prepared, "submarine")


def mesh_for(frequency, args, case):
    """`--mesh`, else `--mesh-dir`/submarine_<f>Hz.msh when it exists, else the workflow's
    meshing (saved there for the next run, e.g. on a machine without gmsh)."""
    from wavescat.surface import SurfaceMesh  # noqa: PLC0415

    if args.mesh:
        return SurfaceMesh.from_file(args.mesh)
    stored = Path(args.mesh_dir) / f"submarine_{frequency:g}Hz.msh" if args.mesh_dir else None
    if stored is not None and stored.exists():
        return SurfaceMesh.from_file(stored)
    from wavescat.geometry import mesh_case  # noqa: PLC0415 - gmsh: not on every machine
    mesh, _stats = mesh_case(case)
    if stored is not None:
        stored.parent.mkdir(parents=True, exist_ok=True)
        mesh.write(stored, "gmsh22")
    return mesh


def operator_line(name, op, seconds):
    rep = getattr(op, "report", None)
    if rep is None:
        return f"  {name:22s} dense {seconds:8.2f} s"
    t = rep["time_s"]
    ranks = rep["rank_histogram"]
    return (f"  {name:22s} {seconds:8.2f} s: singular quadrature {t.get('singular_quadrature', 0):.2f}, "
            f"trees {t['trees']:.2f}, near field {t['near_field']:.2f}, ACA cross "
            f"{t.get('aca_cross', 0):.2f}, recompression {t.get('recompression', 0):.2f} s; "
            f"blocks {rep['blocks']['admissible']} low-rank / {rep['blocks']['dense']} dense, "
            f"ACA steps {rep['blocks']['aca_steps']}, compression {rep['compression_ratio']:.4f} "
            f"({rep['storage_bytes'] / 2**30:.2f} GiB), rank max {rep['rank_max']} mean "
            f"{rep['rank_mean']:.1f}, evaluations {rep['kernel_evaluations']:.3e}\n"
            f"  {'':22s} ranks {json.dumps(ranks)}")


def run_frequency(frequency, args, be, peak):
    case, full_case = case_at(frequency, args)
    timings = {}
    t0 = time.perf_counter()
    mesh = mesh_for(frequency, args, full_case)
    timings["mesh"] = time.perf_counter() - t0
    k = case.medium.wavenumber(frequency)
    say(f"{frequency:g} Hz: k = {k:.4f}/m, k L = {k * 62:.0f}, {mesh.n_triangles} elements, "
        f"{2 * math.pi / k / mesh.edge_lengths.mean():.1f} elements per wavelength, "
        f"{case.boundary.kind} body on {be.device_name} ({args.precision}, storage "
        f"{args.storage[0]}); hmatrix {json.dumps(case.solver.as_dict()['hmatrix'])}")
    say(f"  mesh {timings['mesh']:.2f} s")
    reports = {}

    def each(key, op, seconds):  # the solver's assembly, one operator at a time
        timings[f"assembly_{key}"] = seconds
        reports[key] = getattr(op, "report", None)
        peak.sample()
        say(operator_line(key, op, seconds) + peak.live())

    work = {"work_bytes": int(args.work_gib * 2**30)} if args.work_gib else {}
    # --format auto: as `wavescat solve` resolves it, against this machine's memory
    assembled = assemble_system(case, mesh, k, each=each, hmatrix_options=work,
                                choose_format=solve_format)
    formulation, space, system = assembled.formulation, assembled.space, assembled.system
    timings.update(assembled.timings)
    t0 = time.perf_counter()
    incidence, receivers = case.incidence, case.receivers
    rhs = formulation.rhs(system, space, k, incidence.directions)
    be.synchronize()
    timings["preconditioner"] += time.perf_counter() - t0
    peak.sample()
    say(f"  {space.n_dofs} DOFs ({formulation.n_unknowns(space)} unknowns), "
        f"{assembled.operator_format} ({assembled.format_reason}); preconditioner "
        f"{timings['preconditioner']:.2f} s")
    solved = solve_system(assembled, rhs, case.solver.gmres, frequency)  # the solver's GMRES
    timings["solve"] = solved.seconds
    its = solved.iterations.tolist()
    say(f"  GMRES {timings['solve']:.2f} s, {its} iterations, residual "
        f"{float(np.max(solved.residuals)):.2e}")
    t0 = time.perf_counter()
    far, _mono = far_fields(assembled, k, incidence, receivers, solved.pressure)
    timings["far_field"] = time.perf_counter() - t0
    timings["total"] = sum(v for key, v in timings.items()
                           if key in ("mesh", "assembly", "preconditioner", "solve", "far_field"))
    peak.sample()
    ts = 20 * np.log10(np.abs(far[:, 0]))
    say(f"  far field {timings['far_field']:.2f} s; TS {ts.min():.2f} .. {ts.max():.2f} dB "
        f"(mean {ts.mean():.2f}); backscatter (receiver 270 deg) {ts[270 % len(ts)]:.2f} dB")
    say(f"  total {timings['total']:.2f} s (mesh {timings['mesh']:.2f}, assembly "
        f"{timings['assembly']:.2f}, preconditioner {timings['preconditioner']:.2f}, GMRES "
        f"{timings['solve']:.2f}, far field {timings['far_field']:.2f}); device peak "
        f"{peak.peak / 2**30:.2f} GiB at stage ends (high-water: arrays "
        f"{peak.arrays / 2**30:.2f} GiB, pool {peak.held / 2**30:.2f} GiB), host peak "
        f"{host_peak_bytes() / 2**30:.2f} GiB")
    theta = np.degrees(np.arccos(np.clip(receivers.vectors[:, 2], -1, 1)))
    phi = np.degrees(np.arctan2(receivers.vectors[:, 1], receivers.vectors[:, 0])) % 360
    rows = [(frequency, th, ph, F.real, F.imag, t) for th, ph, F, t in zip(theta, phi, far[:, 0], ts)]
    summary = {"frequency_hz": frequency, "dofs": space.n_dofs, "elements": mesh.n_triangles,
               "iterations": its, "time_s": timings, "device_peak_bytes": peak.peak,
               "device_high_water_bytes": peak.arrays, "device_pool_high_water_bytes": peak.held,
               "host_peak_bytes": host_peak_bytes(), "storage": args.storage[0],
               "operators": {n: None if r is None else {
                   key: r[key] for key in ("compression_ratio", "rank_max", "rank_mean",
                                           "rank_histogram", "blocks", "storage_bytes",
                                           "bytes_tight", "storage_dtype",
                                           "kernel_evaluations", "time_s")}
                   for n, r in reports.items()}}
    say("  json " + json.dumps(summary, default=float))
    return rows


def block_statistics(frequency, args):
    """`--blocks`: the partition only (mesh, cluster and block trees; no assembly) for each
    kd_max of `--blocks`: admissible blocks, their largest side and k diam, and how the
    batched ACA would chunk them under its 2 GiB budget with the a-priori rank guess."""
    case, full_case = case_at(frequency, args)
    t0 = time.perf_counter()
    mesh = mesh_for(frequency, args, full_case)
    space = formulation_for_case(case).space(mesh)
    k = case.medium.wavenumber(frequency)
    hm = case.solver.hmatrix
    cloud = space_cloud(space)
    tree = build_cluster_tree(cloud.lo, cloud.hi, hm.leaf_size)
    say(f"{frequency:g} Hz: {space.n_dofs} DOFs, k = {k:.4f}/m, meshed and clustered in "
        f"{time.perf_counter() - t0:.1f} s")
    say(f"  {'kd_max':>7} {'admissible':>10} {'dense':>7} {'L_max':>6} {'kd_max_seen':>11} "
        f"{'blocks_L>4096':>13} {'chunks':>7} {'1-block chunks':>14}")
    for spec in args.blocks:
        kd = None if spec.lower() == "none" else float(spec)
        bt = build_block_tree(tree, tree, hm.eta, k=k, kd_max=kd)
        far = bt.far
        side = np.maximum(far["m"], far["n"])
        chunks = single = 0
        for level in np.unique(far["level"]):
            sel = far["level"] == level
            L = int(side[sel].max())
            kdl = k * float(far["diam"][sel].max())
            k_est = min(L, 64 + int(0.5 * kdl * kdl))
            per = max(1, int((2 << 30) // (16 * L * (2 * k_est + 12))))
            nb = int(sel.sum())
            chunks += -(-nb // per)
            single += nb if per == 1 else 0
        say(f"  {spec:>7} {len(far['r0']):10d} {len(bt.near['r0']):7d} {int(side.max()):6d} "
            f"{k * far['diam'].max():11.1f} {int(np.sum(side > 4096)):13d} {chunks:7d} {single:14d}")


def read_far_field(path):
    with open(path) as fh:
        rows = list(csv.DictReader(fh))
    out = {}
    for r in rows:
        out.setdefault(float(r["frequency_hz"]), []).append(float(r["ts_db"]))
    return {f: np.array(v) for f, v in out.items()}


def compare(rows, reference):
    ts = np.array([r[5] for r in rows])
    f = rows[0][0]
    near = min(reference, key=lambda g: abs(g - f)) if reference else None
    if near is None or abs(near - f) > 1e-6 * f or len(reference[near]) != len(ts):
        say(f"  compare: no {f:g} Hz rows with {len(ts)} receivers in the reference")
        return
    d = ts - reference[near]
    say(f"  TS against the reference at {f:g} Hz: RMS {np.sqrt(np.mean(d ** 2)):.4f} dB, "
        f"max {np.max(np.abs(d)):.4f} dB over {len(d)} receivers")


def compare_storages(args):
    """`--storage` with several values: each in its own process (the same frequencies, mesh
    and settings), its far field written beside `--out` (or to a temporary folder), then one
    table row per frequency and storage, the TS against the first storage's."""
    base = ["--freq", *(f"{f:g}" for f in args.freq), "--backend", args.backend,
            "--precision", args.precision, "--format", args.format]
    for flag, value in (("--kd-max", args.kd_max), ("--work-gib", args.work_gib or None),
                        ("--mesh", args.mesh), ("--mesh-dir", args.mesh_dir),
                        ("--directional", args.directional)):
        if value:
            base += [flag, str(value)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "farfield.csv"
        runs = {}
        for storage in args.storage:
            path = out.with_name(f"{out.stem}_{storage}{out.suffix}")
            proc = subprocess.Popen([sys.executable, __file__, *base, "--storage", storage,
                                     "--out", str(path)], stdout=subprocess.PIPE, text=True)
            summaries = []
            for line in proc.stdout:
                print(line, end="", flush=True)
                if line.startswith("  json "):
                    summaries.append(json.loads(line[len("  json "):]))
            proc.wait()
            far = read_far_field(path) if path.exists() else {}
            runs[storage] = ({s["frequency_hz"]: s for s in summaries}, far)
    first = args.storage[0]
    say(f"\n# storage compared (TS against {first}; device memory: high-water of the arrays / "
        "of the pool, and the pool at stage ends)")
    say("| f | storage | operators: storage GiB (compression) | device GiB | host peak GiB "
        "| total s | GMRES its | TS RMS / max dB |")
    say("| ---: | --- | --- | --- | ---: | ---: | ---: | --- |")
    for f in args.freq:
        for storage in args.storage:
            summary, far = runs[storage][0].get(f), runs[storage][1].get(f)
            if summary is None:
                say(f"| {f:g} | {storage} | failed (see its output above) | | | | | |")
                continue
            ops = ", ".join(f"{name} {r['storage_bytes'] / 2**30:.2f} ({100 * r['compression_ratio']:.2f}%)"
                            for name, r in summary["operators"].items() if r)
            ref = runs[first][1].get(f)
            ts = "-" if storage == first or ref is None or far is None else \
                "{:.2e} / {:.2e}".format(np.sqrt(np.mean((far - ref) ** 2)), np.max(np.abs(far - ref)))
            gib = [summary[key] / 2**30 for key in ("device_high_water_bytes",
                                                    "device_pool_high_water_bytes",
                                                    "device_peak_bytes")]
            say(f"| {f:g} | {storage} | {ops} | {gib[0]:.2f} / {gib[1]:.2f} / {gib[2]:.2f} | "
                f"{summary['host_peak_bytes'] / 2**30:.2f} | {summary['time_s']['total']:.1f} | "
                f"{summary['iterations']} | {ts} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--freq", type=float, nargs="+", default=[250.0])
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    ap.add_argument("--precision", default="double", choices=["double", "single"])
    ap.add_argument("--format", default="hmatrix", choices=["auto", "dense", "hmatrix", "directional"])
    ap.add_argument("--kd-max", default=None, help="override solver.hmatrix.kd_max (a number or none)")
    ap.add_argument("--directional", default="", metavar="ACA_KD_MAX:ETA2:ORDER",
                    help="--format directional: override solver.directional")
    ap.add_argument("--boundary", default="",
                    help="a boundary block as JSON in place of the case's (any boundary kind)")
    ap.add_argument("--work-gib", type=float, default=0.0,
                    help="the ACA's working memory per chunk of blocks (default 2 GiB)")
    ap.add_argument("--mesh", default="", help="a stored mesh (.msh) in place of meshing")
    ap.add_argument("--mesh-dir", default="", help="stored meshes submarine_<f>Hz.msh: read "
                    "when present, else written after meshing")
    ap.add_argument("--out", default="", help="write the far field here (farfield.csv columns)")
    ap.add_argument("--compare-to", default="", help="an earlier --out file: RMS TS difference")
    ap.add_argument("--blocks", nargs="+", default=None, metavar="KD_MAX",
                    help="only the block partition for these kd_max values (e.g. none 30 20)")
    ap.add_argument("--storage", nargs="+", default=["auto"], choices=["auto", "single", "double"],
                    help="solver.hmatrix.storage; several: each in its own process, compared")
    args = ap.parse_args(argv)
    if args.blocks:
        for f in args.freq:
            block_statistics(f, args)
        return
    if len(args.storage) > 1:
        return compare_storages(args)
    be = get_backend(args.backend)
    peak = DevicePeak(be)
    reference = read_far_field(args.compare_to) if args.compare_to else None
    say(f"# bench_submarine on {be.device_name} ({be.name}), {args.precision}, frequencies "
        f"{args.freq} Hz, started {time.strftime('%Y-%m-%d %H:%M:%S')}")
    all_rows = []
    for f in args.freq:
        rows = run_frequency(f, args, be, peak)
        all_rows += rows
        if reference is not None:
            compare(rows, reference)
        if args.out:  # rewritten after every frequency: a stopped run keeps what it finished
            with open(args.out, "w", newline="") as fh:
                w = csv.writer(fh)
                w.writerow(["frequency_hz", "theta_deg", "phi_deg", "re_F", "im_F", "ts_db"])
                w.writerows(all_rows)


if __name__ == "__main__":
    main()
