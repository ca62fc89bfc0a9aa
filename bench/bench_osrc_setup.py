"""The OSRC preconditioner's set-up (its sparse LU factorisations) on a surface mesh, and one
factorisation with SuperLU's BLAS calls on 1 thread (what wavescat does, bem/formulations/osrc.py
`one_blas_thread`) against BLAS's own thread count.

    PYTHONPATH=src python bench/bench_osrc_setup.py MESH [--k K] [--blas-threads 1 2 ...]

MESH: any surface mesh file (meshio). Prints the unknowns, each factorisation's seconds per
BLAS thread count, and the OsrcNtD set-up (all Padé terms and the inverse) as the solve
makes it.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import scipy.sparse.linalg as spla
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from wavescat.bem.discretisation import spaces  # noqa: E402
from wavescat.bem.formulations.osrc import OsrcNtD, mass_and_stiffness, solve_threads  # noqa: E402
from wavescat.surface import SurfaceMesh  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mesh")
    p.add_argument("--k", type=float, default=4.18879)
    p.add_argument("--blas-threads", type=int, nargs="+", default=[1, 2])
    args = p.parse_args(argv)
    space = spaces.p1(SurfaceMesh.from_file(args.mesh))
    mass, stiffness = mass_and_stiffness(space)
    shifted = (mass - (0.3 + 0.1j) * stiffness / args.k**2).tocsc()
    print(f"{args.mesh}: {space.n_dofs} unknowns, k = {args.k:g}")
    for n in args.blas_threads:
        with threadpool_limits(limits=n, user_api="blas"):
            t0 = time.perf_counter()
            spla.splu(shifted, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                      options={"SymmetricMode": True})
            print(f"  one factorisation, BLAS on {n} thread(s): {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    OsrcNtD(space, args.k, mass=mass, stiffness=stiffness)
    print(f"  OsrcNtD set-up (8 Padé terms and the inverse, {solve_threads()} solve threads): "
          f"{time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
