"""H-matrix of Helmholtz operators at high frequency: what the frequency bound on the
admissible blocks (`solver.hmatrix.kd_max`) does to ranks, ACA work and accuracy.

    python bench/hmatrix_frequency.py --ka 20 --epw 10 --op double_layer --kd-max none 40 30 20 15

P1 clouds (3 points per triangle) on a geodesic unit sphere with `epw` elements per
wavelength at k = ka; for each kd_max one assembly, printing ACA steps (cross iterations of
the batched ACA: each is a fixed number of launches on the GPU, so they measure its latency
cost), kernel evaluations, stored entries, rank statistics, time, and the matvec error
||(H - A) x|| / ||A x|| of a random complex x on `--rows` random rows, A's rows evaluated
exactly by the pair kernel (the H-matrix's target matrix).

Measured 2026-11-25 on the shared 2-core CPU (times noisy: the machine was loaded),
`--ka 25 --epw 8 --points 0 --rows 200 --kd-max none 40 30 20`, double layer, 9,002 points,
eps 1e-4 (on the unit sphere eta-admissible blocks reach k diam ~ 25-30 only, so 40 and 30
give the partition of none):
    kd_max  admissible  ACA steps  evaluations  stored entries  rank max/mean  ACA s  error
    none    10,920      80         3.12e7       22,946,746      22 / 9.3       294    8.7e-5
    30      10,920      80         3.12e7       22,946,746      22 / 9.3       260    8.7e-5
    20      11,556      50         3.24e7       23,680,740      15 / 9.4       121    8.4e-5
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from bench_hmatrix import geodesic_sphere, p1  # a sibling: run as a script, bench/ is on the path

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds, space_cloud
from wavescat.bem.assembly.hmatrix.clouds import point_cloud
from wavescat.bem.assembly.hmatrix.kernels import PairKernel


def row_error(H, kernel, x, rows):
    """Relative error of (H x)[rows] against the exact rows of the kernel matrix."""
    xp, n = kernel.xp, H.shape[1]
    ti = np.repeat(rows, n)
    sj = np.tile(np.arange(n), len(rows))
    A = kernel.backend.asnumpy(kernel(xp.asarray(ti), xp.asarray(sj))).reshape(len(rows), n)
    ax = A @ x
    return float(np.linalg.norm(H.matvec(x)[rows] - ax) / np.linalg.norm(ax))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ka", type=float, default=20.0)
    ap.add_argument("--epw", type=float, default=10.0)
    ap.add_argument("--op", default="double_layer")
    ap.add_argument("--kd-max", nargs="+", default=["none", "30"])
    ap.add_argument("--eps", type=float, default=1e-4)
    ap.add_argument("--rows", type=int, default=64)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--precision", default="double")
    ap.add_argument("--points", type=int, default=3,
                    help="quadrature points per triangle (1, 3, 6); 0: one point per vertex "
                    "(a point cloud: the same ranks at a fraction of the evaluations)")
    args = ap.parse_args(argv)
    be = get_backend(args.backend)
    h = 2 * math.pi / args.ka / args.epw
    # geodesic sphere: mean edge ~ 0.95 / freq on the unit sphere
    mesh = geodesic_sphere(max(2, round(0.95 / h)))
    if args.points:
        cloud = space_cloud(p1(mesh), args.points)
    else:
        v = mesh.vertices
        cloud = point_cloud(v, 4 * np.pi / len(v), normals=v / np.linalg.norm(v, axis=1, keepdims=True))
    k = args.ka
    rng = np.random.default_rng(0)
    x = rng.standard_normal(cloud.n) + 1j * rng.standard_normal(cloud.n)
    rows = rng.choice(cloud.n, min(args.rows, cloud.n), replace=False)
    kind = f"P1, {args.points} points per triangle" if args.points else "one point per vertex"
    print(f"# {args.op}, {cloud.n} dofs ({kind}), ka = {args.ka:g}, mean edge {mesh.edge_lengths.mean():.4f} "
          f"({2 * math.pi / k / mesh.edge_lengths.mean():.1f} per wavelength), eps {args.eps:g}, "
          f"{be.device_name}", flush=True)
    print(f"{'kd_max':>7} {'adm':>7} {'dense':>6} {'steps':>6} {'aca_evals':>10} {'stored':>11} "
          f"{'compr':>7} {'rmax':>5} {'rmean':>6} {'aca_s':>7} {'cross_s':>7} {'recomp_s':>8} "
          f"{'total_s':>7} {'error':>9}", flush=True)
    for spec in args.kd_max:
        kd = None if spec.lower() == "none" else float(spec)
        t0 = time.perf_counter()
        H = assemble_from_clouds(args.op, k, cloud, cloud, backend=be, precision=args.precision,
                                 eps=args.eps, kd_max=kd)
        wall = time.perf_counter() - t0
        kern = PairKernel(args.op, k, cloud, cloud, be, args.precision)
        err = row_error(H, kern, x, rows)
        r, t = H.report, H.report["time_s"]
        evals = r["kernel_evaluations"]
        print(f"{spec:>7} {r['blocks']['admissible']:7d} {r['blocks']['dense']:6d} "
              f"{r['blocks']['aca_steps']:6d} {evals:10.3e} {r['stored_entries']:11d} "
              f"{r['compression_ratio']:7.4f} {r['rank_max']:5d} {r['rank_mean']:6.1f} "
              f"{t['aca']:7.2f} {t.get('aca_cross', 0):7.2f} {t.get('recompression', 0):8.2f} "
              f"{wall:7.2f} {err:9.2e}", flush=True)


if __name__ == "__main__":
    main()
