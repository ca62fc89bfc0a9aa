"""Dense assembly speed of the Helmholtz double layer K and hypersingular W (P1 x P1).

Unit sphere meshed as a geodesic icosphere of frequency n (10 n^2 + 2 vertices: about 1k,
4k, 9k, 20k DOFs for n = 10, 20, 30, 45), k chosen for 10 elements per wavelength (mean
edge length h, wavelength 10 h). Prints wall time, matrix entries/s, kernel evaluations/s
(regular pairs x regular-rule points^2 + near pairs x near-rule points^2 + Sauter-Schwab
points of the touching pairs) and the quadrature orders. Timings exclude the one-off kernel
compilation (a small warm-up assembly first).

    python bench/bench_dense_assembly.py --backend cpu --max-dofs 5000
    python bench/bench_dense_assembly.py --backend gpu --precision double
    python bench/bench_dense_assembly.py --accuracy 10 [--peer double_layer:bempp-cl=K.npy ...]

Measured 2026-11-23 (quadrature: regular order 4, near order 10 below 2 diameters,
Sauter-Schwab (5, 5, 7)):
    NVIDIA H200, double   K 20,252 DOFs 1.21 s: 3.40e8 entries/s, 5.05e10 evaluations/s (25% of 2e11)
                          W 20,252 DOFs 1.00 s: 4.10e8 entries/s, 6.09e10 evaluations/s (30%)
    NVIDIA H200, single   K 4.26e8 entries/s, 6.33e10 evaluations/s (16% of 4e11); W 4.39e8
    2-core x86_64 (CPU)   K 4,002 DOFs 11.4-14.8 s: 1.08-1.40e6 entries/s; W 10.5-13.7 s: 1.17-1.53e6
                          (this machine drifts by up to 50% within minutes); --max-dofs 30000:
                          K 1,002 / 4,002 / 9,002 / 20,252 DOFs 1.38 / 13.2 / 58.1 / 291 s
                          (0.73 / 1.21 / 1.40 / 1.41e6 entries/s), W 0.95 / 12.0 / 54.1 / 244 s
                          (1.05 / 1.34 / 1.50 / 1.68e6 entries/s). A regular pair costs
                          about 0.45 us on one core (point pairs 0.07, kernel values 0.10, P1
                          contraction 0.10, the rest scatter and pair tests); two threads give only
                          1.3-1.5x here.
Against Bempp-cl 0.4.2 on the same machine, alternating rounds (bench_vs_bempp.py --singular-order 4,
4,002 DOFs; Bempp-cl's default quadrature, Numba, double):
    K  five rounds (two runs): Bempp-cl 56.2, 58.0, 59.0, 56.9, 56.1 s; wavescat 12.9, 12.2, 11.4,
       12.5, 10.9 s: 4.4x, 4.8x, 5.2x, 4.6x, 5.2x (median 4.8x); with Sauter-Schwab order 4 (the
       peer's order, still more accurate than the peer, below) 12.4, 9.6, 11.2, 11.4, 9.6 s:
       4.5x, 6.1x, 5.3x, 5.0x, 5.8x (median 5.3x)
    W  Bempp-cl 94.6 / 87.7 s; wavescat 10.7 / 10.7 s: 8.8x / 8.2x
Accuracy against a reference quadrature at 1,002 DOFs (--accuracy 10, --peer with Bempp-cl's
matrices; relative Frobenius / largest-entry / matrix-vector errors):
    K  wavescat 1.25e-6 / 4.25e-6 / 1.44e-6; singular order 4: 2.78e-6 / 1.73e-5 / 3.08e-6;
       Bempp-cl 8.71e-6 / 2.82e-5 / 9.57e-6
    W  wavescat 8.05e-7 / 3.87e-7 / 8.26e-7; Bempp-cl 1.66e-5 / 1.70e-5 / 1.70e-5
so both wavescat quadratures of K are more accurate than the peer's, the defaults 7x (K) and 20x (W).
A GPU variant that evaluated each unordered pair of a space with itself once and added the
swapped pair with transposed atomics was slower, so the GPU assembles every ordered pair:
    NVIDIA H100, double, K, 20k DOFs (--backend gpu --precision double): 1.27 s against 0.92 s
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from wavescat.backend import get_backend
from wavescat.bem.assembly import operators
from wavescat.bem.discretisation import quadrature, spaces
from wavescat.geometry.icosphere import _icosahedron
from wavescat.surface import SurfaceMesh

FREQUENCIES = {1000: 10, 4000: 20, 9000: 30, 20000: 45}
PEAK_EVALS = {"double": 2e11, "single": 4e11}  # exp(ikr)/r per second, H200 (issue 3)


def geodesic_sphere(n: int) -> SurfaceMesh:
    """Icosahedron with every face split into n^2 triangles, vertices projected to the unit sphere."""
    v, f = _icosahedron()
    i, j = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = i + j <= n
    i, j = i[keep], j[keep]
    local = {(a, b): c for c, (a, b) in enumerate(zip(i, j))}
    tri = [(local[a, b], local[a + 1, b], local[a, b + 1]) for a, b in zip(i, j) if a + b < n]
    tri += [(local[a + 1, b], local[a + 1, b + 1], local[a, b + 1]) for a, b in zip(i, j) if a + b < n - 1]
    tri = np.asarray(tri)
    p = (v[f[:, 0], None] * (1 - (i + j) / n)[None, :, None] + v[f[:, 1], None] * (i / n)[None, :, None]
         + v[f[:, 2], None] * (j / n)[None, :, None]).reshape(-1, 3)
    p /= np.linalg.norm(p, axis=1, keepdims=True)
    tris = (tri[None] + (np.arange(len(f)) * len(i))[:, None, None]).reshape(-1, 3)
    key = np.round(p * 1e9).astype(np.int64)
    _, first, inv = np.unique(key, axis=0, return_index=True, return_inverse=True)
    mesh = SurfaceMesh(p[first], inv.ravel()[tris])
    assert mesh.enclosed_volume > 0
    return mesh


def kernel_evaluations(ev: operators.EntryEvaluator) -> int:
    mesh = ev.test.mesh
    m = mesh.n_triangles
    ta, tb = operators.touching_pairs(mesh)
    na, _ = operators.near_pairs(mesh, ev.near_factor)
    kind, _, _ = quadrature.classify_pairs(mesh.triangles[ta], mesh.triangles[tb])
    sizes = np.diff(ev.rules.offsets)
    singular = int(sizes[kind].sum())
    nq_near = ev.near_a.phi.shape[0]
    return (m * m - len(ta) - len(na)) * ev.rule_points**2 + len(na) * nq_near**2 + singular


def run(n, name, backend, precision, orders):
    mesh = geodesic_sphere(n)
    space = spaces.p1(mesh)
    h = mesh.edge_lengths.mean()
    k = 2 * np.pi / (10 * h)
    ev = operators.EntryEvaluator(name, space, space, k, backend=backend, precision=precision,
                                  quadrature=orders)
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()
    t = time.perf_counter()
    a = ev.dense()
    if backend.is_gpu:
        backend.xp.cuda.Device().synchronize()
    dt = time.perf_counter() - t
    del a
    evals = kernel_evaluations(ev)
    return dict(dofs=space.n_dofs, elements=mesh.n_triangles, k=k, seconds=dt,
                entries=space.n_dofs**2 / dt, evals=evals / dt)


REFERENCE = quadrature.QuadratureOrders(regular=12, near=20, near_factor=4.0, singular=10)


def matrix_errors(a: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    """(Frobenius, largest-entry, matrix-vector) errors of a relative to ref: ||a - ref||_F /
    ||ref||_F, max |a - ref| / max |ref| and max over 8 random x of ||(a - ref) x|| / ||ref x||."""
    d = a - ref
    x = np.random.default_rng(0).standard_normal((ref.shape[1], 8))
    mv = np.linalg.norm(d @ x, axis=0) / np.linalg.norm(ref @ x, axis=0)
    return np.linalg.norm(d) / np.linalg.norm(ref), np.abs(d).max() / np.abs(ref).max(), mv.max()


def accuracy(n, name, orders, peers):
    """Errors of the matrix assembled with `orders` (and of peer matrices in the same vertex
    order, e.g. Bempp-cl's) against one assembled with the REFERENCE quadrature."""
    mesh = geodesic_sphere(n)
    space = spaces.p1(mesh)
    k = 2 * np.pi / (10 * mesh.edge_lengths.mean())
    cpu = get_backend("cpu")
    ref = operators.EntryEvaluator(name, space, space, k, backend=cpu, quadrature=REFERENCE).dense()
    got = operators.EntryEvaluator(name, space, space, k, backend=cpu, quadrature=orders).dense()
    rows = [("wavescat", got)] + [(label, np.load(path)) for label, path in peers]
    for label, a in rows:
        fro, ent, mv = matrix_errors(a, ref)
        print(f"{name:<14} {space.n_dofs:>6} {label:<12} {fro:>10.2e} {ent:>10.2e} {mv:>10.2e}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--precision", default="double", choices=["double", "single"])
    ap.add_argument("--max-dofs", type=int, default=None,
                    help="largest size to run (default: 5000 on the CPU, all on the GPU)")
    ap.add_argument("--operators", default="double_layer,hypersingular")
    ap.add_argument("--regular-order", type=int, default=quadrature.QuadratureOrders().regular)
    ap.add_argument("--singular-order", type=int, nargs="+", default=None, metavar="ORDER",
                    help="Sauter-Schwab points per dimension: one, or vertex edge coincident "
                         "(default: QuadratureOrders().singular)")
    ap.add_argument("--accuracy", type=int, default=None, metavar="N",
                    help="instead of timing: errors against the reference quadrature on the icosphere "
                         "of frequency N (10 N^2 + 2 DOFs)")
    ap.add_argument("--peer", action="append", default=[], metavar="OPERATOR:LABEL=FILE.npy",
                    help="with --accuracy: a peer's dense matrix of OPERATOR (vertex order) to compare too")
    args = ap.parse_args(argv)
    singular = quadrature.QuadratureOrders().singular if args.singular_order is None else (
        args.singular_order[0] if len(args.singular_order) == 1 else tuple(args.singular_order))
    orders = quadrature.QuadratureOrders(regular=args.regular_order, singular=singular)
    if args.accuracy:
        print(f"# reference quadrature {REFERENCE}; errors: relative Frobenius, largest entry, matrix-vector")
        print(f"{'operator':<14} {'dofs':>6} {'matrix':<12} {'Frobenius':>10} {'entry':>10} {'matvec':>10}")
        for name in args.operators.split(","):
            peers = [tuple(spec.split(":", 1)[1].split("=", 1)) for spec in args.peer
                     if spec.split(":", 1)[0] == name]
            accuracy(args.accuracy, name, orders, peers)
        return
    backend = get_backend(args.backend)
    max_dofs = args.max_dofs or (10**9 if backend.is_gpu else 5000)
    rule_pts = len(quadrature.triangle_rule(orders.regular)[1])
    near_pts = len(quadrature.triangle_rule(orders.near)[1])
    print(f"# device: {backend.device_name}; precision {args.precision}; quadrature: regular order "
          f"{orders.regular} ({rule_pts} points/triangle, {rule_pts**2} per pair), near order {orders.near} "
          f"({near_pts} points) below {orders.near_factor} x diameter, Sauter-Schwab {orders.singular} "
          f"points/dimension")
    print(f"{'operator':<14} {'dofs':>6} {'elements':>8} {'k':>7} {'seconds':>9} {'entries/s':>10} "
          f"{'evals/s':>10}" + (f" {'% peak':>7}" if backend.is_gpu else ""))
    for name in args.operators.split(","):
        run(3, name, backend, args.precision, orders)  # compile (Numba / NVRTC) outside the timing
        for target, n in FREQUENCIES.items():
            if 10 * n * n + 2 > max_dofs:
                continue
            r = run(n, name, backend, args.precision, orders)
            line = (f"{name:<14} {r['dofs']:>6} {r['elements']:>8} {r['k']:>7.2f} {r['seconds']:>9.3f} "
                    f"{r['entries']:>10.3e} {r['evals']:>10.3e}")
            if backend.is_gpu:
                line += f" {100 * r['evals'] / PEAK_EVALS[args.precision]:>6.1f}%"
            print(line, flush=True)


if __name__ == "__main__":
    main()
