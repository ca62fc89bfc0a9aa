"""Gather the far fields of a study's cases into one long table and plot it.

`results/<study>/ts.csv` has one row per (case, frequency, receiver): the case, its base case,
one column per varied parameter, then the farfield.csv columns. `results/<study>/ts_averages.csv`
does the same with the ts_averages.csv of its cases that have `averages` (wavescat.averages).
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .averages import AVERAGES_HEADER
from .case import Case
from .errors import WavescatError
from .files import atomic_path
from .plots import AngleAxis, ts_plots
from .solve.records import FARFIELD_HEADER, read_farfield_csv


def gather(cases: dict[str, Case], farfield_paths: dict[str, str | Path], out: str | Path) -> list[str]:
    """Write the long table; returns its header."""
    return _gather_tables(cases, farfield_paths, out, FARFIELD_HEADER)


def gather_averages(cases: dict[str, Case], averages_paths: dict[str, str | Path],
                    out: str | Path) -> list[str]:
    """results/<study>/ts_averages.csv: the columns case, base_case, the varied keys, then
    those of each case's ts_averages.csv (wavescat.averages); returns its header."""
    return _gather_tables(cases, averages_paths, out, AVERAGES_HEADER)


def _gather_tables(cases: dict[str, Case], paths: dict[str, str | Path], out: str | Path,
                   columns: list[str]) -> list[str]:
    """One row per row of each case's table (header `columns`), after the case, its base
    case and its values of the study's varied keys."""
    params = []
    for case in cases.values():
        for key in (case.study or {}).get("parameters", {}):
            if key not in params:
                params.append(key)
    header = ["case", "base_case"] + params + columns
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for name, case in cases.items():
            info = case.study or {}
            values = [info.get("parameters", {}).get(p, "") for p in params]
            with open(paths[name]) as src:
                rows = list(csv.reader(src))
            if not rows or rows[0] != columns:
                raise WavescatError(f"{str(paths[name])!r}: header is not {','.join(columns)!r}")
            for row in rows[1:]:
                writer.writerow([name, info.get("base", "")] + values + row)
    return header


def plot_study(cases: dict[str, Case], farfield_paths: dict, plot_dir: str | Path) -> list[Path]:
    """Per case: TS against angle (polar where the angles lie in a plane, and cartesian), and for
    sweeps TS against frequency and a map over angle and frequency (plots.ts_plots)."""
    plot_dir = Path(plot_dir)
    written = []
    for name, case in cases.items():
        table = read_farfield_csv(farfield_paths[name])
        freqs = np.unique(table["frequency_hz"])
        incidence = case.incidence
        if incidence.monostatic:  # one row per aspect angle
            axes = [AngleAxis(incidence.aspect_deg, incidence.plane, True)]
        else:
            rec = case.receivers
            axes = [AngleAxis(rec.angle_deg, rec.plane, False, d) for d in incidence.directions]
        ts = table["ts_db"].reshape(len(freqs), len(axes), -1)
        for j, axis in enumerate(axes):
            suffix = "" if len(axes) == 1 else f"_inc{j}"
            title = (name if len(axes) == 1 else f"{name}, incidence {j}") + (
                f"\n{case.description}" if case.description else "")
            written += ts_plots(axis, freqs, ts[:, j], None, title,
                                lambda kind, s=suffix: plot_dir / f"{name}_{kind}{s}.png")
    return written
