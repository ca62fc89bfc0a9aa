"""`wavescat hermite-scatter` (time-domain Hermite-Taylor scattering by a case's rigid box on a
Cartesian grid, amplitudes at probe points: timedomain/hermite/box_scattering.py) and
`wavescat hermite-vs-bem` (the comparison with the BEM at the same probes, dg-vs-bem's, which
fails beyond the run's tolerance)."""
from __future__ import annotations

import json
import logging
import time

import numpy as np

from ..backend import get_backend
from ..defaults import HERMITE_CROSS_CHECK
from ..errors import ConfigError
from ..files import atomic_path
from ..timedomain.dg.scattering import ScatteringSetup, read_probes, write_dg_amplitudes
from ..timedomain.hermite.box_checks import CPU_SIZES
from ..timedomain.hermite.box_scattering import run_box_scattering
from ..timedomain.vs_bem import compare_with_bem, single_body
from . import case_arguments, comparison_arguments

log = logging.getLogger(__name__)

# Relative L2 difference from the BEM at the probes, at each frequency, that the run must stay
# within, by its sizes. The configured sizes (m = 2, 16 cells per wavelength and 8 per
# half-side, the sponge half a shortest wavelength beyond the probes and a longest one thick)
# reach 1.8% to 2.4% on the 1 m cube of config/examples/hermite_box.yaml on a GPU; the CPU
# sizes (8 cells per wavelength and 4 per half-side, the sponge half as far and as thick) 5.1%
# to 7.0%: the field is singular at the box's edges, and the error falls at first order only,
# in the cell over the half-side (bench/README.md, "Hermite-Taylor on a box": a box of 0.3 m
# half-sides at 8 cells per wavelength, 2 per half-side, was 13% to 15% off). A wave
# travelling the wrong way is 35% to 198% off there, the other time convention 116% to 180%.
HERMITE_VS_BEM_TOLERANCE = {"full": 0.05, "cpu": 0.10}


def register(subparsers) -> None:
    s = subparsers.add_parser("hermite-scatter", help="time-domain Hermite-Taylor run of a case's rigid "
                              "box on a Cartesian grid (its frequency, or a band from one pulse), "
                              "amplitudes at probe points")
    s.add_argument("--case", required=True, help="the case as JSON: geometry (a box), boundary (rigid), "
                   "frequencies_hz, incident (along a box axis), hermite_cross_check")
    s.add_argument("--medium", default="{}", help="JSON {density, sound_speed} (default: the config's)")
    s.add_argument("--probes", default=None, help="CSV with columns x,y,z (rows repeated per frequency "
                   "are read once); default: the case's hermite_cross_check.probes")
    s.add_argument("--out", required=True, help="CSV frequency_hz,x,y,z,re_p_hermite,im_p_hermite")
    s.add_argument("--summary", default=None, help="JSON with the run's sizes, steps, seconds, "
                   "backend and the Hermite-vs-BEM tolerance of its sizes")
    s.add_argument("--degree", type=int, default=None, help="Hermite degree m (default: "
                   "hermite_cross_check.degree)")
    s.add_argument("--cells-per-wavelength", type=float, default=None,
                   help="cells per wavelength of the highest frequency (default: "
                   "hermite_cross_check.cells_per_wavelength)")
    s.add_argument("--cells-per-half-side", type=float, default=None,
                   help="cells at least along the box's shortest half-side (default: "
                   "hermite_cross_check.cells_per_half_side)")
    s.add_argument("--sponge-gap", type=float, default=None, help="shortest wavelengths between the "
                   "farthest probe and the sponge (default: hermite_cross_check.sponge_gap)")
    s.add_argument("--sponge-width", type=float, default=None, help="sponge thickness in longest "
                   "wavelengths (default: hermite_cross_check.sponge_width)")
    s.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    s.add_argument("--precision", default="double", choices=["double", "single"])
    s.add_argument("--full-on-cpu", action="store_true",
                   help="keep the given sizes on the CPU too (default: the CPU sizes, at most "
                   f"{CPU_SIZES['cells_per_wavelength']:g} cells per wavelength and "
                   f"{CPU_SIZES['cells_per_half_side']:g} per half-side, the sponge "
                   f"{CPU_SIZES['sponge_gap']:g} and {CPU_SIZES['sponge_width']:g} wavelengths; "
                   "the configured ones take hours on a few cores)")
    s.add_argument("--quick", action="store_true", help="the CPU sizes on any backend")
    s.set_defaults(func=hermite_scatter)

    c = subparsers.add_parser("hermite-vs-bem", help="join Hermite-Taylor and BEM probe amplitudes "
                              "into hermite_vs_bem.csv")
    comparison_arguments(c, "hermite", "hermite-scatter")
    c.set_defaults(func=hermite_vs_bem)


def _sizes(args, backend) -> str:
    """Cap the grid and the sponge at the CPU sizes where it runs on the CPU (or --quick); log
    what and why."""
    if args.quick or not (backend.is_gpu or args.full_on_cpu):
        asked = {key: getattr(args, key) for key in CPU_SIZES}
        for key, cap in CPU_SIZES.items():
            setattr(args, key, min(asked[key], cap))
        why = ("--quick (verification.quick)" if args.quick else
               f"on the CPU ({backend.reason}): the asked sizes take hours on a few cores; "
               "--full-on-cpu (verification.full_on_cpu) keeps them")
        log.info("hermite-scatter: the CPU sizes, %s (asked: %s; the sponge in wavelengths), %s; "
                 "tolerance %g", ", ".join(f"{k} {getattr(args, k):g}" for k in CPU_SIZES),
                 ", ".join(f"{k} {v:g}" for k, v in asked.items()), why,
                 HERMITE_VS_BEM_TOLERANCE["cpu"])
        return "cpu"
    return "full"


def hermite_scatter(args) -> int:
    case = case_arguments(args, required=("geometry", "frequencies_hz", "incident"))
    check = case.hermite_cross_check
    for key in ("degree", "cells_per_wavelength", "cells_per_half_side", "sponge_gap",
                "sponge_width"):
        if getattr(args, key) is None:
            setattr(args, key, getattr(check, key) if check else HERMITE_CROSS_CHECK[key])
    body = single_body(case)
    if args.probes:
        probes = read_probes(args.probes)
    elif check:
        probes = np.asarray(check.probes, float).reshape(-1, 3)
    else:
        raise ConfigError("no probe points: give --probes or the case's hermite_cross_check.probes")
    backend = get_backend(args.backend)
    sizes = _sizes(args, backend)
    freqs = np.atleast_1d(np.asarray(case.frequencies_hz, float))
    setup = ScatteringSetup(body, 2 * np.pi * freqs, case.incidence.directions[0], 10.0, "box")
    t0 = time.perf_counter()
    res, run = run_box_scattering(setup, probes, args.degree, args.cells_per_wavelength,
                                  backend=backend.name, precision=args.precision,
                                  sponge_gap=args.sponge_gap, sponge_width=args.sponge_width,
                                  cells_per_half_side=args.cells_per_half_side)
    t_run = time.perf_counter() - t0
    write_dg_amplitudes(args.out, freqs, probes, res.amplitude, method="hermite")
    summary = {"cells": res.elements, "grid": list(run.grid.cells), "h": run.grid.h,
               "dofs": res.nodes, "degree": run.m, "steps": res.steps, "dt": res.dt,
               "t_final": res.t_final, "run_s": t_run, "body": body.shape, "boundary": body.kind,
               "frequencies_hz": freqs.tolist(), "signal": "pulse" if setup.band else "harmonic",
               "backend": backend.name, "device": backend.device_name, "precision": args.precision,
               "sizes": sizes, "cells_per_wavelength": args.cells_per_wavelength,
               "cells_per_half_side": args.cells_per_half_side,
               "sponge_gap": args.sponge_gap, "sponge_width": args.sponge_width,
               "tolerance": HERMITE_VS_BEM_TOLERANCE[sizes]}
    if args.summary:
        with atomic_path(args.summary) as tmp:
            tmp.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    return 0


def hermite_vs_bem(args) -> int:
    return compare_with_bem(args, "hermite", "Hermite-Taylor", lambda run: (
        f"m {run.get('degree')}, {run.get('cells_per_wavelength')} cells per wavelength, "
        f"{run.get('cells')} cells"))
