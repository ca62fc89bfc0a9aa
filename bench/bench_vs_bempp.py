"""The CPU assembly against Bempp-cl on the same machine, in alternating rounds (this machine's
speed drifts by up to 50% within minutes, so a figure measured an hour apart is no peer).

Each round assembles the Helmholtz P1 operator on the icosphere of bench_dense_assembly
(frequency N, 10 N^2 + 2 DOFs, 10 elements per wavelength) once with Bempp-cl (a subprocess in
its own Python, its default quadrature: regular order 4, Sauter-Schwab order 4; Numba, double)
and once with wavescat (default quadrature, and optionally --singular-order), compilation
excluded on both sides, and prints the seconds and the ratio of the round.
Bempp-cl is not a dependency: install it in a separate environment, e.g.

    python -m venv /tmp/bempp && /tmp/bempp/bin/pip install bempp-cl==0.4.2
    python bench/bench_vs_bempp.py --bempp-python /tmp/bempp/bin/python --operators double_layer

How much more accurate than the peer a quadrature is: bench_dense_assembly.py --accuracy.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_dense_assembly import geodesic_sphere  # a sibling: run as a script, bench/ is on the path

from wavescat.backend import get_backend
from wavescat.bem.assembly import operators
from wavescat.bem.discretisation import quadrature, spaces

BEMPP = r"""
import sys, time
import numpy as np
import bempp_cl.api as bempp
def weak_form(path, op):
    d = np.load(path)
    grid = bempp.Grid(d["vertices"].T, d["triangles"].T)
    space = bempp.function_space(grid, "P", 1)
    fn = getattr(bempp.operators.boundary.helmholtz, op)
    return fn(space, space, space, float(d["k"]), device_interface="numba", precision="double").weak_form()
weak_form(sys.argv[1], sys.argv[3])  # compile
t = time.perf_counter()
weak_form(sys.argv[2], sys.argv[3])
print(time.perf_counter() - t)
"""


def sphere_file(folder: Path, n: int) -> Path:
    mesh = geodesic_sphere(n)
    path = folder / f"sphere_{n}.npz"
    np.savez(path, vertices=mesh.vertices, triangles=mesh.triangles, k=2 * np.pi / (10 * mesh.edge_lengths.mean()))
    return path


def wavescat_seconds(path: Path, name: str, orders) -> float:
    d = np.load(path)
    from wavescat.surface import SurfaceMesh

    space = spaces.p1(SurfaceMesh(d["vertices"], d["triangles"]))
    ev = operators.EntryEvaluator(name, space, space, float(d["k"]), backend=get_backend("cpu"), quadrature=orders)
    t = time.perf_counter()
    ev.dense()
    return time.perf_counter() - t


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bempp-python", required=True, help="a Python with bempp-cl installed")
    ap.add_argument("--operators", default="double_layer,hypersingular")
    ap.add_argument("--n", type=int, default=20, help="icosphere frequency (20: 4,002 DOFs)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--singular-order", type=int, default=None,
                    help="also time wavescat with this Sauter-Schwab order (e.g. 4, the peer's)")
    args = ap.parse_args(argv)
    configs = [("default", quadrature.QuadratureOrders())]
    if args.singular_order:
        configs.append((f"singular {args.singular_order}", quadrature.QuadratureOrders(singular=args.singular_order)))
    with tempfile.TemporaryDirectory() as tmp:
        small, big = sphere_file(Path(tmp), 3), sphere_file(Path(tmp), args.n)
        script = Path(tmp) / "bempp_time.py"
        script.write_text(BEMPP)
        dofs = len(np.load(big)["vertices"])
        print(f"# {dofs} DOFs; seconds per dense assembly; ratio = Bempp-cl / wavescat, same round")
        for name in args.operators.split(","):
            for _, orders in configs:
                wavescat_seconds(small, name, orders)  # compile
            for r in range(args.rounds):
                out = subprocess.run([args.bempp_python, str(script), str(small), str(big), name],
                                     capture_output=True, text=True, check=True)
                peer = float(out.stdout.strip().splitlines()[-1])
                line = f"{name:<14} round {r + 1}: Bempp-cl {peer:7.2f} s ({dofs**2 / peer:.2e} entries/s)"
                for label, orders in configs:
                    s = wavescat_seconds(big, name, orders)
                    line += f" | wavescat {label} {s:6.2f} s ({dofs**2 / s:.2e}/s) {peer / s:4.1f}x"
                print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
