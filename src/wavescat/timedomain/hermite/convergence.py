"""Convergence study of the Hermite-Taylor method against smooth exact solutions.

Advection u_t = a.grad u carries u0 once around the periodic box; acoustics runs one period
of a standing mode of the box with rigid walls (p ~ prod cos(2 pi x_d / L_d): dp/dn = 0 and
v.n = 0 on every wall, the sound-hard condition of the rigid bodies). The error is the largest nodal value error at the final time, per field
relative to that field's amplitude; the observed order is log(e_coarse/e_fine)/log(h_c/h_f).
"""
from __future__ import annotations

import logging
import math

import numpy as np

from ...progress import progress
from .equations import acoustics, advection
from .exact import acoustic_standing_mode, advection_wave, hermite_data
from .solver import HermiteSolver

log = logging.getLogger(__name__)

# Unequal on purpose (hx != hy = hz), and chosen so that a fixed CFL number divides one
# period into a whole number of steps on every even grid: the advection period is 1 with
# a = L and CFL = n dt; the acoustic mode has |k| = 6 pi, so T = 1/(3c) = n dt / CFL * 2/3.
LENGTHS = (1.0, 0.5, 0.5)
CFL = 2.0 / 3.0
SOUND_SPEED, DENSITY = 1.5, 1.2
#: cells per axis for each m; the finest pairs sit in the asymptotic range above round-off
GRIDS = {1: (8, 12, 16, 24), 2: (6, 8, 12, 16), 3: (4, 6, 8, 10)}
QUICK_GRIDS = {1: (8, 12, 16), 2: (6, 8, 12), 3: (4, 6, 8)}
EQUATIONS = ("advection", "acoustics")
HEADER = ("m", "q", "cells", "h", "error_max", "observed_order")


def exact_solution(equation: str):
    if equation == "advection":
        system = advection(LENGTHS)  # a_d = L_d: one period in unit time
        return advection_wave(system, LENGTHS)
    if equation == "acoustics":  # phases 0: a mode of the rigid box
        return acoustic_standing_mode(acoustics(SOUND_SPEED, DENSITY), SOUND_SPEED, DENSITY, LENGTHS,
                                      phases=(0.0, 0.0, 0.0))
    raise ValueError(f"equation {equation!r}: must be one of {EQUATIONS}")


def period_error(equation: str, m: int, n: int, *, q: int | None = None, cfl: float = CFL,
                 backend: str = "cpu", precision: str = "double", kernel: str | None = None):
    """Run one period on an n^3-cell grid; return (solver, relative max error of the values)."""
    exact = exact_solution(equation)
    solver = HermiteSolver(exact.system, n, exact.lengths, m, q=q, cfl=cfl, backend=backend,
                           precision=precision, kernel=kernel,
                           boundary="wall" if equation == "acoustics" else "periodic")
    coords = solver.node_coords()
    solver.set_state(hermite_data(exact.terms(0.0), coords, solver.h, m))
    solver.run_to(exact.period)
    final = hermite_data(exact.terms(exact.period), coords, solver.h, m)[:, 0, 0, 0]
    # amplitude of each field: its largest value at t = 0 or a quarter period
    quarter = hermite_data(exact.terms(exact.period / 4), coords, solver.h, m)[:, 0, 0, 0]
    scale = np.maximum(np.abs(final).max(axis=(1, 2, 3)), np.abs(quarter).max(axis=(1, 2, 3)))
    err = np.abs(solver.get_state()[:, 0, 0, 0] - final).max(axis=(1, 2, 3)) / scale
    return solver, float(err.max())


def observed_orders(h, err) -> list[float]:
    """Order from each grid to the next coarser one (nan for the first)."""
    out = [math.nan]
    for i in range(1, len(h)):
        out.append(math.log(err[i - 1] / err[i]) / math.log(h[i - 1] / h[i]))
    return out


def convergence_study(equation: str, degrees=(1, 2, 3), *, quick: bool = False, backend: str = "cpu",
                      precision: str = "double", kernel: str | None = None, grids=None) -> list[dict]:
    """Rows (dicts with HEADER keys) for every m in `degrees` and grid of GRIDS[m]."""
    rows = []
    table = grids or (QUICK_GRIDS if quick else GRIDS)
    with progress(sum(len(table[m]) for m in degrees), f"Hermite convergence {equation}",
                  "grids") as bar:
        for m in degrees:
            ns = table[m]
            hs, errs, qs = [], [], []
            for n in ns:
                solver, err = period_error(equation, m, n, backend=backend, precision=precision,
                                           kernel=kernel)
                hs.append(max(solver.h))
                errs.append(err)
                qs.append(solver.q)
                log.info("hermite %s m=%d n=%d: error %.3e", equation, m, n, err)
                bar.update(1)
            for n, h, e, q, p in zip(ns, hs, errs, qs, observed_orders(hs, errs)):
                rows.append({"m": m, "q": q, "cells": n ** 3, "h": h, "error_max": e,
                             "observed_order": p})
    return rows
