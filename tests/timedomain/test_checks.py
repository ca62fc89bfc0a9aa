"""Pass/fail rules of the verification runs: observed orders on the finest pair of grids."""
import numpy as np
import pytest

from wavescat.errors import SolverError
from wavescat.timedomain.checks import order_shortfalls, require, round_off_floor


def _series(order, h=(0.4, 0.2, 0.1), c=3.0):
    return list(h), [c * x**order for x in h]


def test_exact_power_laws_pass_or_miss_by_their_order():
    series = {"N = 2": _series(3.0), "N = 3": _series(3.2)}
    assert order_shortfalls(series, {"N = 2": 3, "N = 3": 4}, 0.5) == [
        "N = 3: observed order 3.20 from h = 0.2 to 0.1, expected 4 (at least 3.5)"]
    assert order_shortfalls(series, {"N = 2": 3, "N = 3": 4}, 0.8) == []
    # faster than expected (superconvergence) is never a miss
    assert order_shortfalls({"m = 1": _series(4.0)}, {"m = 1": 3}, 0.5) == []


def test_round_off_errors_leave_the_pair():
    """The finest error 5e-5 is round-off in single precision (floor ~1.2e-4): the order comes
    from the pair before it; in double precision the same numbers are a miss."""
    series = {"m = 2": ([0.4, 0.2, 0.1], [1e-2, 1e-2 / 2**5, 5e-5])}
    assert round_off_floor("single") == pytest.approx(1e3 * np.finfo(np.float32).eps)
    assert order_shortfalls(series, {"m = 2": 5}, 0.5, round_off_floor("single")) == []
    assert order_shortfalls(series, {"m = 2": 5}, 0.5, round_off_floor("double")) == [
        "m = 2: observed order 2.64 from h = 0.2 to 0.1, expected 5 (at least 4.5)"]
    assert order_shortfalls({"m = 3": ([0.25, 0.125], [1e-5, 1e-6])}, {"m = 3": 7}, 0.5,
                            round_off_floor("single")) == []  # nothing above round-off


def test_require_raises_with_every_miss():
    require([], "DG convergence")
    with pytest.raises(SolverError, match="DG convergence check failed: a; b"):
        require(["a", "b"], "DG convergence")
