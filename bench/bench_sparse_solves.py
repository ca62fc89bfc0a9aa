"""The sparse solves of one GMRES product: the OSRC NtD map (nine resolvents: 8 Padé terms
and (1 + X)^-1, osrc.OsrcNtD) and one of its factors, on the host (SuperLU, column pairs on the job's threads) and, where a
GPU is, on the device (level-scheduled triangular solves with the same factors, the Padé
factors in one launch: triangular.py), for blocks of 1 to 361 right-hand sides. This is what decides `burton_miller.DEVICE_SOLVE_COLUMNS`.

    python bench/bench_sparse_solves.py --mesh meshes/submarine_1000Hz.msh --frequency 1000
    python bench/bench_sparse_solves.py --sphere 4 --frequency 1000      # icosphere level 4
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from wavescat.backend import get_backend
from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations import osrc


def timed(fn, *args, sync=lambda: None):
    sync()
    t0 = time.perf_counter()
    fn(*args)
    sync()
    return time.perf_counter() - t0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mesh", default="", help="a stored surface mesh (.msh)")
    p.add_argument("--sphere", type=int, default=4, help="icosphere level (without --mesh)")
    p.add_argument("--frequency", type=float, default=1000.0)
    p.add_argument("--sound-speed", type=float, default=1500.0)
    p.add_argument("--widths", type=int, nargs="+", default=[1, 2, 32, 361])
    p.add_argument("--host-max", type=int, default=1 << 30,
                   help="time the host solves only for blocks up to this wide (361 columns of "
                        "the 1 kHz submarine's NtD map take about a minute there)")
    p.add_argument("--process-unknowns", type=int, default=osrc.PROCESS_UNKNOWNS,
                   help="osrc.PROCESS_UNKNOWNS: factors of this many unknowns and more live in "
                        "worker processes (a huge value: all in this process, on threads)")
    args = p.parse_args(argv)
    osrc.PROCESS_UNKNOWNS = args.process_unknowns
    if args.mesh:
        from wavescat.surface import SurfaceMesh  # noqa: PLC0415
        mesh = SurfaceMesh.from_file(args.mesh)
    else:
        from wavescat.geometry.icosphere import icosphere  # noqa: PLC0415
        mesh = icosphere(args.sphere)
    space = spaces.p1(mesh)
    k = 2 * math.pi * args.frequency / args.sound_speed
    t0 = time.perf_counter()
    ntd = osrc.OsrcNtD(space, k)
    factor = ntd._terms[0][1]
    print(f"{space.n_dofs} DOFs, k = {k:.4f}/m: NtD factorised in {time.perf_counter() - t0:.2f} s "
          f"on {osrc.solve_threads()} threads ({'worker processes' if space.n_dofs >= osrc.PROCESS_UNKNOWNS else 'in this process'}); "
          f"one factor L + U {factor.lu.nnz} nonzeros", flush=True)
    be = get_backend("auto")
    rng = np.random.default_rng(0)
    device = f" {'factor GPU':>11} {'NtD GPU':>11} {'NtD GPU 1st':>11}" if be.is_gpu else ""
    print(f"{'width':>6} {'NtD host':>11} {'factor host':>11}{device}   (seconds per block)",
          flush=True)
    for r in args.widths:
        y = rng.standard_normal((space.n_dofs, r)) + 1j * rng.standard_normal((space.n_dofs, r))
        row = ([timed(ntd.apply_to_weak, y), timed(factor.solve, y)] if r <= args.host_max
               else [float("nan")] * 2)
        if be.is_gpu:
            yd = be.xp.asarray(y)
            first = None
            for _ in range(2):  # the second: the device copies of the factors made
                dev = [timed(factor.solve, yd, sync=be.synchronize),
                       timed(ntd.apply_to_weak, yd, sync=be.synchronize)]
                first = dev[1] if first is None else first
            check = min(r, 4)  # against SuperLU on a few columns
            err = (np.abs(be.asnumpy(factor.solve(yd[:, :check] if r > check else yd))
                          - factor.solve(y[:, :check])).max() / np.abs(y).max())
            assert err < 1e-10, err
            row += dev + [first]  # the first NtD call with its factors' device copies
        print(f"{r:>6} " + " ".join(f"{v:>11.4f}" for v in row), flush=True)


if __name__ == "__main__":
    main()
