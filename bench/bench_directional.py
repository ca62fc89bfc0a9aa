"""Directional against plain H-matrices of the submarine's Burton-Miller operators.

    python bench/bench_directional.py --mesh-dir DIR --freq 500 1000 2000 [--backend gpu]
        [--configs 10:1:5 15:2:6 hmatrix:none] [--ops double_layer hypersingular] [--split N]

For each frequency (mesh DIR/submarine_<f>Hz.msh, as bench_submarine.py --mesh-dir writes
them; `--split N`: the mesh of f / 2^N Hz with every triangle split into four N times, a
mesh of f's size where f's own is not at hand) and operator: the H-matrix at the workflow's
settings (solver.hmatrix) and the directional format at each ACA_KD_MAX:ETA2:ORDER of
--configs (`hmatrix:KD`: the plain H-matrix with solver.hmatrix.kd_max KD, a number or none);
per row the assembly time, what is stored (near field and ACA blocks; the far field stores
nothing) and the dense near field's share of it, the far field's own device arrays, the
product time of one vector (median of 3, after a first product), and the product's distance
from the H-matrix's (relative, 2-norm, over a random vector). `--stages`: the far field's
product stage by stage (leaf passes, transfers, the blocks' kernel products; seconds summed
over the timed products, the device synchronised around each), its passes over the
components and the working bytes per column.
Storage growth per doubling of the frequency is the ratio of one row's storage to the row
of the same configuration at half the frequency.
"""
from __future__ import annotations

import argparse
import gc
import math
import time
from pathlib import Path

import numpy as np

from wavescat.backend import get_backend
from wavescat.bem.assembly.directional import DirectionalSettings, assemble_directional
from wavescat.bem.assembly.hmatrix import assemble_hmatrix
from wavescat.bem.discretisation import spaces
from wavescat.configuration.case import SolverSettings
from wavescat.geometry.icosphere import split_in_four
from wavescat.surface import SurfaceMesh

SOUND_SPEED = 1500.0  # the default config's water


def timed_products(H, x, be, repeats=3):
    H @ x
    be.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        y = H @ x
        be.synchronize()
        times.append(time.perf_counter() - t0)
    return y, float(np.median(times))


def dense_gib(H) -> float:
    """The dense near field's bytes of an H-matrix (or a directional one's near part)."""
    near = getattr(H, "near", H)
    return sum(int(g.D.nbytes) for g in near.groups() if g.D is not None) / 2**30


def release(be):
    gc.collect()
    if be.is_gpu:
        be.xp.get_default_memory_pool().free_all_blocks()


STAGES: dict = {}


def time_stages(be):
    """Wrap the far field's product stages with synchronised timers (summed in STAGES)."""
    from wavescat.bem.assembly.directional import farfield as ff

    def timed(name, fn):
        def wrapped(*a, **k):
            be.synchronize()
            t0 = time.perf_counter()
            out = fn(*a, **k)
            be.synchronize()
            STAGES[name] = STAGES.get(name, 0.0) + time.perf_counter() - t0
            return out
        return wrapped

    ff.FarField._leaf_pass = timed("leaves", ff.FarField._leaf_pass)
    ff.FarField._interactions = timed("blocks", ff.FarField._interactions)
    ff.FarField._apply_transfers = timed("transfers", ff.FarField._apply_transfers)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh-dir", required=True)
    ap.add_argument("--freq", type=float, nargs="+", default=[500.0, 1000.0])
    ap.add_argument("--backend", default="auto", choices=["auto", "cpu", "gpu"])
    ap.add_argument("--configs", nargs="*", default=["10:1:5"],
                    help="ACA_KD_MAX:ETA2:ORDER of each directional run")
    ap.add_argument("--ops", nargs="+", default=["double_layer", "hypersingular"])
    ap.add_argument("--no-reference", action="store_true", help="skip the plain H-matrix")
    ap.add_argument("--stages", action="store_true", help="time the far field's product stages")
    ap.add_argument("--split", type=int, default=0, metavar="N",
                    help="use the mesh of f / 2^N Hz split into four N times")
    args = ap.parse_args(argv)
    be = get_backend(args.backend)
    if args.stages:
        time_stages(be)
    hm = SolverSettings.from_dict({}).hmatrix.options()
    print(f"# bench_directional on {be.device_name} ({be.name}); H-matrix {hm}", flush=True)
    print("f_Hz  dofs  operator  format  assembly_s  stored_GiB  dense_GiB  far_GiB  product_s  "
          "rel_diff  far_blocks", flush=True)
    for f in args.freq:
        mesh = SurfaceMesh.from_file(Path(args.mesh_dir) / f"submarine_{f / 2**args.split:g}Hz.msh")
        for _ in range(args.split):
            mesh = SurfaceMesh(*split_in_four(mesh.vertices, mesh.triangles))
        space = spaces.p1(mesh)
        k = 2 * math.pi * f / SOUND_SPEED
        rng = np.random.default_rng(0)
        x = rng.standard_normal(space.n_dofs) + 1j * rng.standard_normal(space.n_dofs)
        xd = be.xp.asarray(x)
        for op in args.ops:
            ref = None
            if not args.no_reference:
                t0 = time.perf_counter()
                H = assemble_hmatrix(op, space, space, k, backend=be, **hm)
                be.synchronize()
                ta = time.perf_counter() - t0
                ref, tp = timed_products(H, xd, be)
                ref = be.asnumpy(ref) if be.is_gpu else ref
                print(f"{f:g} {space.n_dofs} {op} hmatrix {ta:.1f} "
                      f"{H.report['storage_bytes'] / 2**30:.3f} {dense_gib(H):.3f} 0 {tp:.3f} 0 0",
                      flush=True)
                del H
                release(be)
            for cfg in args.configs:
                t0 = time.perf_counter()
                if cfg.startswith("hmatrix:"):
                    kd = cfg.split(":")[1]
                    D = assemble_hmatrix(op, space, space, k, backend=be, **{
                        **hm, "kd_max": None if kd == "none" else float(kd)})
                else:
                    aca, eta2, order = cfg.split(":")
                    st = DirectionalSettings(order=int(order), eta2=float(eta2))
                    D = assemble_directional(op, space, space, k, backend=be,
                                             **{**hm, "kd_max": float(aca)}, settings=st)
                be.synchronize()
                ta = time.perf_counter() - t0
                STAGES.clear()
                y, tp = timed_products(D, xd, be)
                y = be.asnumpy(y) if be.is_gpu else y
                diff = np.linalg.norm(y - ref) / np.linalg.norm(ref) if ref is not None else float("nan")
                rep = D.report
                far = rep.get("directional", {"device_bytes": 0, "blocks_per_level": "-"})
                name = cfg if cfg.startswith("hmatrix:") else f"directional:{cfg}"
                print(f"{f:g} {space.n_dofs} {op} {name} {ta:.1f} "
                      f"{rep['storage_bytes'] / 2**30:.3f} {dense_gib(D):.3f} "
                      f"{far['device_bytes'] / 2**30:.3f} "
                      f"{tp:.3f} {diff:.2e} {far['blocks_per_level']}", flush=True)
                if args.stages and hasattr(D, "far"):
                    print(f"  stages (4 products): { {a: round(b, 3) for a, b in STAGES.items()} }, "
                          f"passes {len(D.far.column_groups(1))}, working "
                          f"{D.far.work_bytes_per_column() / 2**30:.2f} GiB a column", flush=True)
                del D
                release(be)


if __name__ == "__main__":
    main()
