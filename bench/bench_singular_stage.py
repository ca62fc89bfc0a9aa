"""The front of one H-matrix assembly, before ACA, piece by piece: the entry evaluator (element
data and their device copies), the cloud and trees, a rank's share and pair filter, the element
cloud, the touching and near pairs, and the singular corrections, as rank 0 of `--ranks`
processes would make them (1: the whole operator), then the next operator's corrections on the
same mesh. The pieces every rank repeats whatever its share are what keep the solve on several
ranks from scaling (bench/README.md, "The submarine at 4 kHz on 4 x H200").

    python bench/bench_singular_stage.py --mesh .gpu/subb/submarine_2000Hz.msh --frequency 2000 \
        --ranks 4 [--backend gpu] [--beside] [--profile]

--beside: with OSRC-like sparse factorisations on host threads meanwhile (as the solve starts
them beside its assembly); --profile: the cumulative cProfile of the stage as well.
"""
from __future__ import annotations

import argparse
import cProfile
import math
import pstats
import time
from types import SimpleNamespace

from wavescat.backend import get_backend
from wavescat.bem.assembly import operators
from wavescat.bem.assembly.hmatrix import distributed, galerkin
from wavescat.bem.discretisation import pairs, spaces
from wavescat.bem.discretisation import quadrature as q
from wavescat.bem.formulations.osrc import factorise, in_background, mass_and_stiffness, threaded_map
from wavescat.defaults import HMATRIX
from wavescat.surface import SurfaceMesh


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mesh", required=True, help="a stored surface mesh (.msh)")
    p.add_argument("--frequency", type=float, required=True)
    p.add_argument("--sound-speed", type=float, default=1500.0)
    p.add_argument("--ranks", type=int, default=1, help="time rank 0's share of this many")
    p.add_argument("--backend", default="auto")
    p.add_argument("--operators", nargs=2, default=["double_layer", "hypersingular"])
    p.add_argument("--beside", action="store_true")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args(argv)

    be = get_backend(args.backend)
    t = time.perf_counter()
    mesh = SurfaceMesh.from_file(args.mesh)
    space = spaces.p1(mesh)
    k = 2 * math.pi * args.frequency / args.sound_speed
    print(f"{args.mesh}: {space.n_dofs} DOFs, k = {k:.4f}, rank 0 of {args.ranks}, {be.describe()}; "
          f"read in {time.perf_counter() - t:.2f} s", flush=True)
    if args.beside:
        mass, stiffness = mass_and_stiffness(space)
        shifts = [0.3 + 0.1j * i for i in range(10 if args.ranks == 1 else 4)]
        factors = in_background(lambda: threaded_map(lambda b: factorise(mass - b * stiffness), shifts))

    def timed(label, make):
        t0 = time.perf_counter()
        out = make()
        be.synchronize()
        print(f"  {label}: {time.perf_counter() - t0:.2f} s", flush=True)
        return out

    order = q.QuadratureOrders().regular  # the evaluator's default rules
    rule = q.triangle_rule(order)
    hm = {key: HMATRIX[key] for key in ("eta", "leaf_size", "kd_max")}

    def keep_of(plan):
        if args.ranks == 1:
            return None
        return distributed.distribution(SimpleNamespace(rank=0, size=args.ranks))(plan, space, space)[1]

    def stage(name):
        ev = timed(f"{name}: entry evaluator", lambda: operators.EntryEvaluator(name, space, space, k, backend=be))
        cloud = timed("cloud", lambda: galerkin.shared_cloud(space, order, rule))
        plan = timed("trees", lambda: galerkin._plan(name, k, space, space, (cloud, cloud), order,
                                                      hm["eta"], hm["leaf_size"], hm["kd_max"]))
        keep = timed("share and pair filter", lambda: keep_of(plan))
        if keep is not None:
            print(f"  the share's test elements: {len(keep.elements)} of {mesh.n_triangles}")
        timed("element cloud", lambda: galerkin.shared_cloud(space, order, rule, elements=True))
        timed("touching pairs", lambda: pairs.touching_kept(mesh, keep))
        timed("near pairs", lambda: pairs.near_kept(mesh, float(ev.orders.near_factor), keep))
        rows = timed("corrections", lambda: galerkin.singular_correction(ev, name, k, space, space, rule, be,
                                                                         "double", keep=keep))[0]
        print(f"  {int(rows.shape[0]):,} correction entries")

    profile = cProfile.Profile()
    t = time.perf_counter()
    if args.profile:
        profile.enable()
    stage(args.operators[0])
    profile.disable()
    print(f"first operator's stage: {time.perf_counter() - t:.2f} s", flush=True)
    t = time.perf_counter()
    stage(args.operators[1])
    print(f"next operator's stage (the mesh's data made): {time.perf_counter() - t:.2f} s", flush=True)
    if args.profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(30)
    if args.beside:
        t = time.perf_counter()
        factors.result()
        print(f"waited {time.perf_counter() - t:.2f} s more for the factorisations")


if __name__ == "__main__":
    main()
