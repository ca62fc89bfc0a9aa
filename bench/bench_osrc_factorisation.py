"""The OSRC map's sparse LU on surface meshes of growing size: SuperLU with minimum degree
(MMD on A^T + A, wavescat's factorisation before issue 42) against SuperLU in the
nested-dissection (METIS) order that `osrc.factorise` uses now (bem/linalg/sparse_lu.py).

    PYTHONPATH=src python bench/bench_osrc_factorisation.py [--frequencies 250 500 1000 2000]
        [--meshes-dir DIR] [--no-mmd-above N] [--icospheres L ...] [MESH ...]

The default submarine at each frequency (10 elements per wavelength, c = 1500 m/s,
geometry.mesh_case), its meshes kept in --meshes-dir (default results/bench_meshes; made
once: on the 2-core machine, under load, 6 min at 1 kHz and 27 min at 2 kHz); or MESH files,
one per --frequencies; or --icospheres: unit icospheres of L subdivisions (10 * 4^L + 2
vertices: 655,362 at L = 8, made in seconds) at 10 elements per wavelength. The matrix is one
of the map's resolvents, M - b S / k_eps^2 at the frequency's wavenumber (b the first Padé
shift; all nine and M share the pattern).
Prints per mesh the unknowns, the ordering's and the factorisation's seconds (one thread, BLAS
on one thread), the fill nnz(L + U) of each and the levels of L (the steps of the device's
level-scheduled solve, bem/linalg/triangular.py), the relative difference of their solutions,
and the growth of the CPU seconds and the fill from the previous mesh, scaled to one doubling
of the frequency (4 times the unknowns): (t / t_prev) ** (log 4 / log(N / N_prev)).
`--refine-last N` adds N rows: the last mesh with every triangle split into four through its
edge midpoints, at twice the frequency, N times (a flat mesh of the next frequency's size
where meshing it would take long: the 2 kHz submarine split once has 1.2 million vertices).
"""
from __future__ import annotations

import argparse
import math
import platform
import time
from pathlib import Path

import numpy as np
import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations.osrc import (
    characteristic_radius, damped_wavenumber, mass_and_stiffness, pade_coefficients)
from wavescat.bem.linalg.sparse_lu import OrderedLU, metis_order, pattern
from wavescat.bem.linalg.triangular import _by_rows
from wavescat.configuration.case import Case
from wavescat.defaults import OSRC
from wavescat.geometry import mesh_case
from wavescat.geometry.icosphere import icosphere, split_in_four
from wavescat.surface import SurfaceMesh

SOUND_SPEED = 1500.0


def submarine(frequency: float, folder: Path) -> Path:
    """The default submarine's mesh at `frequency`, made once into `folder`."""
    path = folder / f"submarine_{frequency:g}Hz.msh"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        case = {"geometry": {"kind": "submarine"}, "frequencies_hz": [frequency]}
        mesh, _ = mesh_case(Case.from_dict(case, {"sound_speed": SOUND_SPEED, "density": 1000.0}))
        mesh.write(path)
    return path


def ten_per_wavelength(mesh: SurfaceMesh) -> float:
    """The frequency at which the mesh's mean edge is a tenth of the wavelength."""
    t = mesh.triangles
    edges = mesh.vertices[t] - mesh.vertices[np.roll(t, 1, axis=1)]
    return SOUND_SPEED / (10.0 * float(np.linalg.norm(edges, axis=2).mean()))


def resolvent(mesh: SurfaceMesh, frequency: float):
    """M - b_1 S / k_eps^2, the first Padé term's matrix of the NtD map at `frequency`."""
    mass, stiffness = mass_and_stiffness(spaces.p1(mesh))
    k = 2 * math.pi * frequency / SOUND_SPEED
    k_eps = damped_wavenumber(k, characteristic_radius(mesh))
    shift = pade_coefficients(OSRC["pade_terms"], OSRC["branch_angle"])[2][0]
    return (mass - shift * stiffness / k_eps**2).tocsc()


def timed(fn):
    """fn()'s result, wall seconds and this process's CPU seconds (on a shared machine the
    CPU seconds of a one-thread factorisation measure its work; the wall, what one waits)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - wall, time.process_time() - cpu


def levels(lu) -> int:
    """The levels of the lower factor L: the device solve's sequential steps."""
    return int(_by_rows(lu.L.indptr, lu.L.indices, True)[4].max()) + 1


def measure(matrix, with_mmd: bool) -> dict:
    """Seconds and fill of each factorisation, and how far apart their solutions are."""
    order, t_order, cpu_order = timed(lambda: metis_order(pattern(matrix)))
    new, t_new, cpu_new = timed(lambda: OrderedLU(matrix, order))
    row = {"n": matrix.shape[0], "order_s": t_order, "order_cpu": cpu_order, "nd_s": t_new, "nd_cpu": cpu_new,
           "nd_fill": new.nnz,
           "nd_levels": levels(new)}
    if with_mmd:
        old, t_old, cpu_old = timed(lambda: spla.splu(matrix, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                                             options={"SymmetricMode": True}))
        b = np.random.default_rng(0).standard_normal(matrix.shape[0]) + 0j
        x_old, x_new = old.solve(b), new.solve(b)
        row.update(mmd_s=t_old, mmd_cpu=cpu_old, mmd_fill=old.nnz, mmd_levels=levels(old),
                   difference=float(np.linalg.norm(x_new - x_old) / np.linalg.norm(x_old)))
    return row


def per_doubling(row, prev, key):
    """Growth of row[key] over prev[key], scaled to 4 times the unknowns."""
    if prev is None or key not in row or key not in prev:
        return float("nan")
    return (row[key] / prev[key]) ** (math.log(4.0) / math.log(row["n"] / prev["n"]))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("meshes", nargs="*",
                   help="surface mesh files, one per --frequencies (default: the submarine's)")
    p.add_argument("--frequencies", type=float, nargs="+", default=[250.0, 500.0, 1000.0, 2000.0])
    p.add_argument("--meshes-dir", type=Path, default=Path("results/bench_meshes"))
    p.add_argument("--icospheres", type=int, nargs="+", default=[],
                   help="unit icospheres of these subdivisions instead of the submarine")
    p.add_argument("--no-mmd-above", type=int, default=10**9,
                   help="skip the MMD factorisation above this many unknowns")
    p.add_argument("--refine-last", type=int, default=0, metavar="N",
                   help="then N more rows: the last mesh with every triangle split into four, "
                        "at twice the frequency, N times")
    args = p.parse_args(argv)
    if args.meshes and len(args.meshes) != len(args.frequencies):
        p.error(f"{len(args.meshes)} meshes need as many --frequencies (their wavenumbers)")
    if args.icospheres:
        meshes = [(f"icosphere({level})", icosphere(level)) for level in args.icospheres]
        runs = [(name, mesh, ten_per_wavelength(mesh)) for name, mesh in meshes]
    else:
        paths = [Path(m) for m in args.meshes] or \
            [submarine(f, args.meshes_dir) for f in args.frequencies]
        runs = [(path.name, SurfaceMesh.from_file(path), f)
                for path, f in zip(paths, args.frequencies)]
    base = runs[-1][0]
    for times in range(1, args.refine_last + 1):  # edges halved: as at twice the frequency
        _, mesh, f = runs[-1]
        runs.append((f"{base}, split {times}x", SurfaceMesh(*split_in_four(mesh.vertices, mesh.triangles)), 2 * f))
    print(f"# {platform.node()} ({platform.machine()}), one thread, BLAS on one thread")
    print(" ".join(f"{title:>{width}}" for title, width, _ in COLUMNS))
    prev = None
    with threadpool_limits(limits=1, user_api="blas"):
        for name, mesh, frequency in runs:
            matrix = resolvent(mesh, frequency)
            row = measure(matrix, matrix.shape[0] <= args.no_mmd_above)
            row.update(mesh=name, nd_growth=per_doubling(row, prev, "nd_cpu"),
                       mmd_growth=per_doubling(row, prev, "mmd_cpu"),
                       fill_growth=per_doubling(row, prev, "nd_fill"))
            print(" ".join(f"{row.get(key, math.nan):>{width}{fmt}}"
                           for _, width, (key, fmt) in COLUMNS), flush=True)
            prev = row


# (title, width, (row key, format)): what a line prints
COLUMNS = [("mesh", 20, ("mesh", "")), ("unknowns", 9, ("n", "d")),
           ("order_s", 8, ("order_s", ".2f")), ("ord_cpu", 7, ("order_cpu", ".2f")),
           ("nd_s", 8, ("nd_s", ".2f")), ("nd_cpu", 7, ("nd_cpu", ".2f")),
           ("nd_fill", 11, ("nd_fill", ".0f")), ("mmd_s", 8, ("mmd_s", ".2f")),
           ("mmd_cpu", 7, ("mmd_cpu", ".2f")), ("mmd_fill", 11, ("mmd_fill", ".0f")),
           ("nd_lev", 7, ("nd_levels", ".0f")), ("mmd_lev", 7, ("mmd_levels", ".0f")),
           ("nd_x/dbl", 8, ("nd_growth", ".1f")), ("mmd_x/dbl", 9, ("mmd_growth", ".1f")),
           ("fill_x/dbl", 10, ("fill_growth", ".1f")), ("rel_diff", 9, ("difference", ".1e"))]


if __name__ == "__main__":
    main()
