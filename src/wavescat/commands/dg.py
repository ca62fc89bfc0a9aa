"""`wavescat verify-dg` (DG convergence on a rigid-box cavity mode) and `wavescat dg-scatter`
(time-domain rigid-sphere scattering at one frequency, amplitudes at probe points)."""
from __future__ import annotations

import csv
import json
import logging
import os
import time

import numpy as np

from ..backend import get_backend
from ..defaults import DG_CROSS_CHECK
from ..errors import ConfigError, MeshError
from ..files import atomic_path
from ..plots import convergence, probe_comparison
from ..reference.rigid_sphere import scattered_field
from ..timedomain.checks import order_shortfalls, require, round_off_floor
from ..timedomain.dg import cavity  # (cavity.convergence_study: tests replace it)
from ..timedomain.dg.gmsh_volume import shell_volume_mesh
from ..timedomain.dg.mesh import TetMesh
from ..timedomain.dg.reference import check_order
from ..timedomain.dg.scattering import (ScatteringSetup, read_probes, relative_l2,
                                        run_scattering, scattering_mesh_sizes,
                                        write_csv_atomic, write_dg_amplitudes, write_dg_vs_bem)

log = logging.getLogger(__name__)

# mesh sequences (cells per side of the unit box) that finish in about a minute on 2 cores
CELLS = {1: [2, 4, 8], 2: [2, 4, 8], 3: [1, 2, 4], 4: [1, 2, 4], 5: [1, 2, 4], 6: [1, 2, 3]}
CONVERGENCE_HEADER = ["order", "elements", "h", "error_l2", "observed_order"]


def register(subparsers) -> None:
    p = subparsers.add_parser("verify-dg", help="DG convergence on a rigid-box standing mode")
    p.add_argument("--csv", required=True, help="output table (dg_convergence.csv)")
    p.add_argument("--plot", required=True, help="output log-log plot (PNG/SVG)")
    p.add_argument("--backend", default="cpu", choices=["auto", "cpu", "gpu"])
    p.add_argument("--precision", default="double", choices=["double", "single"])
    p.add_argument("--orders", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    p.add_argument("--t-final", type=float, default=0.3, help="final time (periods are ~1.15)")
    p.add_argument("--quick", action="store_true", help="drop the finest mesh of each order")
    p.set_defaults(func=verify_dg)

    s = subparsers.add_parser("dg-scatter", help="time-domain DG run of a rigid sphere at one frequency")
    s.add_argument("--radius", type=float, required=True)
    s.add_argument("--k", type=float, required=True, help="wavenumber (rad/m), c = 1 unless --sound-speed")
    s.add_argument("--direction", type=float, nargs=3, required=True, metavar=("DX", "DY", "DZ"))
    s.add_argument("--center", type=float, nargs=3, default=[0.0, 0.0, 0.0])
    s.add_argument("--probes", required=True, help="CSV with columns x,y,z")
    s.add_argument("--out", required=True, help="CSV x,y,z,re_p_dg,im_p_dg")
    s.add_argument("--order", type=int, default=DG_CROSS_CHECK["order"])
    s.add_argument("--outer", default="sphere", choices=["sphere", "box"])
    s.add_argument("--outer-size", type=float, default=None,
                   help="outer radius / box half-width (default: sponge start + sponge width)")
    s.add_argument("--sponge-gap", type=float, default=0.5,
                   help="wavelengths between the farthest probe (or the sphere) and the sponge layer")
    s.add_argument("--sponge-width", type=float, default=1.0, help="sponge thickness in wavelengths")
    s.add_argument("--points-per-wavelength", type=float,
                   default=DG_CROSS_CHECK["points_per_wavelength"],
                   help="N * wavelength / h near the sphere")
    s.add_argument("--h-surface", type=float, default=None, help="element size at the sphere")
    s.add_argument("--mesh", default=None, help="use this volume mesh (.npz with vertices, tets, or .msh)")
    s.add_argument("--save-mesh", default=None, help="write the gmsh volume mesh to this .npz")
    s.add_argument("--sound-speed", type=float, default=1.0)
    s.add_argument("--density", type=float, default=1.0)
    s.add_argument("--settle-periods", type=float, default=4.0)
    s.add_argument("--dft-periods", type=int, default=2)
    s.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    s.add_argument("--precision", default="double", choices=["double", "single"])
    s.add_argument("--summary", default=None, help="JSON with run sizes, timing, the error "
                   "against the exact rigid-sphere series and the DG-vs-BEM tolerance")
    s.add_argument("--full-on-cpu", action="store_true",
                   help="keep the given sizes on the CPU too (default: the CPU sizes, see "
                   "config/README.md; the GPU sizes take hours on a few cores)")
    s.set_defaults(func=dg_scatter)

    c = subparsers.add_parser("dg-vs-bem", help="join DG and BEM probe amplitudes into dg_vs_bem.csv")
    c.add_argument("--dg", required=True, help="CSV x,y,z,re_p_dg,im_p_dg (from dg-scatter)")
    c.add_argument("--bem", required=True, help="CSV x,y,z,re_p_bem,im_p_bem at the same points")
    c.add_argument("--out", required=True, help="dg_vs_bem.csv")
    c.add_argument("--plot", default=None, help="plot of both amplitudes per probe")
    c.add_argument("--summary", default=None,
                   help="dg_summary.json of dg-scatter: fail if the relative L2 difference "
                   "exceeds its `tolerance`")
    c.set_defaults(func=dg_vs_bem)


# observed order on the finest pair of meshes: at least N + 1 - this (the quick sequences
# stop before the asymptotic range and get more room)
ORDER_TOLERANCE = {False: 0.5, True: 1.0}


def verify_dg(args) -> int:
    for order in args.orders:
        check_order(order)
    backend = get_backend(args.backend)
    sizes = {o: CELLS[o][:-1] if args.quick else CELLS[o] for o in args.orders}
    log.info("verify-dg on %s (%s): cells per side %s, the %s sequences%s", backend.name,
             backend.reason, sizes, "quick" if args.quick else "full",
             "" if backend.is_gpu else " (about a minute on 2 cores: no smaller CPU sizes needed)")
    rows = []
    for order in args.orders:
        cells = sizes[order]
        t0 = time.perf_counter()
        rows += cavity.convergence_study([order], cells, args.t_final, backend.name, args.precision)
        log.info("order %d: %s (%.1f s)", order, ", ".join(f"{r.error_l2:.3e}" for r in rows[-len(cells):]),
                 time.perf_counter() - t0)
    table = [[r.order, r.elements, r.h, r.error_l2, r.observed_order] for r in rows]
    write_csv_atomic(args.csv, CONVERGENCE_HEADER, table)
    _plot_convergence(rows, args.plot, args.t_final)
    for r in rows:
        print(f"N={r.order} K={r.elements:6d} h={r.h:.4f} error={r.error_l2:.3e} order={r.observed_order:.2f}")
    series = {f"N = {o}": ([r.h for r in rows if r.order == o], [r.error_l2 for r in rows if r.order == o])
              for o in args.orders}
    tolerance = ORDER_TOLERANCE[args.quick]
    require(order_shortfalls(series, {f"N = {o}": o + 1 for o in args.orders}, tolerance,
                             round_off_floor(args.precision)), "DG convergence")
    print(f"verify-dg: every order N converges at N + 1 within {tolerance:g}")
    return 0


def _plot_convergence(rows, path, t_final: float) -> None:
    curves = []
    for order in sorted({r.order for r in rows}):
        sel = [r for r in rows if r.order == order]
        curves.append((f"N = {order}", [r.h for r in sel], [r.error_l2 for r in sel], order + 1))
    convergence(path, {"rigid-box standing mode, dotted: slope N + 1 (optimal order)": curves},
                "element size h (longest edge; unit box)",
                f"L2 error of the pressure at t = {t_final:g}", "Nodal DG convergence")


def _load_mesh(path):
    if not os.path.exists(path):
        raise ConfigError(f"--mesh = {path!r}: file not found")
    if path.endswith(".npz"):
        data = np.load(path)
        return TetMesh(data["vertices"], data["tets"].astype(np.int64))
    import meshio

    m = meshio.read(path)
    tets = [c.data for c in m.cells if c.type == "tetra"]
    if not tets:
        raise MeshError(f"--mesh = {path!r}: no tetrahedra in the file")
    return TetMesh(np.asarray(m.points, float), np.concatenate(tets).astype(np.int64))


# The cross-check on the CPU: the GPU sizes (order 4, 16 points per wavelength, a sponge
# one wavelength thick half a wavelength beyond the probes: 36,502 tetrahedra and 25,597
# steps for sphere_ka2, 1.2 s a step) take about nine hours on 2 cores. These caps make it
# 4,700 tetrahedra and 4,040 steps (50 CPU seconds), 8.4% from the exact series at its probes.
CPU_SIZES = {"order": 2, "points_per_wavelength": 6.0, "sponge_gap": 0.25, "sponge_width": 0.5,
             "settle_periods": 2.0, "h_surface_radii": 0.3}
# Relative L2 difference at the probes that DG and BEM must stay within: the BEM's own error
# there (3.4% for sphere_ka2's 180 unknowns) plus the DG run's (8.4% at the CPU sizes; far
# less at the full ones) with room to spare, and far below what a wrong wavenumber,
# direction, sign or boundary condition gives (tens of percent).
DG_VS_BEM_TOLERANCE = {"full": 0.08, "cpu": 0.15}


def _cpu_sizes(args, backend) -> str:
    """Cap the run's sizes at CPU_SIZES when it runs on the CPU; log what and why."""
    if backend.is_gpu or args.full_on_cpu:
        return "full"
    asked = {"order": args.order, "points_per_wavelength": args.points_per_wavelength,
             "sponge_gap": args.sponge_gap, "sponge_width": args.sponge_width,
             "settle_periods": args.settle_periods,
             "h_surface_radii": (args.h_surface or 0.2 * args.radius) / args.radius}
    used = {key: (max if key == "h_surface_radii" else min)(value, CPU_SIZES[key])
            for key, value in asked.items()}
    args.order, args.points_per_wavelength = used["order"], used["points_per_wavelength"]
    args.sponge_gap, args.sponge_width = used["sponge_gap"], used["sponge_width"]
    args.settle_periods, args.h_surface = used["settle_periods"], used["h_surface_radii"] * args.radius
    log.info("dg-scatter on the CPU (%s): CPU sizes %s instead of %s (sponge in wavelengths, "
             "element size at the sphere in radii): the asked ones take hours on a few cores; "
             "--full-on-cpu (verification.full_on_cpu) keeps them", backend.reason,
             ", ".join(f"{k} {v:g}" for k, v in used.items()),
             ", ".join(f"{k} {v:g}" for k, v in asked.items()))
    return "cpu"


def dg_scatter(args) -> int:
    check_order(args.order)
    backend = get_backend(args.backend)
    sizes = _cpu_sizes(args, backend)
    order = args.order
    probes = read_probes(args.probes)
    center = np.asarray(args.center, float)
    if not args.k > 0:
        raise ConfigError(f"--k = {args.k!r}: must be positive")
    wavelength = 2 * np.pi / args.k
    reach = float(np.max(np.linalg.norm(probes - center, axis=1)))
    sponge_start = max(reach, args.radius) + args.sponge_gap * wavelength
    outer = args.outer_size or sponge_start + args.sponge_width * wavelength
    setup = ScatteringSetup(args.radius, args.k, args.direction, outer, args.outer, center,
                            sponge_start=sponge_start, c=args.sound_speed, rho=args.density,
                            settle_periods=args.settle_periods, dft_periods=args.dft_periods)
    t0 = time.perf_counter()
    if args.mesh:
        mesh = _load_mesh(args.mesh)
    else:

        h_in, h_out = scattering_mesh_sizes(setup, order, args.points_per_wavelength,
                                             args.h_surface)
        mesh = shell_volume_mesh(args.radius, outer, h_in, h_out, args.outer, center)
        if args.save_mesh:
            np.savez(args.save_mesh, vertices=mesh.vertices, tets=mesh.tets)
    t_mesh = time.perf_counter() - t0
    log.info("dg-scatter: %d tetrahedra, order %d, outer %s %.3f, sponge from %.3f",
             mesh.n_elements, order, args.outer, outer, sponge_start)
    t0 = time.perf_counter()
    res = run_scattering(setup, mesh, order, probes, backend, args.precision)
    t_run = time.perf_counter() - t0
    write_dg_amplitudes(args.out, probes, res.amplitude)
    summary = {"elements": res.elements, "nodes": res.nodes, "order": order, "steps": res.steps,
               "dt": res.dt, "t_final": res.t_final, "mesh_s": t_mesh, "run_s": t_run,
               "outer": args.outer, "outer_size": outer, "sponge_start": sponge_start,
               "backend": backend.name, "device": backend.device_name, "precision": args.precision,
               "sizes": sizes, "points_per_wavelength": args.points_per_wavelength,
               "sponge_gap": args.sponge_gap, "sponge_width": args.sponge_width,
               "settle_periods": args.settle_periods, "tolerance": DG_VS_BEM_TOLERANCE[sizes]}

    exact = scattered_field(args.k, args.radius, setup.direction, probes, center)
    summary["relative_l2_vs_exact"] = relative_l2(res.amplitude, exact)
    print(f"dg-scatter: relative L2 difference to the exact series at {len(probes)} probes: "
          f"{summary['relative_l2_vs_exact']:.4f}")
    if args.summary:

        with atomic_path(args.summary) as tmp:
            tmp.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    return 0


def _read_columns(path, names):
    if not os.path.exists(path):
        raise ConfigError(f"{path!r}: file not found")
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = set(names) - set(reader.fieldnames or ())
        if missing:
            raise ConfigError(f"{path}: missing columns {sorted(missing)}")
        return np.array([[float(r[n]) for n in names] for r in reader]).reshape(-1, len(names))


def dg_vs_bem(args) -> int:
    dg = _read_columns(args.dg, ["x", "y", "z", "re_p_dg", "im_p_dg"])
    bem = _read_columns(args.bem, ["x", "y", "z", "re_p_bem", "im_p_bem"])
    if dg.shape != bem.shape or not np.allclose(dg[:, :3], bem[:, :3], rtol=0, atol=1e-9):
        raise ConfigError(f"--dg {args.dg} and --bem {args.bem} must list the same probe points in order")
    p_dg, p_bem = dg[:, 3] + 1j * dg[:, 4], bem[:, 3] + 1j * bem[:, 4]
    write_dg_vs_bem(args.out, dg[:, :3], p_dg, p_bem)
    err = relative_l2(p_dg, p_bem)
    print(f"dg-vs-bem: relative L2 difference {err:.4f} at {len(p_dg)} probes")
    tolerance = None
    if args.summary:
        with open(args.summary) as fh:
            run = json.load(fh)
        tolerance = run.get("tolerance")
    if args.plot:

        probe_comparison(args.plot, dg[:, :3], p_dg, p_bem, err)
    if tolerance is not None:
        require([] if err <= tolerance else
                [f"relative L2 difference {err:.4f} at {len(p_dg)} probes exceeds {tolerance:g} "
                 f"({run.get('sizes')} sizes: order {run.get('order')}, {run.get('elements')} "
                 "elements)"], "DG vs BEM")
        print(f"dg-vs-bem: within the tolerance {tolerance:g} of the {run.get('sizes')} sizes")
    return 0
