"""Report plots of target strength (TS, dB re 1 m).

Angles in a plane `xy`, `xz` or `yz` follow the receiver convention of the config: angle a is the
direction cos(a) e1 + sin(a) e2, measured from the plane's first axis e1 towards its second e2.
Polar plots put 0 deg (e1) to the right and turn counter-clockwise, so e2 points up.
Bistatic plots: the angle is the receiver direction; an arrow shows the incident wave.
Monostatic plots: the angle is the aspect, the direction of the sonar seen from the body; the
wave travels along d = -xhat(aspect) and the echo is received at -d = xhat(aspect).

The plotting functions take arrays (TS per frequency and angle), `case_plots` takes the
solution dicts of `solve.records.read_solution` and writes every plot of one case. The
time-domain checks' plots (convergence studies, DG against BEM at probes) are at the end.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")  # files only: no display, and no GUI toolkit loaded
import matplotlib.pyplot as plt  # noqa: E402 - after the backend is chosen
from matplotlib.colors import ListedColormap, Normalize  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402

from ..files import atomic_path  # noqa: E402
from ..problem.farfield import PLANE_AXES, target_strength  # noqa: E402
from .notices import plot_note  # noqa: E402

AXIS_NAMES = "xyz"
DYNAMIC_RANGE_DB = (20.0, 80.0)  # dB from the floor to the top of TS plots: at least, at most
FLOOR_PERCENTILE = 1.0  # the floor lies below all values but this share (%): narrow nulls
                        # do not stretch the range, broad low structure stays above it
NEAR_FIELD_RANGE_DB = 40.0  # levels of a near-field map's scattered pressure
LEGEND_MAX = 8  # more frequencies than this get a colour bar instead of legend entries
EXACT_STYLE = dict(color="k", ls=(0, (3, 3)), lw=1.0)  # drawn over the computed curves


@dataclass(frozen=True)
class AngleAxis:
    """What the angle of a TS curve means.

    angle_deg None: directions not on a great circle, plotted against their index.
    incident_direction: bistatic only, the direction d the incident wave travels in.
    """
    angle_deg: np.ndarray | None
    plane: str | None
    monostatic: bool = False
    incident_direction: np.ndarray | None = None

    @property
    def polar(self) -> bool:
        return self.angle_deg is not None and self.plane in PLANE_AXES

    def axis_names(self) -> tuple[str, str]:
        i, j = PLANE_AXES[self.plane]
        return f"+{AXIS_NAMES[i]}", f"+{AXIS_NAMES[j]}"

    def convention(self) -> str:
        """One line: which plane, from which axis towards which."""
        e1, e2 = self.axis_names()
        return f"{self.plane} plane, 0\u00b0 = {e1}, 90\u00b0 = {e2} (counter-clockwise from {e1} towards {e2})"

    def label(self) -> str:
        if not self.polar:
            return ("aspect number (config order)" if self.monostatic
                    else "receiver number (config order)")
        e1, e2 = self.axis_names()
        what = "aspect angle = sonar direction" if self.monostatic else "receiver angle"
        return f"{what} (deg), {self.plane} plane: 0\u00b0 = {e1}, 90\u00b0 = {e2}"

    def meaning(self, marker: str = "") -> str:
        """A footnote saying what the angle is and where the incident wave comes from; marker:
        how the plot shows the incidence ("arrow"), if it does."""
        if self.monostatic:
            return ("Monostatic: angle = aspect, the direction of the sonar (source and receiver) "
                    "seen from the body;\nthe wave travels along d = \u2212x\u0302(aspect), "
                    "the echo is received at \u2212d." + self._plane_note())
        if not self.polar:
            return ("Bistatic: receivers in the order of receivers.directions_deg (their theta, phi "
                    "in farfield.csv). " + self.incidence_note(marker))
        return "Bistatic: angle = receiver direction. " + self.incidence_note(marker) + self._plane_note()

    def _plane_note(self) -> str:
        return f"\nAngles in the {self.convention()}." if self.polar else ""

    def incidence_note(self, marker: str = "") -> str:
        if self.incident_direction is None:
            return ""
        d = _fmt_vector(self.incident_direction)
        inc = self.incident_angle()
        if not self.polar:
            return f"Incident wave travels along d = {d}."
        if inc is None:
            return f"Incident wave travels along d = {d}, normal to the plot plane."
        if not self.in_plane():
            return (f"Incident wave{f' ({marker}: its projection)' if marker else ''} travels along "
                    f"d = {d}, {self.elevation():.3g}\u00b0 out of the plot plane: no receiver "
                    "here sees the exact backscatter (\u2212d).")
        return (f"Incident wave{f' ({marker})' if marker else ''} travels along d = {d}: "
                f"backscatter at {(inc + 180.0) % 360.0:.0f}\u00b0, forward scatter at {inc:.0f}\u00b0.")

    def _in_plane_part(self) -> float:
        i, j = PLANE_AXES[self.plane]
        d = np.asarray(self.incident_direction, float)
        return float(np.hypot(d[i], d[j]) / np.linalg.norm(d))

    def elevation(self) -> float:
        """Angle between d and the plot plane (deg)."""
        return float(np.degrees(np.arccos(np.clip(self._in_plane_part(), 0.0, 1.0))))

    def in_plane(self) -> bool:
        return self.incident_angle() is not None and self._in_plane_part() > 1.0 - 1e-9

    def incident_angle(self) -> float | None:
        """Plane angle of d's projection (direction of travel), None when d is normal to it."""
        if self.incident_direction is None or not self.polar or self._in_plane_part() < 1e-6:
            return None
        i, j = PLANE_AXES[self.plane]
        d = np.asarray(self.incident_direction, float)
        return float(np.degrees(np.arctan2(d[j], d[i])) % 360.0)

    def values(self, n: int) -> np.ndarray:
        return np.asarray(self.angle_deg, float) if self.angle_deg is not None else np.arange(n)


def _fmt_vector(v) -> str:
    return "(" + ", ".join(f"{x:.3g}" for x in np.asarray(v, float) + 0.0) + ")"


def _fmt_hz(f: float) -> str:
    return f"{f / 1e3:.4g} kHz" if f >= 1e4 else f"{f:.4g} Hz"


def _frequency_text(freqs) -> str:
    freqs = np.asarray(freqs, float)
    if len(freqs) == 1:
        return _fmt_hz(freqs[0])
    return f"{_fmt_hz(freqs.min())} \u2013 {_fmt_hz(freqs.max())} ({len(freqs)} frequencies)"


def _heading(title: str, what: str) -> str:
    """'<case>: <what>', then the rest of `title` (a description) on the lines below."""
    head, *rest = title.split("\n") if title else [""]
    return "\n".join([f"{head}: {what}" if head else what] + rest)


def _colours(n: int):
    if n == 1:
        return ["C0"]
    return plt.get_cmap("viridis")(np.linspace(0.0, 0.9, n))


def _frequency_colourbar(fig, ax, freqs) -> None:
    cmap = ListedColormap(plt.get_cmap("viridis")(np.linspace(0.0, 0.9, 256)))  # as _colours
    sm = plt.cm.ScalarMappable(norm=Normalize(min(freqs), max(freqs)), cmap=cmap)
    fig.colorbar(sm, ax=ax, label="frequency (Hz)", shrink=0.7, pad=0.12)


def _legend(ax, freqs, with_exact: bool, anchor) -> None:
    """Outside the axes, on the right: the frequencies (or BEM) and the exact series."""
    handles, labels = ax.get_legend_handles_labels()
    if with_exact:
        handles.append(Line2D([], [], **EXACT_STYLE))
        labels.append("exact series")
    if handles:
        ax.legend(handles, labels, loc="upper left", bbox_to_anchor=anchor, fontsize=8,
                  frameon=False, title="frequency" if 1 < len(freqs) <= LEGEND_MAX else None,
                  title_fontsize=8)


def _footnote(fig, text: str, width: int = 110) -> None:
    """Small grey notes under the plot, wrapped so that they never widen the figure."""
    lines = [w for line in text.splitlines() for w in textwrap.wrap(line, width) or [""]]
    fig.text(0.01, 0.0, "\n".join(lines), ha="left", va="top", fontsize=7.5, color="0.25")


def _warning_note(fig, text: str, width: int = 100) -> None:
    """A case's warnings (notices.plot_note) in red above the plot: a TS that a warning
    qualifies must not travel without it."""
    if text:
        fig.text(0.01, 1.0, "\n".join(textwrap.wrap(text, width)), ha="left", va="bottom",
                 fontsize=8, color="#b00000", weight="bold")


def _save(fig, path) -> Path:
    """Write the figure atomically (a stopped run leaves no half-written plot), close it."""
    path = Path(path)
    try:
        with atomic_path(path) as tmp:  # the format comes from the final name's suffix
            fig.savefig(tmp, dpi=130, bbox_inches="tight", pad_inches=0.15,
                        format=path.suffix.lstrip(".").lower() or "png")
    finally:
        plt.close(fig)
    return path


def db_limits(*arrays) -> tuple[float, float]:
    """(floor, top) of a TS plot, from the data: the top rounded up to a ring (5 or 10 dB) with
    at least 1 dB to spare, the floor a multiple of 10 dB below it under all values but the
    lowest FLOOR_PERCENTILE per cent, DYNAMIC_RANGE_DB apart at least and at most."""
    values = np.concatenate([np.ravel(a) for a in arrays if a is not None])
    values = values[np.isfinite(values)]
    high, low = values.max(), np.percentile(values, FLOOR_PERCENTILE)
    span = np.clip(10.0 * np.ceil((10.0 * np.ceil((high + 1.0) / 10.0) - low) / 10.0),
                   *DYNAMIC_RANGE_DB)
    step = radial_step(span)
    top = step * np.ceil((high + 1.0) / step)
    return float(top - span) + 0.0, float(top) + 0.0


def radial_step(span: float) -> float:
    """dB between the rings of a polar plot."""
    return 5.0 if span <= 20.0 else 10.0


def _label_angle(angle_deg, curves, avoid=()) -> float:
    """Where the radial tick labels go: the direction in which the highest curve is lowest,
    so the labels lie outside the curves; away from the incidence arrow and the 0/90/180/270
    tick labels."""
    order = np.argsort(angle_deg)
    a = np.asarray(angle_deg, float)[order]
    candidates = np.arange(7.5, 360.0, 15.0)
    if np.ptp(a) < 359.0:  # a sector: labels inside it
        inside = np.arange(a[0] + 7.5, a[-1], 15.0)
        candidates = inside if len(inside) else np.array([0.5 * (a[0] + a[-1])])
    highest = np.max([np.interp(candidates, a, np.asarray(c)[order], period=360.0)
                      for c in curves], axis=0)
    for x in avoid:
        gap = np.abs((candidates - x + 180.0) % 360.0 - 180.0)
        highest[gap < 20.0] = np.inf
    return float(candidates[np.argmin(highest)])


def _draw_incidence(ax, angle_deg: float) -> None:
    """An arrow outside the rim coming from the source direction (angle + 180), pointing along d."""
    src = np.radians(angle_deg + 180.0)
    u = np.array([np.cos(src), np.sin(src)])
    tail, head = 0.5 + 0.70 * u, 0.5 + 0.585 * u
    ax.annotate("", xy=head, xytext=tail, xycoords="axes fraction", textcoords="axes fraction",
                arrowprops=dict(arrowstyle="-|>,head_width=0.35,head_length=0.8", lw=2.2,
                                color="crimson"), annotation_clip=False)
    text = 0.5 + 0.76 * u
    ax.annotate("incident\nwave", xy=text, xycoords="axes fraction", ha="center", va="center",
                fontsize=8, color="crimson", annotation_clip=False)


def polar_ts(path, axis: AngleAxis, freqs, ts, exact=None, title="", warning="") -> Path:
    """TS (rows: frequencies) against the plane angle on a polar plot in dB, one curve per
    frequency (colour map), the exact series dashed over them where given."""
    freqs, ts = np.asarray(freqs, float), np.atleast_2d(ts)
    exact = None if exact is None else np.atleast_2d(exact)
    angle = axis.values(ts.shape[1])
    floor, top = db_limits(ts, exact)
    sector = axis.monostatic and np.ptp(angle) < 359.0
    fig = plt.figure(figsize=(7.0, 4.2 if sector and np.ptp(angle) <= 180.0 else 6.6),
                     layout="constrained")
    ax = fig.add_subplot(projection="polar")
    ax.set_theta_zero_location("E")
    ax.set_theta_direction(1)
    colours = _colours(len(freqs))
    for i, f in enumerate(freqs):
        label = None if len(freqs) > LEGEND_MAX else ("computed (BEM)" if len(freqs) == 1 else _fmt_hz(f))
        ax.plot(np.radians(angle), np.maximum(ts[i], floor), color=colours[i], lw=1.5, label=label)
        if exact is not None:
            ax.plot(np.radians(angle), np.maximum(exact[i], floor), **EXACT_STYLE)
    ax.set_rlim(floor, top)
    step = radial_step(top - floor)
    ticks = np.arange(top, floor - 1e-9, -step)[::-1]
    ax.set_rticks(ticks)
    ax.set_yticklabels([])
    inc = axis.incident_angle()
    avoid = [0.0, 90.0, 180.0, 270.0] + ([] if inc is None else [inc + 180.0])
    where = np.radians(_label_angle(angle, list(ts) + ([] if exact is None else list(exact)), avoid))
    for t in ticks[1:]:  # drawn over the curves, on white, so that they stay legible
        ax.text(where, t, f"{t + 0.0:g} dB", ha="center", va="center", fontsize=7.5, zorder=6,
                bbox=dict(facecolor="white", edgecolor="none", alpha=0.8, pad=0.6))
    e1, e2 = axis.axis_names()
    m1, m2 = (e.replace("+", "\u2212") for e in (e1, e2))
    cardinal = {0: f"\n{e1}", 90: f" {e2}", 180: f"\n{m1}", 270: f" {m2}"}
    lo = 30.0 * np.ceil(angle.min() / 30.0) if sector else 0.0
    grid = np.arange(lo, (angle.max() + 1e-9) if sector else 359.0, 30.0)
    ax.set_thetagrids(grid, [f"{g:g}\u00b0" + cardinal.get(int(g) % 360, "") for g in grid],
                      fontsize=8.5)
    ax.tick_params(axis="x", pad=6)
    ax.grid(alpha=0.45)
    if sector:  # a partial aspect sweep: show the sector swept
        ax.set_thetamin(angle.min())
        ax.set_thetamax(angle.max())
    elif inc is not None:
        _draw_incidence(ax, inc)
    kind = "monostatic" if axis.monostatic else "bistatic"
    ax.set_title(_heading(title, f"{kind} target strength, {_frequency_text(freqs)}")
                 + "\nradius: TS in dB re 1 m", fontsize=10, pad=28)
    if len(freqs) > LEGEND_MAX:
        _frequency_colourbar(fig, ax, freqs)
    _legend(ax, freqs, exact is not None, (1.08, 1.02))
    clipped = min(np.nanmin(ts), np.inf if exact is None else np.nanmin(exact)) < floor
    _footnote(fig, axis.meaning("arrow") + (f"\nValues below {floor:g} dB are drawn at {floor:g} dB."
                                     if clipped else ""))
    _warning_note(fig, warning)
    return _save(fig, path)


_DASHED_NOTE = "\nDashed red lines: the backscatter and forward-scatter angles."


def _mark_directions(ax, axis: AngleAxis) -> None:
    """Vertical lines at the backscatter and forward-scatter angles of a bistatic plot."""
    inc = axis.incident_angle()
    if axis.monostatic or not axis.in_plane():
        return
    for a, name in (((inc + 180.0) % 360.0, "backscatter"), (inc, "forward")):
        ax.axvline(a, color="crimson", lw=0.8, ls="--", alpha=0.7)
        ax.text(a, 1.01, name, transform=ax.get_xaxis_transform(), va="bottom", ha="center",
                fontsize=7.5, color="crimson")


def _angle_ticks(ax, angle) -> None:
    """Ticks every 45 deg over a wide angle range (matplotlib's own over a narrow one)."""
    if np.ptp(angle) > 90:
        ax.set_xticks(np.arange(45 * np.ceil(angle.min() / 45), angle.max() + 1e-9, 45))


def ts_against_angle(path, axis: AngleAxis, freqs, ts, exact=None, title="",
                     warning="") -> Path:
    """TS against angle on cartesian axes, one curve per frequency; with the exact series, the
    dB difference in a panel below."""
    freqs, ts = np.asarray(freqs, float), np.atleast_2d(ts)
    exact = None if exact is None else np.atleast_2d(exact)
    angle = axis.values(ts.shape[1])
    if exact is None:
        fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
    else:
        fig, (ax, err) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, layout="constrained",
                                      gridspec_kw={"height_ratios": [3, 1.2]})
    colours = _colours(len(freqs))
    for i, f in enumerate(freqs):
        label = None if len(freqs) > LEGEND_MAX else ("computed (BEM)" if len(freqs) == 1 else _fmt_hz(f))
        ax.plot(angle, ts[i], color=colours[i], lw=1.5, label=label,
                marker="o" if len(angle) < 20 else None, ms=4)
        if exact is not None:
            ax.plot(angle, exact[i], **EXACT_STYLE)
            err.plot(angle, ts[i] - exact[i], color=colours[i], lw=1.0)
    ax.set_ylabel("TS (dB re 1 m)")
    kind = "monostatic" if axis.monostatic else "bistatic"
    ax.set_title(_heading(title, f"{kind} target strength, {_frequency_text(freqs)}"),
                 fontsize=10, pad=14)
    ax.grid(alpha=0.3)
    _mark_directions(ax, axis)
    if axis.polar:
        _angle_ticks(ax, angle)
        if np.ptp(angle) > 0:
            ax.set_xlim(angle.min(), angle.max())
    if len(freqs) > LEGEND_MAX:
        _frequency_colourbar(fig, ax, freqs)
    _legend(ax, freqs, exact is not None, (1.01, 1.0))
    bottom = ax
    if exact is not None:
        err.axhline(0.0, color="k", lw=0.6)
        err.set_ylabel("computed \u2212 exact (dB)")
        err.grid(alpha=0.3)
        bottom = err
    bottom.set_xlabel(axis.label())
    _footnote(fig, axis.meaning() + _DASHED_NOTE * (axis.in_plane() and not axis.monostatic))
    _warning_note(fig, warning)
    return _save(fig, path)


def ts_map(path, axis: AngleAxis, freqs, ts, title="", warning="") -> Path:
    """TS over angle (x) and frequency (y) as a colour map."""
    freqs, ts = np.asarray(freqs, float), np.atleast_2d(ts)
    angle = axis.values(ts.shape[1])
    fig, ax = plt.subplots(figsize=(8, 4.6), layout="constrained")
    floor, top = db_limits(ts)
    mesh = ax.pcolormesh(angle, freqs, ts, shading="nearest", cmap="viridis", vmin=floor,
                         vmax=top)
    fig.colorbar(mesh, ax=ax, label="TS (dB re 1 m)", extend="min")
    ax.set_ylabel("frequency (Hz)")
    if len(freqs) <= 12:  # one band per computed frequency: label each
        ax.set_yticks(freqs, [f"{f:.4g}" for f in freqs])
    ax.set_xlabel(axis.label())
    if axis.polar:
        _angle_ticks(ax, angle)
    _mark_directions(ax, axis)
    kind = "monostatic" if axis.monostatic else "bistatic"
    ax.set_title(_heading(title, f"{kind} target strength, {_frequency_text(freqs)}"),
                 fontsize=10, pad=14)
    _footnote(fig, axis.meaning() + _DASHED_NOTE * (axis.in_plane() and not axis.monostatic))
    _warning_note(fig, warning)
    return _save(fig, path)


def ts_against_frequency(path, freqs, curves: dict, title="", note="", warning="") -> Path:
    """TS against frequency: {label: (ts, exact or None)}, one line (markers) per label."""
    fig, ax = plt.subplots(figsize=(8, 4.4), layout="constrained")
    for i, (label, (ts, exact)) in enumerate(curves.items()):
        ax.plot(freqs, ts, "-", marker="os^Dv<>p"[i % 8], color=f"C{i}", ms=5, lw=1.5,
                label=f"{label} (BEM)" if exact is not None else label)
        if exact is not None:
            ax.plot(freqs, exact, ls=(0, (2, 2)), color=f"C{i}", lw=1.2, label=f"{label} (exact series)")
    ax.set_xlabel("frequency (Hz)")
    ax.set_ylabel("TS (dB re 1 m)")
    ax.set_title(_heading(title, "target strength against frequency"), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if note:
        _footnote(fig, note)
    _warning_note(fig, warning)
    return _save(fig, path)


def ts_against_parameter(path, key: str, lines: dict, title="") -> Path:
    """TS against a study's varied parameter `key`: {(direction, line label): [(value, ts)]},
    one panel per direction (backscatter, forward, an aspect), one line per label."""
    directions = list(dict.fromkeys(d for d, _ in lines))
    labels = list(dict.fromkeys(label for _, label in lines))
    fig, axes = plt.subplots(1, len(directions), figsize=(4.6 * len(directions) + 2.4, 4.2),
                             layout="constrained", squeeze=False, sharey=True)
    for ax, direction in zip(axes[0], directions):
        for i, label in enumerate(labels):
            points = sorted(lines.get((direction, label), []))
            if points:
                x, y = zip(*points)
                ax.plot(x, y, "-", marker="os^Dv<>p"[i % 8], color=f"C{i % 10}", ms=5, lw=1.5,
                        label=label)
        ax.set_title(direction, fontsize=9)
        ax.set_xlabel(key)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TS (dB re 1 m)")
    axes[0][-1].legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=8, frameon=False)
    fig.suptitle(_heading(title, f"target strength against {key}"), fontsize=10)
    return _save(fig, path)


def _nearest(angles, target) -> int:
    return int(np.argmin(np.abs((np.asarray(angles) - target + 180.0) % 360.0 - 180.0)))


def frequency_curves(axis: AngleAxis, ts, exact=None) -> tuple[dict, str]:
    """The directions worth following over frequency: backscatter and forward scatter of a
    bistatic case, a few aspects of a monostatic sweep; with the footnote naming them."""
    ts = np.atleast_2d(ts)
    exact = None if exact is None else np.atleast_2d(exact)
    angle = axis.values(ts.shape[1])
    picks = {}
    inc = axis.incident_angle()
    if ts.shape[1] == 1:  # the one direction there is
        what = "aspect" if axis.monostatic else "receiver"
        picks[f"{what} {angle[0]:g}\u00b0" if axis.polar else f"{what} 0"] = 0
    elif axis.monostatic and axis.polar:
        wanted = [a for a in (0.0, 45.0, 90.0, 180.0) if np.min(np.abs(angle - a)) <= 1.0]
        for a in wanted or [angle[0], angle[len(angle) // 2], angle[-1]]:
            picks[f"aspect {angle[_nearest(angle, a)]:g}\u00b0"] = _nearest(angle, a)
    elif inc is not None:
        near = "" if axis.in_plane() else "nearest "  # d out of the plane: its projection
        for name, a in ((f"{near}backscatter", inc + 180.0), (f"{near}forward", inc)):
            j = _nearest(angle, a % 360.0)
            picks[f"{name} ({angle[j]:g}\u00b0)"] = j
    else:
        picks[f"receiver {0}"] = 0
    curves = {name: (ts[:, j], None if exact is None else exact[:, j]) for name, j in picks.items()}
    return curves, axis.meaning()


def _axis_of(solution: dict, incidence: int = 0) -> AngleAxis:
    if solution["monostatic"]:
        return AngleAxis(np.asarray(solution["aspect_deg"], float), solution.get("aspect_plane"), True)
    rec = solution["receivers"]
    return AngleAxis(rec.get("angle_deg"), rec.get("plane"), False,
                     np.asarray(solution["incident_directions"][incidence], float))


def _exact_rows(reference, solution, count: int):
    """The reference far field of one solution's frequency, (rows, count), or None if it does not fit."""
    if reference is None:
        return None
    sel = np.isclose(reference["frequency_hz"], solution["frequency_hz"], rtol=1e-9, atol=0)
    values = (reference["re_F"] + 1j * reference["im_F"])[sel]
    if len(values) == 0 or len(values) % count:
        return None
    return target_strength(values).reshape(-1, count)


def ts_plots(axis: AngleAxis, freqs, ts, exact, title: str, path_of, warning="") -> list[Path]:
    """The plots of one TS table (rows: frequencies): polar where the angles lie in a plane,
    cartesian (per frequency with its error panel against `exact` where given), TS against
    frequency and a frequency-angle map for sweeps; a sweep of one direction only against
    frequency. path_of(kind) names each file, kind one of ts_polar, ts, ts_vs_exact_f<i>,
    ts_vs_frequency, ts_map."""
    freqs, ts = np.asarray(freqs, float), np.atleast_2d(ts)
    several_angles, sweep = ts.shape[1] > 1, len(freqs) > 1
    out = []
    if axis.polar and several_angles:
        out.append(polar_ts(path_of("ts_polar"), axis, freqs, ts, exact, title, warning))
    if exact is not None and several_angles:  # per frequency, each with its own error panel
        for i, f in enumerate(freqs):
            out.append(ts_against_angle(path_of(f"ts_vs_exact_f{i}"), axis, [f], ts[i:i + 1],
                                        exact[i:i + 1], title, warning))
    if several_angles and (exact is None or sweep) or not (several_angles or sweep):
        out.append(ts_against_angle(path_of("ts"), axis, freqs, ts, exact, title, warning))
    if sweep:
        curves, note = frequency_curves(axis, ts, exact)
        out.append(ts_against_frequency(path_of("ts_vs_frequency"), freqs, curves, title, note,
                                        warning))
    if sweep and several_angles:
        out.append(ts_map(path_of("ts_map"), axis, freqs, ts, title, warning))
    return out


def case_plots(solutions, folder, name: str = "", reference=None, description: str = "",
               warnings=()) -> list[Path]:
    """Every plot of one case (solution dicts sorted by frequency), per incidence direction;
    with the exact series and the dB error where `reference` (read_farfield_csv) fits; the
    case's description under the titles; its `warnings` (summary.json's) in red above each
    plot (notices.plot_note)."""

    warning = plot_note(warnings)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)  # the rule's output directory
    freqs = np.array([s["frequency_hz"] for s in solutions])
    first = solutions[0]
    if first["monostatic"]:
        series = [np.atleast_2d(target_strength(s["monostatic_far_field"])) for s in solutions]
        prefix, n_inc = "monostatic", 1
    else:
        series = [target_strength(s["far_field"]) for s in solutions]  # (incidences, receivers)
        prefix, n_inc = "bistatic", first["far_field"].shape[0]
    count = series[0].shape[1]
    exact_all = [_exact_rows(reference, s, count) for s in solutions]
    if any(e is None or len(e) != n_inc for e in exact_all):
        exact_all = None
    out = []
    for j in range(n_inc):
        suffix = "" if n_inc == 1 else f"_inc{j}"

        def path_of(kind, suffix=suffix):
            return folder / f"{prefix + '_' if kind.startswith('ts_polar') or kind == 'ts' else ''}{kind}{suffix}.png"

        exact = None if exact_all is None else np.array([e[j] for e in exact_all])
        title = (name if n_inc == 1 else f"{name}, incidence {j}") + (f"\n{description}" if description else "")
        out += ts_plots(_axis_of(first, j), freqs, np.array([s[j] for s in series]), exact, title,
                        path_of, warning)
    return out


def near_field_map(path, field, title="", warning="") -> Path:
    """A near-field map (wavescat.results.near_field.NearField) in two panels: the real part of the
    total pressure (a snapshot of the wave at t = 0) and the level of the scattered pressure
    in dB re the incident wave's amplitude; the body's inside in grey, the incident wave's
    direction (its projection on the plane) as an arrow."""
    g = field.grid
    i, j = PLANE_AXES[g.plane]
    extent = [g.u[0], g.u[-1], g.v[0], g.v[-1]]
    width = 11.5 if np.ptp(g.u) >= np.ptp(g.v) else 9.0
    height = 0.42 * width * np.ptp(g.v) / np.ptp(g.u) + 1.2
    fig, axes = plt.subplots(1, 2, figsize=(width, height), layout="constrained")
    real = field.total.real
    top = np.nanpercentile(np.abs(real), 99.5) if np.isfinite(real).any() else 1.0
    with np.errstate(divide="ignore", invalid="ignore"):
        level = 20 * np.log10(np.abs(field.scattered))
    high = 5.0 * np.ceil(np.nanmax(level) / 5.0) if np.isfinite(level).any() else 0.0
    panels = ((real, "RdBu_r", -top, top, "Re p_total (Pa), snapshot at t = 0"),
              (level, "viridis", high - NEAR_FIELD_RANGE_DB, high,
               "|p_scattered| (dB re incident amplitude)"))
    for ax, (data, name, lo, hi, label) in zip(axes, panels):
        cmap = plt.get_cmap(name).copy()
        cmap.set_bad("0.55")
        image = ax.imshow(np.ma.masked_invalid(data), origin="lower", extent=extent, cmap=cmap,
                          vmin=lo, vmax=hi, interpolation="nearest")
        fig.colorbar(image, ax=ax, label=label, shrink=0.85,
                     extend="both" if name == "RdBu_r" else "min")
        ax.set_xlabel(f"{AXIS_NAMES[i]} (m)")
        ax.set_ylabel(f"{AXIS_NAMES[j]} (m)")
        ax.set_aspect("equal")
        d = np.asarray(field.direction, float)[[i, j]]
        if np.hypot(*d) > 1e-6:  # the incident wave's direction of travel, in the plane
            u = 0.06 * d / np.hypot(*d)
            ax.annotate("", xy=(0.1 + u[0], 0.88 + u[1]), xytext=(0.1 - u[0], 0.88 - u[1]),
                        xycoords="axes fraction",
                        arrowprops=dict(arrowstyle="-|>", lw=2.0, color="crimson"))
    where = f"{g.plane} plane at {AXIS_NAMES[3 - i - j]} = {g.offset:.4g} m"
    fig.suptitle(_heading(title, f"near field at {_fmt_hz(field.frequency_hz)}, {where}"),
                 fontsize=10)
    _footnote(fig, f"Unit incident plane wave exp(ik d.x) along d = {_fmt_vector(field.direction)} "
                   "(arrow: its direction in the plane), time dependence exp(\u2212i\u03c9t). "
                   "Grey: inside the body, or within a tenth of an element of its surface (not "
                   "computed).")
    _warning_note(fig, warning)
    return _save(fig, path)


def convergence(path, series: dict, xlabel: str, ylabel: str, title: str) -> Path:
    """Log-log error against h, one panel per entry of `series` = {panel title: [(label,
    h, error, slope)]}: each curve solid with its expected slope dotted through its finest
    point (the time-domain verifiers' studies)."""
    fig, axes = plt.subplots(1, len(series), figsize=(5.5 * len(series), 4.5), squeeze=False)
    for ax, (name, curves) in zip(axes[0], series.items()):
        for label, h, e, slope in curves:
            h, e = np.asarray(h, float), np.asarray(e, float)
            line, = ax.loglog(h, e, "o-", label=label)
            ax.loglog(h, e[-1] * (h / h[-1]) ** slope, ":", color=line.get_color(), lw=1,
                      label=f"slope {slope}")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(name, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return _save(fig, path)


def probe_comparison(path, points, p_dg, p_bem, err: float, label: str = "DG") -> Path:
    """Real and imaginary scattered pressure at each probe: DG (time domain; `label`: the
    time-domain method) against BEM."""
    fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
    i = np.arange(len(p_dg))
    for f, name in ((np.real, "Re"), (np.imag, "Im")):
        line, = ax.plot(i, f(p_bem), "x", ms=8, label=f"{name} p, BEM (frequency domain)")
        ax.plot(i, f(p_dg), "o", color=line.get_color(), mfc="none", ms=8,
                label=f"{name} p, {label} (time domain, DFT)")
    ax.set_xticks(i, [f"{k}\n({x:.3g}, {y:.3g}, {z:.3g})" for k, (x, y, z) in enumerate(points)],
                  fontsize=7.5)
    ax.set_xlabel("probe number (x, y, z in m)")
    ax.set_ylabel("scattered pressure\n(per unit incident amplitude)")
    ax.axhline(0.0, color="k", lw=0.6)
    ax.set_title(f"Scattered pressure at the probes: {label} time domain against BEM\n"
                 f"relative L2 difference {err:.3f}", fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def band_comparison(path, freqs, points, p_dg, p_bem, errors, tolerance=None, label="DG") -> Path:
    """DG (one pulse run; `label`: the time-domain method) against BEM over a band: |p| at each
    probe against frequency, and the relative L2 difference over the probes at each frequency
    (with the tolerance)."""
    freqs = np.asarray(freqs, float)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(11, 4.3), layout="constrained")
    colours = _colours(len(points))
    for i, (x, y, z) in enumerate(points):
        ax.plot(freqs, np.abs(p_bem[:, i]), "-", color=colours[i], lw=1.2,
                label=f"probe {i} ({x:.3g}, {y:.3g}, {z:.3g})")
        ax.plot(freqs, np.abs(p_dg[:, i]), "o", color=colours[i], mfc="none", ms=6)
    ax.plot([], [], "k-", label="BEM (frequency domain)")
    ax.plot([], [], "ko", mfc="none", label=f"{label} (time domain, one pulse, DFT)")
    ax.set_xlabel("frequency (Hz)")
    ax.set_ylabel("|scattered pressure|\n(per unit incident amplitude)")
    ax.set_title("Scattered pressure at the probes over the band", fontsize=10)
    ax.legend(fontsize=7, frameon=False)
    ax.grid(alpha=0.3)
    bx.plot(freqs, errors, "o-", color="C3", label=f"{label} vs BEM")
    if tolerance is not None:
        bx.axhline(tolerance, color="k", ls="--", lw=1.0, label=f"tolerance {tolerance:g}")
    bx.set_ylim(0.0, max(max(errors), tolerance or 0.0) * 1.15)
    bx.set_xlabel("frequency (Hz)")
    bx.set_ylabel("relative L2 difference over the probes")
    bx.set_title(f"Difference of {label} and BEM (largest {max(errors):.3f})", fontsize=10)
    bx.legend(fontsize=8, frameon=False)
    bx.grid(alpha=0.3)
    return _save(fig, path)


# --- averages (issue 26): TS averaged over bands and tilt distributions ---------------------

def averages_plot(path, rows, freqs, aspect_deg, plane, ts, tilts=(), title="") -> Path:
    """The rows of ts_averages.csv (wavescat.results.averages.averages_table) drawn beside the
    TS they average, `ts` (frequencies, aspects) in dB: left, per tilt distribution, the
    tilt-averaged TS against frequency (band-and-tilt averages as bars over their band; dashed:
    the TS at the mean tilt's aspect); right, per band, the band-averaged TS against aspect
    (dashed: the TS at the frequency nearest the band's centre). `tilts`: the
    wavescat.results.averages.Tilt of the rows, in their order."""
    freqs, aspect_deg, ts = (np.asarray(freqs, float), np.asarray(aspect_deg, float),
                             np.asarray(ts, float))
    bands = list(dict.fromkeys((r["band_center_hz"], r["band_width_hz"]) for r in rows
                               if r["average"] == "band"))
    panels = [p for p, n in (("tilt", tilts), ("band", bands)) if n]
    axis = AngleAxis(aspect_deg, plane, True)
    if len(freqs) == 1 and tilts:  # a frequency axis of one point says nothing: TS against tilt
        fig = plt.figure(figsize=(6.8, 5.6), layout="constrained")
        _tilt_at_one_frequency(fig, rows, freqs[0], aspect_deg, axis, ts[0], tilts)
        fig.suptitle(_heading(title, "TS averages"), fontsize=10)
        _footnote(fig, AVERAGES_NOTE)
        return _save(fig, path)
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 4.6),
                             layout="constrained", squeeze=False)
    for ax, panel in zip(axes[0], panels):
        if panel == "tilt":
            for i, tilt in enumerate(tilts):
                mean, std = tilt.mean_deg, tilt.std_deg
                mine = [r for r in rows if (r["tilt_mean_deg"], r["tilt_std_deg"]) == (mean, std)]
                x = [r["f_low_hz"] for r in mine if r["average"] == "tilt"]
                y = [r["ts_db"] for r in mine if r["average"] == "tilt"]
                ax.plot(x, y, "-o", color=f"C{i}", ms=3, label=f"tilt N({mean:g}, {std:g})\u00b0")
                at = _nearest(aspect_deg, float(tilt.aspect_of(mean)))
                ax.plot(freqs, ts[:, at], ls=(0, (3, 3)), color=f"C{i}", lw=1.0,
                        label=f"aspect {aspect_deg[at]:g}\u00b0 (mean tilt) alone")
                for r in mine:
                    if r["average"] == "band_tilt":
                        ax.plot([r["f_low_hz"], r["f_high_hz"]], [r["ts_db"]] * 2, color=f"C{i}",
                                lw=4, alpha=0.6, solid_capstyle="butt")
            ax.set_xlabel("frequency (Hz)")
            ax.set_title("averaged over tilt (bars: and over a band)", fontsize=9)
        else:
            for i, (center, width) in enumerate(bands):
                mine = [r for r in rows if r["average"] == "band"
                        and (r["band_center_hz"], r["band_width_hz"]) == (center, width)]
                ax.plot([r["aspect_low_deg"] for r in mine], [r["ts_db"] for r in mine], "-",
                        color=f"C{i}", lw=1.6,
                        label=f"band {_fmt_hz(center - width / 2)} \u2013 "
                              f"{_fmt_hz(center + width / 2)}")
                near = int(np.argmin(np.abs(freqs - center)))
                ax.plot(aspect_deg, ts[near], ls=(0, (3, 3)), color=f"C{i}", lw=1.0,
                        label=f"{_fmt_hz(freqs[near])} alone")
            ax.set_xlabel(axis.label())
            ax.set_title("averaged over a band", fontsize=9)
        ax.set_ylabel("TS (dB re 1 m)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7.5, frameon=False)
    fig.suptitle(_heading(title, "TS averages"), fontsize=10)
    _footnote(fig, AVERAGES_NOTE)
    return _save(fig, path)


AVERAGES_NOTE = ("Averages are taken in the linear backscattering cross-section sigma_bs = "
                 "|F|^2, then converted: TS = 10 log10 sigma_bs. Tilt t is at aspect zero_deg "
                 "+ sign * t (config averages.tilt).")


def _tilt_at_one_frequency(fig, rows, freq, aspect_deg, axis, ts, tilts) -> None:
    """Above, the TS at the one frequency against tilt, each tilt average a level across the
    tilts it weighs; below, on the same axis, each tilt distribution's pdf (normal, truncated
    to the sweep). Against aspect where the tilts map to aspects differently."""
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=[3, 1])
    maps = {(t.zero_deg, t.sign) for t in tilts}
    shared = len(maps) == 1  # one tilt axis for all
    zero, sign = maps.pop() if shared else (0.0, 1)
    x = (np.asarray(aspect_deg, float) - zero) / sign  # tilt, or the aspect itself
    order = np.argsort(x)
    top.plot(x[order], ts[order], "-", color="k", lw=1.4, label=f"TS at {_fmt_hz(freq)}")
    grid = np.linspace(x.min(), x.max(), 400)
    for i, tilt in enumerate(tilts):
        (row,) = [r for r in rows if r["average"] == "tilt"
                  and (r["tilt_mean_deg"], r["tilt_std_deg"]) == (tilt.mean_deg, tilt.std_deg)]
        # the level spans the angles the average weighs
        ends = (np.array([row["aspect_low_deg"], row["aspect_high_deg"]]) - zero) / sign
        top.plot(sorted(ends), [row["ts_db"]] * 2, color=f"C{i}", lw=2.2,
                 label=f"averaged over tilt N({tilt.mean_deg:g}, {tilt.std_deg:g})\u00b0: "
                       f"{row['ts_db']:.1f} dB")
        t = grid if shared else (grid - tilt.zero_deg) / tilt.sign
        pdf = tilt.pdf(t)
        pdf /= np.trapezoid(pdf, grid)  # truncated to the sweep, as the average's weights
        bottom.fill_between(grid, pdf, color=f"C{i}", alpha=0.25, lw=0)
        bottom.plot(grid, pdf, color=f"C{i}", lw=1.2)
    top.set_ylabel("TS (dB re 1 m)")
    top.set_title(f"TS against tilt at {_fmt_hz(freq)}, and its averages over tilt", fontsize=9)
    top.legend(fontsize=7.5, frameon=False)
    bottom.set_ylabel("tilt pdf (1/deg)")
    bottom.set_ylim(bottom=0)
    bottom.set_xlabel(f"tilt (deg): aspect = {zero:g} {'+' if sign > 0 else '-'} tilt"
                      if shared else axis.label())
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
