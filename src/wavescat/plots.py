"""Plots of target strength: polar TS against receiver angle, TS against frequency,
monostatic TS against aspect angle, and computed against exact with the dB error.
Each function takes solution dicts (solve.records.read_solution) and writes one PNG."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .farfield import target_strength


def _pyplot():
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    return plt


def _receiver_angles(solution):
    rec = solution["receivers"]
    if "angle_deg" in rec:
        return rec["angle_deg"], f"angle in the {rec.get('plane', '')} plane (deg)"
    return np.arange(len(rec["theta_deg"])), "receiver index"


def _save(fig, path):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def polar_ts(solutions, path, title=""):
    """Bistatic TS around the receiver circle, one curve per frequency (first incidence)."""
    plt = _pyplot()
    angles, label = _receiver_angles(solutions[0])
    fig = plt.figure(figsize=(6.5, 6.5))
    ax = fig.add_subplot(projection="polar" if "angle_deg" in solutions[0]["receivers"] else None)
    x = np.radians(angles) if "angle_deg" in solutions[0]["receivers"] else angles
    for s in solutions:
        ax.plot(x, target_strength(s["far_field"][0]), lw=1.2, label=f"{s['frequency_hz']:.6g} Hz")
    ax.set_title(title or f"bistatic target strength (dB re 1 m) vs {label}", fontsize=10)
    ax.legend(loc="lower left", fontsize=8, bbox_to_anchor=(-0.1, -0.12))
    return _save(fig, path)


def ts_vs_frequency(solutions, path, title=""):
    """Backscatter (receiver nearest -d) and forward TS against frequency, first incidence."""
    plt = _pyplot()
    freqs = np.array([s["frequency_hz"] for s in solutions])
    fig, ax = plt.subplots(figsize=(7, 4))
    for name, sign in (("backscatter", -1.0), ("forward", 1.0)):
        ts = []
        for s in solutions:
            d = s["incident_directions"][0]
            r = int(np.argmax(s["receivers"]["directions"] @ (sign * d)))
            ts.append(target_strength(s["far_field"][0, r]))
        ax.plot(freqs, ts, "o-", label=name)
    ax.set_xlabel("frequency (Hz)")
    ax.set_ylabel("TS (dB re 1 m)")
    ax.set_title(title or "target strength against frequency", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    return _save(fig, path)


def monostatic_vs_aspect(solutions, path, title=""):
    """Monostatic TS against aspect angle, one curve per frequency."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for s in solutions:
        ax.plot(s["aspect_deg"], target_strength(s["monostatic_far_field"]),
                label=f"{s['frequency_hz']:.6g} Hz")
    ax.set_xlabel(f"aspect angle in the {solutions[0].get('aspect_plane', '')} plane (deg)")
    ax.set_ylabel("monostatic TS (dB re 1 m)")
    ax.set_title(title or "monostatic target strength", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def computed_vs_exact(solution, exact_far_field, path, title=""):
    """Computed and exact TS against receiver angle, with the dB difference below."""
    plt = _pyplot()
    angles, label = _receiver_angles(solution)
    computed = target_strength(solution["far_field"][0])
    exact = target_strength(exact_far_field)
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True,
                                  gridspec_kw={"height_ratios": [3, 1]})
    ax.plot(angles, exact, "k-", lw=2, alpha=0.5, label="exact series")
    ax.plot(angles, computed, "r--", lw=1.2, label="BEM (OSRC Burton-Miller, P1)")
    ax.set_ylabel("TS (dB re 1 m)")
    ax.set_title(title or f"{solution['frequency_hz']:.6g} Hz, ka-scaled sphere", fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    ax2.plot(angles, computed - exact, "b-", lw=1)
    ax2.set_ylabel("error (dB)")
    ax2.set_xlabel(label)
    ax2.grid(alpha=0.3)
    return _save(fig, path)
