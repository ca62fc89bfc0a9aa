"""bench/bench_hermite_vs_dg.py: both methods converge on the rigid-box mode on its grids, and
the cost at a target error is interpolated between the two grids that bracket it."""
import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[2] / "bench" / "bench_hermite_vs_dg.py"
spec = importlib.util.spec_from_file_location("bench_hermite_vs_dg", SCRIPT)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def test_cost_at_a_target_error_interpolates_in_log_log():
    rows = [{"error": 1.0, "dofs": 1e2, "seconds": 0.1, "steps": 5},
            {"error": 1e-1, "dofs": 1e3, "seconds": 1.0, "steps": 10},
            {"error": 1e-3, "dofs": 1e5, "seconds": 100.0, "steps": 100}]
    hit = bench.at_accuracy(rows, 1e-2)
    assert hit["dofs"] == pytest.approx(1e4) and hit["seconds"] == pytest.approx(10.0)
    assert hit["steps"] == pytest.approx(10**1.5)
    assert bench.at_accuracy(rows, 1e-4) is None and bench.at_accuracy(rows, 2.0) is None


def test_both_methods_converge_on_the_cavity_mode():
    rows = bench.main(["--mode", "2", "--periods", "1", "--grids", "2", "--dg-orders", "2",
                       "--hermite-degrees", "2", "--targets", "0.1"])
    for method in ("DG", "Hermite"):
        runs = [r for r in rows if r["method"] == method]
        assert len(runs) == 2 and runs[1]["dofs"] > runs[0]["dofs"]
        assert runs[1]["error"] < 0.5 * runs[0]["error"] < 0.5
