"""The far-field table of the contract (docs/conventions.md): its header and a reader
(`solve.records` writes it, through `files.atomic_path`)."""
from __future__ import annotations

import numpy as np

from .files import atomic_path  # noqa: F401  (kept importable from here)

FARFIELD_HEADER = ["frequency_hz", "theta_deg", "phi_deg", "re_F", "im_F", "ts_db"]


def read_farfield_csv(path) -> dict:
    """Columns of a farfield.csv as arrays (frequency_hz, theta_deg, phi_deg, F, ts_db)."""
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    with open(path) as fh:
        header = fh.readline().strip().split(",")
    if header != FARFIELD_HEADER:
        raise ValueError(f"{path}: header {header} is not {FARFIELD_HEADER}")
    return {"frequency_hz": data[:, 0], "theta_deg": data[:, 1], "phi_deg": data[:, 2],
            "F": data[:, 3] + 1j * data[:, 4], "ts_db": data[:, 5]}
