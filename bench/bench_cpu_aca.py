"""The CPU's H-matrix assembly stage by stage: P1 operators on a geodesic unit sphere.

    PYTHONUNBUFFERED=1 python bench/bench_cpu_aca.py --refine 5 --k 20 \
        --ops hypersingular double_layer [--repeat 2]

Runs `assemble_hmatrix` (the solver's path, workflow defaults: eps, eta, leaf size) on the
CPU for each operator and prints its stages (trees, singular quadrature, near field, ACA with
its recompression), the kernel evaluations, the stored bytes and one product's distance from
the product of the H-matrix assembled with eps / 10 (the reference; `--no-check` skips it).
The first assembly of a process also compiles the Numba kernels (cached on disk for the
next process): `--repeat 2` reports both runs. Sphere refinement r has 10 4^r + 2 dofs
(r = 5: 10,242).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from wavescat.bem.assembly.hmatrix.galerkin import assemble_hmatrix
from wavescat.bem.discretisation import spaces
from wavescat.defaults import HMATRIX
from wavescat.geometry.icosphere import icosphere


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refine", type=int, default=5, help="geodesic sphere refinement")
    ap.add_argument("--k", type=float, default=20.0, help="wavenumber (unit sphere: ka)")
    ap.add_argument("--ops", nargs="+", default=["hypersingular", "double_layer"])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args(argv)
    space = spaces.p1(icosphere(args.refine))
    eps = HMATRIX["eps"]
    print(f"P1 on icosphere({args.refine}): {space.n_dofs} dofs, k = {args.k:g}, eps = {eps:g}",
          flush=True)
    x = np.random.default_rng(0).standard_normal(space.n_dofs) + 0j
    for name in args.ops:
        for run in range(args.repeat):
            t0 = time.perf_counter()
            H = assemble_hmatrix(name, space, space, args.k, backend="cpu")
            wall = time.perf_counter() - t0
            t = H.report["time_s"]
            print(f"{name} run {run + 1}: {wall:.1f} s: trees {t['trees']:.1f}, singular "
                  f"{t['singular_quadrature']:.1f}, near field {t['near_field']:.1f}, ACA "
                  f"{t['aca']:.1f} (recompression {t.get('recompression', 0.0):.1f}) s; "
                  f"{H.report['kernel_evaluations']:.3g} kernel evaluations, "
                  f"{H.report['storage_bytes'] / 2**20:.1f} MiB", flush=True)
        if not args.no_check:
            ref = assemble_hmatrix(name, space, space, args.k, backend="cpu", eps=eps / 10)
            y = ref @ x
            print(f"{name}: product within {np.linalg.norm(H @ x - y) / np.linalg.norm(y):.2e} "
                  f"of the eps / 10 H-matrix's", flush=True)


if __name__ == "__main__":
    main()
