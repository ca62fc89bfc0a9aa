"""Batched ACA+ alone on a synthetic batch: time per cross step and host round trips.

    python bench/bench_aca_batch.py [--blocks 64] [--size 256] [--k 12] [--backend cpu|gpu]

B pairs of random point clusters in unit cubes, the second moved 1.2 .. 8 along x, kernel
exp(ikr)/r: the ranks spread widely within one batch (as in one chunk of a level), so
blocks finish at very different steps. Prints wall time, steps, time per step, host
round trips, ranks. On the GPU a step's time is launch latency plus these round trips:
the figure to compare before and after a change of aca.py.

Measured 2026-11-25 on the shared 2-core CPU (defaults, eps 1e-6): the ACA before the
working set was gathered down to the running blocks 319 s and 188 s (two runs), after it
63 s; both 123 steps, ranks 26..123 (identical factors' ranks).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix.aca import aca_plus_batched


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, default=64)
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--k", type=float, default=12.0)
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args(argv)
    be = get_backend(args.backend)
    xp = be.xp
    B, L, k = args.blocks, args.size, args.k
    rng = np.random.default_rng(0)
    X = xp.asarray(rng.random((B, L, 3)))
    Y = xp.asarray(rng.random((B, L, 3)) + np.linspace(1.2, 8, B)[:, None, None] * [1, 0, 0])

    def entries(ti, sj):
        r = xp.linalg.norm(X[ti // L, ti % L] - Y[sj // L, sj % L], axis=1)
        return xp.exp(1j * k * r) / r

    start = xp.asarray(np.arange(B) * L)
    size = xp.asarray(np.full(B, L))
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        res = aca_plus_batched(entries, start, size, start, size, args.eps, xp, np.complex128)
        be.synchronize()
        dt = time.perf_counter() - t0
        rank = be.asnumpy(res.rank)
        print(f"{B} blocks of {L} x {L} on {be.device_name}: {dt:.3f} s, {res.steps} steps, "
              f"{1e3 * dt / max(res.steps, 1):.2f} ms per step, {res.host_syncs} host round trips, "
              f"ranks {rank.min()}..{rank.max()}", flush=True)


if __name__ == "__main__":
    main()
