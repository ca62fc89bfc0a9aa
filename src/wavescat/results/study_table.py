"""Gather the far fields of a study's cases into one long table and plot it.

`results/<study>/ts.csv` has one row per (case, frequency, receiver): the case, its base case,
one column per varied parameter, then the farfield.csv columns. `results/<study>/ts_averages.csv`
does the same with the ts_averages.csv of its cases that have `averages`
(wavescat.results.averages).
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import WavescatError
from ..files import atomic_path
from ..solve.records import FARFIELD_HEADER, read_farfield_csv
from .averages import AVERAGES_HEADER
from .plots import AngleAxis, frequency_curves, ts_against_parameter, ts_plots

if TYPE_CHECKING:  # annotations only: configuration/ sits above results/ (it reads averages)
    from ..configuration.case import Case


def gather(cases: dict[str, Case], farfield_paths: dict[str, str | Path], out: str | Path) -> list[str]:
    """Write the long table; returns its header."""
    return _gather_tables(cases, farfield_paths, out, FARFIELD_HEADER)


def gather_averages(cases: dict[str, Case], averages_paths: dict[str, str | Path],
                    out: str | Path) -> list[str]:
    """results/<study>/ts_averages.csv: the columns case, base_case, the varied keys, then
    those of each case's ts_averages.csv (wavescat.results.averages); returns its header."""
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


def _case_table(case: Case, path) -> tuple[np.ndarray, list, np.ndarray]:
    """(frequencies, AngleAxis per incidence direction, TS (frequencies, directions, angles))
    of one case's farfield.csv."""
    table = read_farfield_csv(path)
    freqs = np.unique(table["frequency_hz"])
    incidence = case.incidence
    if incidence.monostatic:  # one row per aspect angle
        axes = [AngleAxis(incidence.aspect_deg, incidence.plane, True)]
    else:
        rec = case.receivers
        axes = [AngleAxis(rec.angle_deg, rec.plane, False, d) for d in incidence.directions]
    return freqs, axes, table["ts_db"].reshape(len(freqs), len(axes), -1)


def plot_study(cases: dict[str, Case], farfield_paths: dict, plot_dir: str | Path) -> list[Path]:
    """Per case: TS against angle (polar where the angles lie in a plane, and cartesian), and for
    sweeps TS against frequency and a map over angle and frequency (plots.ts_plots); across the
    cases, TS against each varied parameter that takes numbers (parameter_plots)."""
    plot_dir = Path(plot_dir)
    written = []
    for name, case in cases.items():
        freqs, axes, ts = _case_table(case, farfield_paths[name])
        for j, axis in enumerate(axes):
            suffix = "" if len(axes) == 1 else f"_inc{j}"
            title = (name if len(axes) == 1 else f"{name}, incidence {j}") + (
                f"\n{case.description}" if case.description else "")
            written += ts_plots(axis, freqs, ts[:, j], None, title,
                                lambda kind, s=suffix: plot_dir / f"{name}_{kind}{s}.png")
    return written + parameter_plots(cases, farfield_paths, plot_dir)


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def parameter_plots(cases: dict[str, Case], farfield_paths: dict, plot_dir) -> list[Path]:
    """For each varied key whose values are numbers (a radius, a sound speed; not a list such
    as semi_axes), `ts_vs_<key>.png`: TS against the key's value at the directions
    plots.frequency_curves follows (backscatter and forward, or a few aspects; the first
    incidence direction), one line per frequency and combination of the other varied keys."""
    params = {name: (case.study or {}).get("parameters", {}) for name, case in cases.items()}
    keys = list(dict.fromkeys(k for p in params.values() for k in p))
    keys = [k for k in keys if all(_number(p.get(k)) is not None for p in params.values())
            and len({p[k] for p in params.values()}) > 1]
    varying = [k for k in dict.fromkeys(k for p in params.values() for k in p)
               if len({repr(p.get(k)) for p in params.values()}) > 1]
    tables = {name: _case_table(case, farfield_paths[name]) for name, case in cases.items()}
    written = []
    for key in keys:
        lines = {}  # (direction label, line label) -> [(value, ts)]
        for name, (freqs, axes, ts) in tables.items():
            others = ", ".join(f"{k} = {params[name].get(k)}" for k in varying if k != key)
            for i, f in enumerate(freqs):
                curves, _ = frequency_curves(axes[0], ts[i:i + 1, 0])
                label = f"{f:.6g} Hz" + (f", {others}" if others else "")
                for direction, (values, _) in curves.items():
                    lines.setdefault((direction, label), []).append(
                        (_number(params[name][key]), float(values[0])))
        study = (next(iter(cases.values())).study or {}).get("name", "")
        written.append(ts_against_parameter(Path(plot_dir) / f"ts_vs_{_file_part(key)}.png",
                                            key, lines, study))
    return written


def _file_part(key: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
