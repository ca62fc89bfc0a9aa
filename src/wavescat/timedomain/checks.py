"""Pass/fail checks of the verification runs: observed convergence orders and the DG-vs-BEM
agreement. A run that misses them fails (its job and the `verify` target), saying which
order, pair or probe set missed by how much."""
from __future__ import annotations

import math

import numpy as np

from ..errors import SolverError


def order_shortfalls(series: dict, expected: dict, tolerance: float, floor: float = 0.0) -> list[str]:
    """Messages for each series whose order observed on its finest pair of grids lies more
    than `tolerance` below the expected one. series: name -> (h list, error list), coarse to
    fine; errors below `floor` (round-off of the precision) are left out of the pair."""
    misses = []
    for name, (h, err) in series.items():
        kept = [(a, e) for a, e in zip(h, err) if e > floor]
        if len(kept) < 2:
            continue  # every fine grid at round-off: nothing left to measure
        (h0, e0), (h1, e1) = kept[-2], kept[-1]
        observed = math.log(e0 / e1) / math.log(h0 / h1)
        if not observed >= expected[name] - tolerance:
            misses.append(f"{name}: observed order {observed:.2f} from h = {h0:.4g} to {h1:.4g}, "
                          f"expected {expected[name]:g} (at least {expected[name] - tolerance:g})")
    return misses


def round_off_floor(precision: str) -> float:
    """Errors below this are round-off of the precision, not discretisation error."""
    return 1e3 * float(np.finfo(np.float32 if precision == "single" else np.float64).eps)


def require(misses: list[str], what: str) -> None:
    if misses:
        raise SolverError(f"{what} check failed: " + "; ".join(misses))
