"""The gas body's preconditioners, dense factors (block_triangular) against HODLR inverses
(hodlr; bem/formulations/muller_preconditioner.py, bem/linalg/hodlr.py), at growing
frequency: unknowns, set-up seconds, bytes held, GMRES iterations, and the far fields'
difference.

    # the Jech et al. gas sphere (radius 1 cm), icosphere meshes, H-matrix operators
    PYTHONPATH=src python bench/bench_gas_preconditioner.py --level 4 \
        --frequencies 38e3,70e3,120e3 [--delta 0.025] [--tols 1e-2,3e-2]
    # HODLR blocks from the H-matrix blocks against peeled from whole-operator products
    PYTHONPATH=src python bench/bench_gas_preconditioner.py --level 4 --frequencies 70e3 \
        --no-dense --build leaves,peeling

Gas 1.24 kg/m^3, 345 m/s in sea water 1026.8 kg/m^3, 1477.3 m/s; the operators as a case's
solver settings make them (H-matrices at the defaults: eps 1e-4, blocks stored in single
precision), GMRES at tol 1e-5 (the default) with its whole basis; one incidence (+z). `--build`: how
the HODLR blocks are made (HierarchicalBlockTriangular.build); set-up MB: the largest the
host arrays grew during the set-up (tracemalloc, beyond those held before it).
"""
from __future__ import annotations

import argparse
import math
import resource
import time
import tracemalloc

import numpy as np

from wavescat.bem.formulations import muller_preconditioner
from wavescat.bem.formulations.burton_miller import plane_wave_data
from wavescat.bem.formulations.osrc import mass_and_stiffness
from wavescat.bem.formulations.transmission import MullerTransmission
from wavescat.bem.linalg.gmres import gmres
from wavescat.configuration.case import Case
from wavescat.geometry.icosphere import icosphere
from wavescat.geometry.volume import match_volume
from wavescat.solve.driver import assemble_system

RHO, C, RHO1, C1 = 1026.8, 1477.3, 1.24, 345.0
G = RHO1 / RHO


def held_bytes(pre) -> int:
    """Bytes of a preconditioner's factors."""
    if pre.name == "hodlr":
        return pre.stats["bytes"]
    return sum(f[0].nbytes for f in (pre._dirichlet, pre._neumann_t))  # noqa: SLF001


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--level", type=int, default=4, help="icosphere subdivisions")
    p.add_argument("--frequencies", default="38e3,120e3")
    p.add_argument("--delta", type=float, default=0.0, help="interior absorption factor")
    p.add_argument("--tols", default=str(muller_preconditioner.HODLR_TOL),
                   help="HODLR truncations to compare")
    p.add_argument("--no-dense", action="store_true", help="HODLR only")
    p.add_argument("--build", default="leaves",
                   help="how the HODLR blocks are built: leaves, peeling or both (comma)")
    args = p.parse_args(argv)
    mesh = match_volume(icosphere(args.level, 0.01), 4 / 3 * math.pi * 1e-6)[0]
    absorption = 0.0 if not args.delta else 20 * math.log10(math.e) * 2 * math.pi * args.delta
    case = Case.from_dict({"geometry": {"kind": "sphere", "radius": 0.01},
                           "boundary": {"kind": "fluid", "density": RHO1, "sound_speed": C1,
                                        "absorption_db_per_wavelength": absorption},
                           "solver": {"backend": "cpu", "operator_format": "hmatrix"}},
                          {"density": RHO, "sound_speed": C})
    print("f_kHz  k1a  unknowns | preconditioner tol build | setup_s  MB_held  setup_MB "
          "iterations | far-field diff vs dense")
    for f in (float(v) for v in args.frequencies.split(",")):
        k = 2 * math.pi * f / C
        t = time.perf_counter()
        assembled = assemble_system(case, mesh, k)
        space, form = assembled.space, assembled.formulation
        print(f"# assembly {time.perf_counter() - t:.1f} s", flush=True)
        mass, _ = mass_and_stiffness(space)
        ops = assembled.operators
        directions = np.array([[0.0, 0.0, 1.0]])
        far = np.asarray(form.far_field(space, np.array([[0, 0, -1.0], [1.0, 0, 0]]), k))
        runs = ([] if args.no_dense else [("block_triangular", None, "")]) + [
            ("hodlr", float(tol), build) for tol in args.tols.split(",")
            for build in args.build.split(",")]
        reference = None
        for name, tol, build in runs:
            if tol is not None:
                muller_preconditioner.HODLR_TOL = tol
                muller_preconditioner.HierarchicalBlockTriangular.build = build
            tracemalloc.start()
            t = time.perf_counter()
            system = MullerTransmission(ops, mass, k, G, preconditioner=name,
                                        points=muller_preconditioner.dof_points(space))
            setup = time.perf_counter() - t
            setup_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            rhs = system.rhs(*plane_wave_data(space, k, directions))
            res = gmres(system.matvec, rhs, tol=1e-5, restart=500, maxiter=500)
            values = far @ system.solution(res.x)[:, 0]
            reference = values if reference is None else reference
            diff = np.abs(values - reference).max() / np.abs(reference).max()
            ranks = system.preconditioner.stats["ranks"][0] if name == "hodlr" else ""
            print(f"{f / 1e3:5.0f} {k / (C1 / C) * 0.01:5.1f} {2 * space.n_dofs:7d} | {name} "
                  f"{tol or ''} {build} | {setup:7.1f} "
                  f"{held_bytes(system.preconditioner) / 1e6:8.1f} {setup_peak / 1e6:8.1f} "
                  f"{int(res.iterations[0]):3d} | {diff:.1e} {ranks}", flush=True)
    print(f"# peak resident {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB")


if __name__ == "__main__":
    main()
