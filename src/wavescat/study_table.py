"""Gather the far fields of a study's cases into one long table and plot it.

`results/<study>/ts.csv` has one row per (case, frequency, receiver): the case, its base case,
one column per varied parameter, then the farfield.csv columns.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from .farfield import receiver_directions
from .files import atomic_path
from .solve.records import FARFIELD_HEADER, read_farfield_csv


def gather(cases: dict[str, dict], farfield_paths: dict[str, str | Path], out: str | Path) -> list[str]:
    """Write the long table; returns its header."""
    params = []
    for case in cases.values():
        for key in case.get("study", {}).get("parameters", {}):
            if key not in params:
                params.append(key)
    header = ["case", "base_case"] + params + FARFIELD_HEADER
    with atomic_path(out) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        for name, case in cases.items():
            info = case.get("study", {})
            values = [info.get("parameters", {}).get(p, "") for p in params]
            with open(farfield_paths[name]) as src:
                rows = list(csv.reader(src))[1:]
            for row in rows:
                writer.writerow([name, info.get("base", "")] + values + row)
    return header


def plot_study(cases: dict[str, dict], farfield_paths: dict, plot_dir: str | Path) -> list[Path]:
    """Per case: a heat map of TS over (receiver angle, frequency) and polar TS per frequency."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plot_dir = Path(plot_dir)
    plot_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, case in cases.items():
        table = read_farfield_csv(farfield_paths[name])
        freqs = np.unique(table["frequency_hz"])
        rec = receiver_directions(case["receivers"])
        angle = rec.angle_deg if rec.angle_deg is not None else np.arange(len(rec.vectors))
        ts = table["ts_db"].reshape(len(freqs), -1)
        fig, ax = plt.subplots(figsize=(8, 4.5))
        if len(freqs) > 1:
            mesh = ax.pcolormesh(angle, freqs, ts, shading="nearest", cmap="viridis")
            ax.set_ylabel("frequency (Hz)")
            fig.colorbar(mesh, ax=ax, label="TS (dB re 1 m)")
        else:
            ax.plot(angle, ts[0])
            ax.set_ylabel("TS (dB re 1 m)")
        ax.set_xlabel(f"receiver angle in the {rec.plane} plane (deg)" if rec.plane
                      else "receiver index")
        ax.set_title(name, fontsize=9)
        fig.tight_layout()
        path = plot_dir / f"{name}_ts_map.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
        if rec.plane:
            fig = plt.figure(figsize=(5.5, 5.5))
            ax = fig.add_subplot(projection="polar")
            for i, f in enumerate(freqs):
                ax.plot(np.radians(angle), ts[i], label=f"{f:g} Hz")
            ax.set_title(f"{name}: TS (dB re 1 m)", fontsize=9)
            ax.legend(loc="lower left", fontsize=7)
            path = plot_dir / f"{name}_ts_polar.png"
            fig.savefig(path, dpi=110)
            plt.close(fig)
            written.append(path)
    return written
