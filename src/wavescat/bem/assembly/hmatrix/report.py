"""What an assembly reports: compression, memory, ranks, time split, evaluation rates."""
from __future__ import annotations

import logging
import resource

import numpy as np

log = logging.getLogger("wavescat.hmatrix")


def rank_histogram(ranks: np.ndarray) -> dict:
    """Counts of admissible blocks per rank range ("0", "1-2", "3-4", "5-8", ...)."""
    ranks = np.asarray(ranks, dtype=np.int64)
    edges = [0, 1, 3, 5, 9, 17, 33, 65, 129, 257, 513, 1 << 30]
    hist = {}
    for lo, hi in zip(edges[:-1], edges[1:]):
        c = int(np.sum((ranks >= lo) & (ranks < hi)))
        if c:
            hist[str(lo) if hi == lo + 1 else f"{lo}-{hi - 1}"] = c
    return hist


def host_peak_bytes() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def fit_exponent(n, values) -> float:
    """Least-squares slope of log(values) against log(n): values ~ n^slope."""
    return float(np.polyfit(np.log(np.asarray(n, float)), np.log(np.asarray(values, float)), 1)[0])


def log_report(rep: dict) -> None:
    times = rep["time_s"]
    log.info("H-matrix %s %dx%d on %s: compression %.4f, %.2f GiB device (%.2f GiB in use in "
             "all) / %.2f GiB host, "
             "time trees %.2fs singular %.2fs near %.2fs aca %.2fs transfers %.2fs total %.2fs, "
             "%.3g entries/s", rep["operator"], *rep["shape"], rep["backend"]["device"],
             rep["compression_ratio"], rep["device_bytes"] / 2**30,
             rep.get("device_pool_used_bytes", 0) / 2**30, rep["host_bytes"] / 2**30,
             times["trees"], times.get("singular_quadrature", 0.0), times["near_field"],
             times["aca"], times["transfers"], times["total"], rep["entries_per_s"])
