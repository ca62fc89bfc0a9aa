"""Monostatic aspect sweeps: one incidence direction against N directions on one system
(operators and OSRC preconditioner assembled once), time per stage, iterations, peak memory
and the ratio of the N-direction time to the one-direction time.

    python bench/bench_sweep.py --geometry sphere --frequency 1200 --counts 1 37 361
    python bench/bench_sweep.py --geometry submarine --frequency 1000 --backend gpu --counts 1 37 361
    python bench/bench_sweep.py ... --method batched compressed block
    python bench/bench_sweep.py ... --boundary '{"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}'

Aspect directions are spread over [0, 360) degrees in the xy plane (the workflow's `aspect`
incidence); the far field is taken at 361 receivers in that plane and at the backscatter
direction of each aspect. The case goes through the workflow's normalisation, so quadrature,
H-matrix, GMRES and OSRC settings are the `solve` rule's, and its system is built by the
solver's own assembly (wavescat.solve.driver.assemble_system), so every boundary kind
(`--boundary`, a case's boundary block) runs here as it runs in a solve. Methods, all on
the same operators:

  batched     the solver's GMRES: one Krylov space per direction, one operator product per
              iteration for the whole batch (batches sized by wavescat.solve.driver)
  compressed  the same on an orthonormal basis of the right-hand sides (SVD, singular values
              below tol/10 of the smallest |b| dropped): p <= N systems, answers recombined
  block       block GMRES (one Krylov space shared by the compressed block, no restart)

Time of a sweep = preconditioner + right-hand sides + GMRES + far field; the ratio also
counts the assembly, which every sweep shares ((assembly + sweep N) / (assembly + sweep 1)).
`gm/dir`: GMRES seconds per direction; `ops`: the share of the system products' time spent in
the boundary operators (the rest: sparse OSRC and mass solves, host-device copies).
Peak memory: the process's resident peak (host) and CuPy's pool (GPU) after each sweep.
"""
from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

from wavescat.problem import farfield
from wavescat.backend import to_host
from wavescat.bem.formulations import burton_miller
from wavescat.bem.linalg.gmres import gmres, krylov_batches
from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.geometry.mesher import mesh_case
from wavescat.memory import available_bytes
from wavescat.solve import driver

C = 1500.0


def host_peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def gpu_pool_gib(be) -> float:
    return be.xp.get_default_memory_pool().total_bytes() / 2**30 if be.is_gpu else 0.0


def compress(rhs, tol, xp):
    """(C, W): orthogonal directions C (n, p) and weights W (p, N) with rhs ≈ C W to
    tol/10 of the smallest right-hand side's norm."""
    u, s, wh = np.linalg.svd(to_host(rhs), full_matrices=False)
    floor = 0.1 * tol * np.linalg.norm(to_host(rhs), axis=0).min()
    p = max(1, int(np.sum(s > floor)))
    return xp.asarray(u[:, :p] * s[:p]), xp.asarray(wh[:p])


class Clock:
    """Seconds spent in the system's products (`matvec`) and, of those, in its boundary
    operators (`weak_traces`: the H-matrix or dense products); the rest of a product is the
    sparse OSRC and mass solves and the host-device copies."""

    def __init__(self, system, sync=lambda: None):
        self.seconds = {"matvec": 0.0, "operators": 0.0}
        self.sync = sync  # the device's queue drained before each reading
        for name, key in (("matvec", "matvec"), ("weak_traces", "operators")):
            if hasattr(system, name):
                setattr(system, name, self._timed(getattr(system, name), key))

    def _timed(self, fn, key):
        def run(*args):
            self.sync()
            t0 = time.perf_counter()
            out = fn(*args)
            self.sync()
            self.seconds[key] += time.perf_counter() - t0
            return out
        return run

    def take(self):
        out = dict(self.seconds)
        self.seconds = dict.fromkeys(self.seconds, 0.0)
        return out


def block_gmres(matvec, B, xp, tol, maxiter, bnorm):
    """Block GMRES without restart for A X = B (n, p), B of full column rank; stops when
    every column of the original sweep, |(B - A X) W[:, q]| <= tol bnorm[q], is met.
    Returns (X, block iterations)."""
    n, p = B.shape
    maxiter = min(maxiter, 64)  # the dense Hessenberg of a block is (maxiter p)^2: capped
    q0, s0 = xp.linalg.qr(B)
    basis = [q0]
    H = np.zeros(((maxiter + 1) * p, maxiter * p), dtype=complex)
    E = np.zeros(((maxiter + 1) * p, p), dtype=complex)
    E[:p] = to_host(s0)
    for j in range(maxiter):
        w = matvec(basis[-1])
        for _ in range(2):  # block CGS2
            V = xp.concatenate(basis, axis=1)
            h = V.conj().T @ w
            w = w - V @ h
            H[: (j + 1) * p, j * p:(j + 1) * p] += to_host(h)
        qj, rj = xp.linalg.qr(w)
        H[(j + 1) * p:(j + 2) * p, j * p:(j + 1) * p] = to_host(rj)
        basis.append(qj)
        rows, cols = (j + 2) * p, (j + 1) * p
        Y = np.linalg.lstsq(H[:rows, :cols], E[:rows], rcond=None)[0]
        R = E[:rows] - H[:rows, :cols] @ Y  # residual of each column in the basis
        if np.all(np.linalg.norm(R, axis=0) <= tol * bnorm):
            break
    V = xp.concatenate(basis[:j + 1], axis=1)
    return V @ xp.asarray(Y), j + 1


def sweep(method, system, formulation, space, k, count, gm, be, receivers, clock):
    xp = be.xp
    t = {}
    aspects = np.linspace(0.0, 360.0, count, endpoint=False)
    d = farfield.plane_directions("xy", aspects)
    t0 = time.perf_counter()
    rhs = formulation.rhs(system, space, k, d)
    t["rhs"] = time.perf_counter() - t0
    clock.take()
    t0 = time.perf_counter()
    tol = gm.tol
    if method == "batched":
        width, basis_bytes = krylov_batches(formulation.n_unknowns(space), count,
                                            min(gm.restart, gm.maxiter), available_bytes(be),
                                            np.dtype(rhs.dtype).itemsize)
        x = xp.zeros_like(rhs)
        its = []
        for s in range(0, count, width):
            res = gmres(system.matvec, rhs[:, s:s + width], xp=xp, tol=tol, restart=gm.restart,
                        maxiter=gm.maxiter, basis_bytes=basis_bytes)
            x[:, s:s + width] = res.x
            its.extend(res.iterations.tolist())
        width_used = width
    else:
        Cm, W = compress(rhs, tol, xp)
        width_used = Cm.shape[1]
        bnorm = to_host(xp.linalg.norm(rhs, axis=0))
        if method == "compressed":
            # each compressed column to the tolerance that keeps every recombined one in it
            res = gmres(system.matvec, Cm, xp=xp, tol=tol * bnorm.min() / max(
                float(np.linalg.norm(to_host(Cm), axis=0).max()) * np.sqrt(width_used), 1e-300),
                restart=gm.restart, maxiter=gm.maxiter)
            Y, its = res.x, res.iterations.tolist()
        else:
            # residual of column q = R W[:, q]: bounded by |R_i| |W[i, q]| summed
            scale = bnorm.min() / np.sqrt(width_used)
            Y, nblock = block_gmres(system.matvec, Cm, xp, tol, gm.maxiter,
                                    np.full(width_used, scale))
            its = [nblock]
        x = Y @ W
    be.synchronize()
    t["gmres"] = time.perf_counter() - t0
    t.update(clock.take())
    t0 = time.perf_counter()
    true = to_host(xp.linalg.norm(rhs - system.matvec(x), axis=0) / xp.linalg.norm(rhs, axis=0))
    t["check"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    xh = to_host(system.solution(x))  # a right-preconditioned (fluid) system's traces
    far = to_host(formulation.far_field(space, receivers.vectors, k, backend=be)) @ xh
    mono = np.einsum("ij,ji->i", to_host(formulation.far_field(space, -d, k, backend=be)), xh)
    t["far_field"] = time.perf_counter() - t0
    return t, its, width_used, float(true.max()), mono, far


def compare_products(ops, widths, be):
    """Seconds of one product of each H-matrix with blocks of `widths` columns: vectors
    gathered per block (batched GEMM), a column at a time by the single-vector kernels, and
    read in place by the wide kernels (block_products.py)."""
    from wavescat.bem.assembly.hmatrix import hmatrix as hm  # noqa: PLC0415

    xp = be.xp
    rng = np.random.default_rng(0)
    ways = {"gathered": (1 << 30, False), "by column": (1 << 30, True), "in place": (1, True)}
    print(f"{'operator':>14} {'width':>5} " + " ".join(f"{w:>9}" for w in ways)
          + f" {'rel diff':>9}", flush=True)
    saved = hm.WIDE_COLUMNS, hm.NARROW_IN_PLACE
    try:
        for name, op in ops.items():
            if not hasattr(op, "parts"):
                continue
            for w in widths:
                X = xp.asarray(rng.standard_normal((op.shape[1], w))
                               + 1j * rng.standard_normal((op.shape[1], w)))
                out, secs = {}, {}
                for way, (threshold, narrow) in ways.items():
                    hm.WIDE_COLUMNS, hm.NARROW_IN_PLACE = threshold, narrow
                    op @ X  # the first call compiles
                    be.synchronize()
                    t0 = time.perf_counter()
                    out[way] = op @ X
                    be.synchronize()
                    secs[way] = time.perf_counter() - t0
                diff = max(float(xp.linalg.norm(out[way] - out["gathered"])
                                 / xp.linalg.norm(out["gathered"])) for way in ways)
                print(f"{name:>14} {w:>5} " + " ".join(f"{secs[way]:9.4f}" for way in ways)
                      + f" {diff:9.1e}", flush=True)
    finally:
        hm.WIDE_COLUMNS, hm.NARROW_IN_PLACE = saved


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--geometry", default="sphere", choices=["sphere", "submarine"])
    p.add_argument("--frequency", type=float, default=1193.662073189215)
    p.add_argument("--epw", type=float, default=10)
    p.add_argument("--counts", type=int, nargs="+", default=[1, 37, 361])
    p.add_argument("--method", nargs="+", default=["batched"],
                   choices=["batched", "compressed", "block"])
    p.add_argument("--backend", default="cpu")
    p.add_argument("--format", default="auto", choices=["auto", "dense", "hmatrix"])
    p.add_argument("--boundary", default="{}",
                   help="the case's boundary block as JSON (default: the schema's, rigid)")
    p.add_argument("--json", default="", help="also write the rows to this file")
    p.add_argument("--mesh", default="", help="a stored mesh (.msh) in place of meshing")
    p.add_argument("--warm", action="store_true",
                   help="assemble once before the timed assembly (a fresh machine compiles its "
                        "kernels in the first)")
    p.add_argument("--device-solve-columns", type=int, nargs="*", default=[], metavar="COLUMNS",
                   help="run the sweeps once for each of these burton_miller.DEVICE_SOLVE_COLUMNS")
    p.add_argument("--compare-products", type=int, nargs="*", default=[], metavar="WIDTH",
                   help="also time each H-matrix's product with blocks of these widths, "
                        "gathered against in place (GPU)")
    args = p.parse_args(argv)
    geometry = {"kind": "sphere", "radius": 1.0} if args.geometry == "sphere" else {"kind": "submarine"}
    cfg = prepare_config({"medium": {"sound_speed": C}, "run": ["c"], "cases": {"c": {
        "geometry": geometry, "frequencies_hz": [args.frequency],
        "boundary": json.loads(args.boundary), "mesh": {"elements_per_wavelength": args.epw},
        "solver": {"operator_format": args.format, "backend": args.backend}}}})
    case = solve_case(cfg, "c")
    t0 = time.perf_counter()
    if args.mesh:  # a stored mesh of the workflow's (machines without gmsh)
        from wavescat.surface import SurfaceMesh  # noqa: PLC0415
        mesh = SurfaceMesh.from_file(args.mesh)
    else:
        mesh, _stats = mesh_case(Case.from_config(cfg, "c"))
    t_mesh = time.perf_counter() - t0
    k = case.medium.wavenumber(args.frequency)
    if args.warm:  # a first assembly compiles the kernels (once per machine: CuPy caches them)
        t0 = time.perf_counter()
        driver.assemble_system(case, mesh, k)
        print(f"first assembly (kernels compiled) {time.perf_counter() - t0:.1f} s", flush=True)
    assembled = driver.assemble_system(case, mesh, k)
    formulation, space, ops, system, be = (assembled.formulation, assembled.space,
                                           assembled.operators, assembled.system,
                                           assembled.backend)
    fmt, t_asm, t_pre = (assembled.operator_format, assembled.timings["assembly"],
                         assembled.timings["preconditioner"])
    print(f"{args.geometry} at {args.frequency:g} Hz, boundary {formulation.kind}: "
          f"{space.n_dofs} DOFs, {fmt} on {be.name} ({be.device_name}), mesh {t_mesh:.1f} s",
          flush=True)
    clock = Clock(system, be.synchronize)
    print(f"assembly {t_asm:.1f} s, preconditioner {t_pre:.1f} s, host peak "
          f"{host_peak_gib():.2f} GiB", flush=True)
    if args.compare_products and be.is_gpu:
        compare_products(ops, args.compare_products, be)
    receivers = farfield.receiver_directions({"plane": "xy", "count": 361})
    gm = case.solver.gmres
    print(f"{'method':>10} {'N':>4} {'width':>5} {'its':>7} {'rhs':>6} {'gmres':>8} {'farfld':>7} "
          f"{'sweep':>8} {'ratio':>6} {'gm/dir':>7} {'ops':>7} {'resid':>8} {'hostGiB':>7} "
          f"{'gpuGiB':>6}",
          flush=True)
    rows = []
    for method, device_solves in ((m, c) for c in args.device_solve_columns or [None]
                                  for m in args.method):
        if device_solves is not None:
            burton_miller.DEVICE_SOLVE_COLUMNS = device_solves
            print(f"sparse solves on the device from {device_solves} columns on", flush=True)
        base = None
        for count in args.counts:
            t, its, width, resid, mono, _far = sweep(method, system, formulation, space, k,
                                                     count, gm, be, receivers, clock)
            total = t_pre + t["rhs"] + t["gmres"] + t["far_field"]
            base = base if base is not None else total
            ratio = (t_asm + total) / (t_asm + base)
            its_s = f"{min(its)}-{max(its)}" if len(set(its)) > 1 else str(its[0])
            print(f"{method:>10} {count:>4} {width:>5} {its_s:>7} {t['rhs']:6.2f} {t['gmres']:8.2f} "
                  f"{t['far_field']:7.2f} {total:8.2f} {ratio:6.2f} {t['gmres'] / count:7.3f} "
                  f"{t['operators'] / max(t['matvec'], 1e-12):7.0%} "
                  f"{resid:8.1e} {host_peak_gib():7.2f} {gpu_pool_gib(be):6.2f}", flush=True)
            rows.append({"method": method, "count": count, "width": width, "iterations": its,
                         "dofs": space.n_dofs, "format": fmt, "backend": be.name,
                         "assembly_s": t_asm, "preconditioner_s": t_pre, **{f"{key}_s": v for key, v in t.items()},
                         "sweep_s": total, "ratio": ratio, "max_true_residual": resid,
                         "monostatic_ts_db": farfield.target_strength(mono).tolist()})
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
