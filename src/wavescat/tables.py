"""Result tables of the contract (shared/CONTRACT.md), written atomically: a failed or
interrupted run never leaves a half-written file under results/."""
from __future__ import annotations

import contextlib
import csv
import os
import tempfile
from pathlib import Path

import numpy as np

from .farfield import Directions, target_strength

FARFIELD_HEADER = ["frequency_hz", "theta_deg", "phi_deg", "re_F", "im_F", "ts_db"]


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside `path`; move it into place only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_farfield_csv(path, frequencies_hz, receivers: Directions, far_fields) -> None:
    """One row per frequency and receiver, receivers in config order.

    far_fields: complex array (n_frequencies, n_receivers).
    """
    F = np.asarray(far_fields, dtype=complex).reshape(len(frequencies_hz), len(receivers.vectors))
    ts = target_strength(F)
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(FARFIELD_HEADER)
        for i, f in enumerate(frequencies_hz):
            for j in range(F.shape[1]):
                out.writerow([repr(float(f)), f"{receivers.theta_deg[j]:.10g}",
                              f"{receivers.phi_deg[j]:.10g}", repr(float(F[i, j].real)),
                              repr(float(F[i, j].imag)), f"{ts[i, j]:.6f}"])


def read_farfield_csv(path) -> dict:
    """Columns of a farfield.csv as arrays (frequency_hz, theta_deg, phi_deg, F, ts_db)."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    with open(path) as fh:
        header = fh.readline().strip().split(",")
    if header != FARFIELD_HEADER:
        raise ValueError(f"{path}: header {header} is not {FARFIELD_HEADER}")
    return {"frequency_hz": data[:, 0], "theta_deg": data[:, 1], "phi_deg": data[:, 2],
            "F": data[:, 3] + 1j * data[:, 4], "ts_db": data[:, 5]}
