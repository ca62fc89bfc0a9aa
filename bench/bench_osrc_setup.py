"""The OSRC preconditioner's set-up (its sparse LU factorisations) on a surface mesh, and one
factorisation with SuperLU's BLAS calls on 1 thread (what wavescat does, bem/formulations/osrc.py
`one_blas_thread`) against BLAS's own thread count.

    PYTHONPATH=src python bench/bench_osrc_setup.py MESH [--k K] [--blas-threads 1 2 ...]
        [--ranks R] [--split N]

MESH: any surface mesh file (meshio). Prints the unknowns, each factorisation's seconds per
BLAS thread count, and the OsrcNtD set-up (all Padé terms and the inverse) as the solve
makes it. With --ranks, also what one rank of a solve on R ranks repeats (issue 28): its
share of the factorisations, with the mass matrix beside them, SciPy's CSC copies of their L
and U, the host's part of their level-ordered device copy (triangular.py), and, on a GPU,
that whole copy.
"""
from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np
from threadpoolctl import threadpool_limits

from wavescat.backend import get_backend
from wavescat.bem.discretisation import spaces
from wavescat.bem.linalg import triangular
from wavescat.bem.linalg.sparse_lu import OrderedLU, nested_dissection
from wavescat.bem.formulations.osrc import OsrcNtD, mass_and_stiffness, solve_threads
from wavescat.geometry.icosphere import split_in_four
from wavescat.surface import SurfaceMesh


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("mesh")
    p.add_argument("--k", type=float, default=4.18879)
    p.add_argument("--blas-threads", type=int, nargs="*", default=[1, 2],
                   help="one factorisation in this process per count (none: skip)")
    p.add_argument("--ranks", type=int, default=0, help="also one rank's set-up on this many")
    p.add_argument("--split", type=int, default=0, metavar="N",
                   help="split every triangle into four N times first (a mesh of twice the "
                        "frequency each time: pass its --k)")
    args = p.parse_args(argv)
    mesh = SurfaceMesh.from_file(args.mesh)
    for _ in range(args.split):
        mesh = SurfaceMesh(*split_in_four(mesh.vertices, mesh.triangles))
    space = spaces.p1(mesh)
    mass, stiffness = mass_and_stiffness(space)
    shifted = (mass - (0.3 + 0.1j) * stiffness / args.k**2).tocsc()
    print(f"{args.mesh}: {space.n_dofs} unknowns, k = {args.k:g}")
    for n in args.blas_threads:
        with threadpool_limits(limits=n, user_api="blas"):
            t0 = time.perf_counter()
            OrderedLU(shifted, nested_dissection(shifted))  # osrc.factorise's, in this process
            print(f"  one factorisation, BLAS on {n} thread(s): {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    OsrcNtD(space, args.k, mass=mass, stiffness=stiffness)
    print(f"  OsrcNtD set-up (8 Padé terms and the inverse, {solve_threads()} solve threads): "
          f"{time.perf_counter() - t0:.2f} s")
    if args.ranks:
        rank_setup(space, args.k, mass, stiffness, args.ranks)


def rank_setup(space, k, mass, stiffness, ranks):
    """Rank 0 of `ranks`: its resolvents (Padé terms and the inverse's, dealt round) and the
    mass matrix factorised side by side, and the device copy of them (one pattern) piece by
    piece."""
    t0 = time.perf_counter()
    ntd = OsrcNtD(space, k, mass=mass, stiffness=stiffness, mass_factor=True,
                  group=SimpleNamespace(rank=0, size=ranks))
    lus = [ntd.mass_lu.lu] + [lu.lu for _, lu in ntd._terms]
    print(f"  rank 0 of {ranks}: {len(ntd._terms)} resolvents and the mass matrix "
          f"factorised in {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    factors = {"L": [lu.L for lu in lus], "U": [lu.U for lu in lus]}
    print(f"  SciPy's CSC copies of L and U of {len(lus)} factors: {time.perf_counter() - t0:.2f} s")
    triangular._by_rows(np.array([0, 1], np.int32), np.array([0], np.int32), True)  # compiled
    for name, tri in factors.items():
        t0 = time.perf_counter()
        triangular._by_rows(tri[0].indptr, tri[0].indices, name == "L")
        print(f"  {name}: rows and levels on the host {time.perf_counter() - t0:.2f} s, "
              f"{tri[0].nnz} entries")
    be = get_backend("auto")
    if be.is_gpu:
        be.synchronize()
        t0 = time.perf_counter()
        triangular.SharedPatternLU(be.xp, lus)
        be.synchronize()
        print(f"  their device copy (SharedPatternLU): {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
