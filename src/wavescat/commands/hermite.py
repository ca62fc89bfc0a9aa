"""`wavescat verify-hermite`: the Hermite-Taylor convergence study (files and plot only).

Advection rows go to the contract file (--csv, header m,q,cells,h,error_max,observed_order);
acoustics rows, with the same header, to the file beside it named <stem>_acoustics.csv.
`cells` is the number of grid cells (n^3), `h` the largest grid spacing.
"""
from __future__ import annotations

import csv
import logging
import math
from pathlib import Path

from ..backend import get_backend
from ..files import atomic_path
from ..results.plots import convergence
from ..timedomain.checks import order_shortfalls, require, round_off_floor
from ..timedomain.hermite import convergence as study  # (its study and grids: tests replace them)
from ..timedomain.hermite.convergence import HEADER

log = logging.getLogger(__name__)
# observed order on the finest pair of grids: at least 2m + 1 - this
ORDER_TOLERANCE = 0.5


def register(subparsers) -> None:
    p = subparsers.add_parser("verify-hermite", help="Hermite-Taylor convergence study (m = 1, 2, 3)",
                              description=__doc__)
    p.add_argument("--csv", required=True, type=Path, help="advection table (contract header)")
    p.add_argument("--plot", required=True, type=Path, help="log-log plot of error against h")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "gpu"))
    p.add_argument("--precision", default="double", choices=("double", "single"))
    p.add_argument("--quick", action="store_true", help="coarser grids only (smoke test)")
    p.set_defaults(func=run)


def acoustics_path(csv_path: Path) -> Path:
    return csv_path.with_name(f"{csv_path.stem}_acoustics{csv_path.suffix}")


def write_table(path: Path, rows) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(HEADER)
        for r in rows:
            w.writerow([r["m"], r["q"], r["cells"], f"{r['h']:.8g}", f"{r['error_max']:.6e}",
                        "" if math.isnan(r["observed_order"]) else f"{r['observed_order']:.3f}"])


def plot_study(path: Path, tables: dict, title: str) -> None:
    series = {}
    for name, rows in tables.items():
        series[name] = [(f"m = {m} (q = {rs[0]['q']})", [r["h"] for r in rs],
                         [r["error_max"] for r in rs], 2 * m + 1)
                        for m in sorted({r["m"] for r in rows})
                        for rs in [[r for r in rows if r["m"] == m]]]
    convergence(path, series, "grid spacing h (largest axis)",
                "max relative error after one period", title)


def run(args) -> int:
    backend = get_backend(args.backend)
    grids = study.QUICK_GRIDS if args.quick else study.GRIDS
    log.info("verify-hermite on %s (%s): cells per axis %s, the %s grids%s", backend.name,
             backend.reason, grids, "quick" if args.quick else "full",
             "" if backend.is_gpu else " (about a minute on 2 cores: no smaller CPU sizes needed)")
    tables = {eq: study.convergence_study(eq, quick=args.quick, backend=backend.name,
                                          precision=args.precision)
              for eq in ("advection", "acoustics")}
    write_table(args.csv, tables["advection"])
    write_table(acoustics_path(args.csv), tables["acoustics"])
    plot_study(args.plot, tables, f"Hermite-Taylor convergence ({backend.name}: "
                                  f"{backend.device_name}, {args.precision})")
    for eq, rows in tables.items():
        for r in rows:
            print(f"{eq:9s} m={r['m']} q={r['q']:2d} cells={r['cells']:6d} h={r['h']:.4f} "
                  f"error={r['error_max']:.3e} order={r['observed_order']:.2f}")
    series, expected = {}, {}
    for eq, rows in tables.items():
        for m in sorted({r["m"] for r in rows}):
            sel = [r for r in rows if r["m"] == m]
            series[f"{eq} m = {m}"] = ([r["h"] for r in sel], [r["error_max"] for r in sel])
            expected[f"{eq} m = {m}"] = 2 * m + 1
    require(order_shortfalls(series, expected, ORDER_TOLERANCE, round_off_floor(args.precision)),
            "Hermite-Taylor convergence")
    print(f"verify-hermite: every degree m converges at 2m + 1 within {ORDER_TOLERANCE:g}")
    return 0
