"""`wavescat verify-dg` (DG convergence on a rigid-box cavity mode), `wavescat dg-scatter`
(time-domain scattering by a case's body at its frequency or, from one pulse, its band of
frequencies; amplitudes at probe points) and `wavescat dg-vs-bem` (the comparison with the BEM
at the same probes, which fails beyond the run's tolerance)."""
from __future__ import annotations

import json
import logging
import os
import time

import numpy as np

from ..backend import get_backend
from ..configuration.case import Case
from ..defaults import DG_CROSS_CHECK
from ..errors import ConfigError, MeshError
from ..files import atomic_path
from ..reference.sphere import sphere_series
from ..results.plots import convergence
from ..timedomain.checks import order_shortfalls, require, round_off_floor
from ..timedomain.dg import cavity  # (cavity.convergence_study: tests replace it)
from ..timedomain.dg.gmsh_volume import scattering_volume_mesh
from ..timedomain.dg.mesh import TetMesh
from ..timedomain.dg.reference import check_order
from ..timedomain.dg.scattering import (ScatteringSetup, read_probes, relative_l2,
                                        run_scattering, scattering_mesh_sizes,
                                        write_csv_atomic, write_dg_amplitudes)
from ..timedomain.vs_bem import compare_with_bem, single_body
from . import comparison_arguments

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

    s = subparsers.add_parser("dg-scatter", help="time-domain DG run of a case's body (its frequency, or "
                              "a band of them from one pulse), amplitudes at probe points")
    s.add_argument("--case", required=True, help="the case as JSON: geometry (sphere, spheroid, box), "
                   "boundary, frequencies_hz, incident, dg_cross_check")
    s.add_argument("--medium", default=None, help="JSON {density, sound_speed} (default: the config's)")
    s.add_argument("--probes", default=None, help="CSV with columns x,y,z (rows repeated per frequency "
                   "are read once); default: the case's dg_cross_check.probes")
    s.add_argument("--out", required=True, help="CSV frequency_hz,x,y,z,re_p_dg,im_p_dg")
    s.add_argument("--order", type=int, default=None, help="DG order (default: dg_cross_check.order)")
    s.add_argument("--outer", default="sphere", choices=["sphere", "box"])
    s.add_argument("--outer-size", type=float, default=None,
                   help="outer radius / box half-width (default: sponge start + sponge width)")
    s.add_argument("--sponge-gap", type=float, default=0.5,
                   help="wavelengths (of the highest frequency) between the farthest probe and the "
                   "sponge layer")
    s.add_argument("--sponge-width", type=float, default=1.0,
                   help="sponge thickness in wavelengths of the lowest frequency")
    s.add_argument("--sponge-decay", type=float, default=3.0,
                   help="one-way amplitude decay exp(-decay) of a wave across the sponge")
    s.add_argument("--sponge-coarsening", type=float, default=2.0,
                   help="element size at the outer boundary over the lowest frequency's element "
                   "size (the sponge absorbs, it need not resolve)")
    s.add_argument("--points-per-wavelength", type=float, default=None,
                   help="N * wavelength / h at the highest frequency (default: "
                   "dg_cross_check.points_per_wavelength)")
    s.add_argument("--h-surface", type=float, default=None,
                   help="element size at the body (default: 0.2 of its smallest half-axis)")
    s.add_argument("--mesh", default=None, help="use this volume mesh (.npz with vertices, tets[, "
                   "regions], or .msh)")
    s.add_argument("--save-mesh", default=None, help="write the gmsh volume mesh to this .npz")
    s.add_argument("--settle-periods", type=float, default=4.0, help="one frequency: periods after the "
                   "ramp and the transit before the DFT")
    s.add_argument("--dft-periods", type=int, default=2)
    s.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    s.add_argument("--precision", default="double", choices=["double", "single"])
    s.add_argument("--summary", default=None, help="JSON with run sizes, timing, the error "
                   "against the exact sphere series and the DG-vs-BEM tolerance")
    s.add_argument("--full-on-cpu", action="store_true",
                   help="keep the given sizes on the CPU too (default: the CPU sizes, see "
                   "config/README.md; the GPU sizes take hours on a few cores)")
    s.add_argument("--quick", action="store_true", help="order at most 2, at most 8 points per wavelength")
    s.set_defaults(func=dg_scatter)

    c = subparsers.add_parser("dg-vs-bem", help="join DG and BEM probe amplitudes into dg_vs_bem.csv")
    comparison_arguments(c, "dg", "dg-scatter")
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
    """(mesh, regions) from an .npz (vertices, tets[, regions]) or a gmsh file (physical
    volume tags as regions where it has them)."""
    if not os.path.exists(path):
        raise ConfigError(f"--mesh = {path!r}: file not found")
    if path.endswith(".npz"):
        data = np.load(path)
        regions = data["regions"] if "regions" in data else None
        return TetMesh(data["vertices"], data["tets"].astype(np.int64)), regions
    import meshio

    m = meshio.read(path)
    tets = [c.data for c in m.cells if c.type == "tetra"]
    if not tets:
        raise MeshError(f"--mesh = {path!r}: no tetrahedra in the file")
    return TetMesh(np.asarray(m.points, float), np.concatenate(tets).astype(np.int64)), None


# The cross-check on the CPU: the case's sizes (order 4, 16 points per wavelength) take an
# hour or more on 2 cores; these caps (bench/README.md) take sphere_soft_ka2 to about 2,600
# tetrahedra and 2,500 steps (about 25 CPU seconds), 2% from the exact series at its probes.
CPU_SIZES = {"order": 2, "points_per_wavelength": 6.0, "sponge_gap": 0.5, "sponge_width": 1.0,
             "settle_periods": 1.0, "dft_periods": 1, "h_surface_radii": 0.3}
# Relative L2 difference at the probes, at each frequency, that DG and BEM must stay within:
# the BEM's own error there (below 0.2% for the default cases' volume-matched meshes) plus the
# DG run's (1-2% at the CPU sizes), with room to spare, and far below what a wrong wavenumber,
# direction, sign or boundary condition gives (tens of percent).
DG_VS_BEM_TOLERANCE = {"full": 0.05, "cpu": 0.05}


def _cpu_sizes(args, backend, body_scale: float) -> str:
    """Cap the run's sizes at CPU_SIZES when it runs on the CPU; log what and why.
    body_scale: the body's smallest half-axis (h_surface_radii's unit)."""
    if backend.is_gpu or args.full_on_cpu:
        return "full"
    asked = {"order": args.order, "points_per_wavelength": args.points_per_wavelength,
             "sponge_gap": args.sponge_gap, "sponge_width": args.sponge_width,
             "settle_periods": args.settle_periods, "dft_periods": args.dft_periods,
             "h_surface_radii": (args.h_surface or 0.2 * body_scale) / body_scale}
    used = {key: (max if key == "h_surface_radii" else min)(value, CPU_SIZES[key])
            for key, value in asked.items()}
    args.order, args.points_per_wavelength = used["order"], used["points_per_wavelength"]
    args.sponge_gap, args.sponge_width = used["sponge_gap"], used["sponge_width"]
    args.settle_periods, args.h_surface = used["settle_periods"], used["h_surface_radii"] * body_scale
    args.dft_periods = int(used["dft_periods"])
    log.info("dg-scatter on the CPU (%s): CPU sizes %s instead of %s (sponge in wavelengths, "
             "element size at the body in its smallest half-axis): the asked ones take hours on a "
             "few cores; --full-on-cpu (verification.full_on_cpu) keeps them", backend.reason,
             ", ".join(f"{k} {v:g}" for k, v in used.items()),
             ", ".join(f"{k} {v:g}" for k, v in asked.items()))
    return "cpu"


def _case_run(args):
    """The case's Body, frequencies (Hz), incident direction and probes (None if it has none);
    args.order, args.points_per_wavelength from its dg_cross_check where not given (the
    schema's defaults where it has none)."""
    case = Case.from_json(args.case, args.medium or "{}",
                          required=("geometry", "frequencies_hz", "incident"))
    body = single_body(case)
    freqs = np.atleast_1d(np.asarray(case.frequencies_hz, float))
    direction = case.incidence.directions[0]
    check = case.dg_cross_check
    if args.order is None:
        args.order = check.order if check else int(DG_CROSS_CHECK["order"])
    if args.points_per_wavelength is None:
        args.points_per_wavelength = (check.points_per_wavelength if check
                                      else float(DG_CROSS_CHECK["points_per_wavelength"]))
    if args.quick:
        args.order, args.points_per_wavelength = min(args.order, 2), min(args.points_per_wavelength, 8.0)
    probes = np.asarray(check.probes, float).reshape(-1, 3) if check else None
    return body, freqs, direction, probes


def _exact(body, freqs, direction, probes):
    """(frequencies, probes) exact scattered pressure of a sphere (its boundary condition's
    series), or None for other bodies."""
    if body.shape != "sphere":
        return None
    series = sphere_series(body.boundary)
    c, a = body.medium.sound_speed, float(body.geometry.radius)
    return np.array([series.scattered_field(2 * np.pi * f / c, a, direction, probes, body.center)
                     for f in freqs])


def scattering_problem(args):
    """(body, frequencies, probes, setup, sizes) of a dg-scatter run: the case's, capped at the
    CPU sizes where it runs on the CPU (args.order and the other sizes updated in place)."""
    body, freqs, direction, probes = _case_run(args)
    check_order(args.order)
    backend = get_backend(args.backend)
    sizes = _cpu_sizes(args, backend, body.inner())
    if args.probes:
        probes = read_probes(args.probes)
    if probes is None:
        raise ConfigError("no probe points: give --probes or the case's dg_cross_check.probes")
    c = body.medium.sound_speed
    # The sponge starts a gap (in the shortest wavelength) beyond the probes and is as thick as
    # the longest: its damping, equal on p and v, reflects a spherical wave's near-field part
    # where it changes within a wavelength (bench/README.md); its elements grow to a multiple
    # of the longest wavelength's, whose waves are the ones it must absorb
    reach = float(np.max(np.linalg.norm(probes - body.center, axis=1)))
    sponge_start = max(reach, body.extent()) + args.sponge_gap * c / freqs.max()
    outer = args.outer_size or sponge_start + args.sponge_width * c / freqs.min()
    setup = ScatteringSetup(body, 2 * np.pi * freqs, direction, outer, args.outer,
                            sponge_start=sponge_start, sponge_decay=args.sponge_decay,
                            settle_periods=args.settle_periods, dft_periods=args.dft_periods)
    return body, freqs, probes, setup, sizes, backend


def scattering_mesh(args, setup):
    """(mesh, regions) of the run: --mesh, or gmsh's at the run's sizes."""
    if args.mesh:
        return _load_mesh(args.mesh)
    freqs = setup.omegas / (2 * np.pi)
    h_in, h_out, h_fill = scattering_mesh_sizes(setup, args.order, args.points_per_wavelength, args.h_surface)
    h_far = args.sponge_coarsening * h_out * freqs.max() / freqs.min()
    mesh, regions = scattering_volume_mesh(setup.body, setup.outer_size, h_in, h_out, args.outer, h_fill,
                                           sponge=(setup.sponge_start, h_far))
    if args.save_mesh:
        np.savez(args.save_mesh, vertices=mesh.vertices, tets=mesh.tets, regions=regions)
    return mesh, regions


def dg_scatter(args) -> int:
    body, freqs, probes, setup, sizes, backend = scattering_problem(args)
    order, outer, sponge_start = args.order, setup.outer_size, setup.sponge_start
    t0 = time.perf_counter()
    mesh, regions = scattering_mesh(args, setup)
    t_mesh = time.perf_counter() - t0
    log.info("dg-scatter: %s %s body, %d tetrahedra, order %d, outer %s %.3f, sponge from %.3f, "
             "%s", body.kind, body.shape, mesh.n_elements, order, args.outer, outer, sponge_start,
             f"a pulse over {len(freqs)} frequencies" if setup.band else "one frequency")
    t0 = time.perf_counter()
    res = run_scattering(setup, mesh, order, probes, backend, args.precision, regions=regions)
    t_run = time.perf_counter() - t0
    write_dg_amplitudes(args.out, freqs, probes, res.amplitude)
    summary = {"elements": res.elements, "nodes": res.nodes, "order": order, "steps": res.steps,
               "dt": res.dt, "t_final": res.t_final, "mesh_s": t_mesh, "run_s": t_run,
               "body": body.shape, "boundary": body.kind, "frequencies_hz": freqs.tolist(),
               "signal": "pulse" if setup.band else "harmonic",
               "outer": args.outer, "outer_size": outer, "sponge_start": sponge_start,
               "backend": backend.name, "device": backend.device_name, "precision": args.precision,
               "sizes": sizes, "points_per_wavelength": args.points_per_wavelength,
               "sponge_gap": args.sponge_gap, "sponge_width": args.sponge_width,
               "sponge_decay": args.sponge_decay, "sponge_coarsening": args.sponge_coarsening,
               "settle_periods": args.settle_periods, "dft_periods": args.dft_periods,
               "tolerance": DG_VS_BEM_TOLERANCE[sizes]}
    exact = _exact(body, freqs, setup.direction, probes)
    if exact is not None:
        summary["relative_l2_vs_exact"] = [relative_l2(a, e) for a, e in zip(res.amplitude, exact)]
        print("dg-scatter: relative L2 difference to the exact series at "
              f"{len(probes)} probes: " + ", ".join(f"{e:.4f}" for e in summary["relative_l2_vs_exact"]))
    if args.summary:
        with atomic_path(args.summary) as tmp:
            tmp.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    return 0


def dg_vs_bem(args) -> int:
    return compare_with_bem(args, "dg", "DG", lambda run: f"order {run.get('order')}, "
                            f"{run.get('elements')} elements")
