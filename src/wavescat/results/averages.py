"""Target strength averaged as fisheries acoustics reports it: over a band of frequencies (a
pulse's bandwidth) and over a distribution of tilt angles.

Every average is taken in the linear backscattering cross-section sigma_bs = |F|^2 (m^2, F the
monostatic far field in metres) and only then converted: TS = 10 log10(sigma_bs / 1 m^2) dB.

Band (`Band(center_hz, width_hz)`): the case's frequencies f_i within
[center - width/2, center + width/2] (ends included, to a relative 1e-9), at least 3 distinct
ones. The average is the trapezoid rule in frequency with uniform weight over the frequencies
found, divided by the span they cover:
    <sigma>_band = (1 / (f_last - f_first)) * trapz(sigma(f_i), f_i),
so a sigma linear in f averages to its value at (f_first + f_last) / 2 exactly.

Tilt (`Tilt(mean_deg, std_deg, zero_deg, sign)`): the tilt t maps to the aspect angle of the
monostatic sweep (`incident.aspect`) as
    aspect = zero_deg + sign * t          (degrees; sign +1 or -1).
The defaults zero_deg = 90, sign = -1 make t the head-up pitch of a body lying along +x (head
at +x, back towards +z) seen by a sonar above it in the `xz` plane: t = 0 is dorsal incidence
(aspect 90 deg, the sonar at +z), t = +10 deg puts the sonar 10 deg towards the head (aspect
80 deg). The tilt pdf is a normal N(mean, std) truncated to the swept aspects and
renormalised: weights w_i = q_i p(a_i) / sum_j q_j p(a_j), with q_i the trapezoid weights of
the sweep's angles a_i, so a constant sigma averages to itself exactly. A sweep over the whole
circle (stop - start >= 360) is periodic: its repeated end angle gets no weight and the pdf is
taken of the angle wrapped to within 180 deg of the mean. A sweep must cover the mean
+- `cover_std` standard deviations and have at least `points_per_std` angles per standard
deviation; otherwise `AveragesError` says so.

The combined average (band and tilt) uses the product of the two weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import WavescatError
from ..problem.farfield import directions_to_angles

# Columns of results/<case>/ts_averages.csv (docs/conventions.md); a study prepends
# case, base_case and its varied keys.
AVERAGES_HEADER = ["average", "band_center_hz", "band_width_hz", "f_low_hz", "f_high_hz",
                   "frequencies", "tilt_mean_deg", "tilt_std_deg", "aspect_low_deg",
                   "aspect_high_deg", "aspects", "sigma_bs_m2", "ts_db"]
# the optional keys of a tilt distribution (config `averages.tilt`)
TILT_DEFAULTS = {"zero_deg": 90.0, "sign": -1, "cover_std": 2.0, "points_per_std": 3.0}
SIGMA_FLOOR = 1e-30  # m^2: TS floor of -300 dB, as farfield.target_strength
FULL_CIRCLE_DEG = 360.0


class AveragesError(WavescatError):
    """An average that the case's frequencies or aspects cannot support."""


@dataclass(frozen=True)
class Band:
    center_hz: float
    width_hz: float

    @property
    def low_hz(self) -> float:
        return self.center_hz - 0.5 * self.width_hz

    @property
    def high_hz(self) -> float:
        return self.center_hz + 0.5 * self.width_hz


@dataclass(frozen=True)
class Tilt:
    mean_deg: float
    std_deg: float
    zero_deg: float = 90.0
    sign: int = -1
    cover_std: float = 2.0
    points_per_std: float = 3.0

    def aspect_of(self, tilt_deg):
        """The aspect angle (deg) of tilt angle(s) `tilt_deg`."""
        return self.zero_deg + self.sign * np.asarray(tilt_deg, float)

    def pdf(self, tilt_deg) -> np.ndarray:
        """The normal density N(mean, std) of tilt(s) `tilt_deg` (1/deg), not truncated."""
        z = (np.asarray(tilt_deg, float) - self.mean_deg) / self.std_deg
        return np.exp(-0.5 * z * z) / (self.std_deg * math.sqrt(2 * math.pi))

    def describe(self) -> str:
        return f"tilt N({self.mean_deg:g}, {self.std_deg:g}) deg"


def sigma_bs(far_field) -> np.ndarray:
    """Backscattering cross-section |F|^2 (m^2) of a monostatic far field F (m)."""
    return np.abs(np.asarray(far_field)) ** 2


def ts_of_sigma(sigma) -> np.ndarray:
    """TS = 10 log10(sigma_bs / 1 m^2) dB (floor -300 dB)."""
    return 10.0 * np.log10(np.maximum(np.asarray(sigma, float), SIGMA_FLOOR))


def trapezoid_weights(x) -> np.ndarray:
    """Weights q with sum(q * g(x)) = trapz(g, x) for samples x in any order (sorted inside)."""
    x = np.asarray(x, float)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    q_sorted = np.zeros(len(x))
    if len(x) > 1:
        dx = np.diff(xs)
        q_sorted[:-1] += 0.5 * dx
        q_sorted[1:] += 0.5 * dx
    q = np.empty(len(x))
    q[order] = q_sorted
    return q


def _in_band(f, band: Band) -> np.ndarray:
    tol = 1e-9 * max(abs(band.high_hz), 1.0)
    return (f >= band.low_hz - tol) & (f <= band.high_hz + tol)


def band_weights(frequencies_hz, band: Band) -> np.ndarray:
    """Normalised weights (summing to 1) over `frequencies_hz`: the trapezoid rule over the
    frequencies within the band, zero outside it."""
    f = np.asarray(frequencies_hz, float)
    inside = _in_band(f, band)
    distinct = np.unique(f[inside])
    if len(distinct) < 3:
        found = ", ".join(f"{x:g}" for x in distinct) or "none"
        raise AveragesError(
            f"band {band.low_hz:g}-{band.high_hz:g} Hz (center {band.center_hz:g}, width "
            f"{band.width_hz:g}) holds {len(distinct)} of the case's frequencies ({found}); a "
            "band average needs at least 3: add frequencies in the band (e.g. a sweep "
            "{start, stop, count}) or widen it")
    w = np.zeros(len(f))
    w[inside] = trapezoid_weights(f[inside])
    return w / (distinct[-1] - distinct[0])


def _wrap(angle_deg):
    """Angles to [-180, 180)."""
    return (np.asarray(angle_deg, float) + 180.0) % 360.0 - 180.0


def _tilt_parts(aspect_deg, tilt: Tilt) -> tuple[np.ndarray, np.ndarray]:
    """Checks, then (q, delta): the quadrature weights of the sweep's angles (zero for a
    repeated angle of a whole-circle sweep) and each angle's offset from the tilt's mean
    aspect (deg)."""
    a = np.asarray(aspect_deg, float)
    if tilt.std_deg <= 0:
        raise AveragesError(f"{tilt.describe()}: the standard deviation must be > 0")
    if len(a) < 2:
        raise AveragesError(f"{tilt.describe()}: the aspect sweep has {len(a)} angle; a tilt "
                            "average needs a sweep over the tilt range")
    lo, hi = float(a.min()), float(a.max())
    step = (hi - lo) / (len(a) - 1)  # the sweep's spacing (linspace)
    center = float(tilt.aspect_of(tilt.mean_deg))
    half = tilt.cover_std * tilt.std_deg
    if step <= 0 or tilt.std_deg / step < tilt.points_per_std - 1e-9:
        raise AveragesError(
            f"{tilt.describe()}: the aspect sweep's step of {step:g} deg gives "
            f"{tilt.std_deg / step if step > 0 else 0:.3g} angles per standard deviation, fewer "
            f"than {tilt.points_per_std:g}: raise incident.aspect.count (or lower "
            "points_per_std)")
    if hi - lo >= FULL_CIRCLE_DEG - 1e-9:  # periodic: the pdf of the wrapped angle
        if half > 180.0 + 1e-9:
            raise AveragesError(f"{tilt.describe()}: mean +- {tilt.cover_std:g} std spans more "
                                "than the whole circle")
        q = np.full(len(a), step)
        key = np.round(a % FULL_CIRCLE_DEG, 9)  # a repeated angle (0 and 360) counts once
        _, first = np.unique(key, return_index=True)
        q[np.setdiff1d(np.arange(len(a)), first)] = 0.0
        return q, _wrap(a - center)
    # the sweep's range, with the tilt's aspect moved by whole turns to lie in it
    center += FULL_CIRCLE_DEG * round((0.5 * (lo + hi) - center) / FULL_CIRCLE_DEG)
    tol = 1e-9 * max(1.0, abs(lo), abs(hi))
    if center - half < lo - tol or center + half > hi + tol:
        raise AveragesError(
            f"{tilt.describe()} is at aspect {center:g} +- {half:g} deg (mean +- "
            f"{tilt.cover_std:g} std; aspect = {tilt.zero_deg:g} {'+' if tilt.sign > 0 else '-'}"
            f" tilt), outside the swept aspects {lo:g} to {hi:g} deg: widen "
            "incident.aspect (or lower cover_std)")
    return trapezoid_weights(a), a - center


def tilt_weights(aspect_deg, tilt: Tilt) -> np.ndarray:
    """Normalised weights (summing to 1) over the sweep's aspect angles: the normal pdf of the
    tilt, truncated to the sweep and renormalised, times the trapezoid weights of the angles."""
    q, delta = _tilt_parts(aspect_deg, tilt)
    w = q * np.exp(-0.5 * (delta / tilt.std_deg) ** 2)
    return w / w.sum()


def band_average(sigma, frequencies_hz, band: Band) -> np.ndarray:
    """<sigma>_band over axis 0 of `sigma` (frequencies first)."""
    return np.tensordot(band_weights(frequencies_hz, band), np.asarray(sigma, float), axes=(0, 0))


def tilt_average(sigma, aspect_deg, tilt: Tilt) -> np.ndarray:
    """<sigma>_tilt over the last axis of `sigma` (aspect angles last)."""
    return np.asarray(sigma, float) @ tilt_weights(aspect_deg, tilt)


def _span(values, used) -> tuple[float, float, int]:
    """Lowest, highest and number of distinct values where `used`."""
    v = np.asarray(values, float)[np.asarray(used, bool)]
    return float(v.min()), float(v.max()), int(len(np.unique(v)))


def averages_table(sigma, frequencies_hz, aspect_deg, bands=(), tilts=()) -> list[dict]:
    """Rows of ts_averages.csv (dicts keyed by AVERAGES_HEADER) from sigma_bs (m^2) on the grid
    (frequencies, aspects): per band and aspect (`band`), per tilt and frequency (`tilt`), per
    band and tilt (`band_tilt`). Empty cells are None."""
    sigma = np.asarray(sigma, float)
    f, a = np.asarray(frequencies_hz, float), np.asarray(aspect_deg, float)
    if sigma.shape != (len(f), len(a)):
        raise AveragesError(f"sigma_bs of shape {sigma.shape} is not (frequencies, aspects) = "
                            f"({len(f)}, {len(a)})")
    wf = {b: band_weights(f, b) for b in bands}
    wa = {t: tilt_weights(a, t) for t in tilts}
    f_spans = {b: _span(f, _in_band(f, b)) for b in bands}
    a_spans = {t: _span(a, _tilt_parts(a, t)[0] > 0) for t in tilts}
    rows = []

    def row(kind, band=None, fspan=None, tilt=None, aspan=None, value=0.0):
        rows.append({
            "average": kind,
            "band_center_hz": band.center_hz if band else None,
            "band_width_hz": band.width_hz if band else None,
            "f_low_hz": fspan[0], "f_high_hz": fspan[1], "frequencies": fspan[2],
            "tilt_mean_deg": tilt.mean_deg if tilt else None,
            "tilt_std_deg": tilt.std_deg if tilt else None,
            "aspect_low_deg": aspan[0], "aspect_high_deg": aspan[1], "aspects": aspan[2],
            "sigma_bs_m2": float(value), "ts_db": float(ts_of_sigma(value))})

    for b in bands:
        per_aspect = wf[b] @ sigma
        for j, x in enumerate(a):
            row("band", band=b, fspan=f_spans[b], aspan=(float(x), float(x), 1),
                value=per_aspect[j])
    for t in tilts:
        per_frequency = sigma @ wa[t]
        for i, x in enumerate(f):
            row("tilt", fspan=(float(x), float(x), 1), tilt=t, aspan=a_spans[t],
                value=per_frequency[i])
    for b in bands:
        for t in tilts:
            row("band_tilt", band=b, fspan=f_spans[b], tilt=t, aspan=a_spans[t],
                value=wf[b] @ sigma @ wa[t])
    return rows


def parse_averages(spec: dict) -> tuple[list[Band], list[Tilt]]:
    """Bands and tilts of a case's `averages` block (each a mapping or a list of them)."""
    def items(key):
        value = (spec or {}).get(key) or []
        return [value] if isinstance(value, dict) else list(value)

    bands = [Band(float(b["center_hz"]), float(b["width_hz"])) for b in items("band")]
    tilts = [Tilt(float(t["mean_deg"]), float(t["std_deg"]),
                  **{k: type(v)(t.get(k, v)) for k, v in TILT_DEFAULTS.items()})
             for t in items("tilt")]
    for t in tilts:
        if t.sign not in (-1, 1) or not math.isfinite(t.zero_deg):
            raise AveragesError(f"{t.describe()}: sign must be +1 or -1, zero_deg finite")
    return bands, tilts


def monostatic_grid(table: dict, incidence) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(frequencies (nf,), aspects (na,), sigma_bs (nf, na)) of an aspect sweep's far-field
    table (`solve.records.read_farfield_csv` of farfield.csv: per frequency, one row per
    aspect of the sweep), checked against the sweep (a farfield.Incidence)."""
    if not incidence.monostatic:
        raise AveragesError("averages need a monostatic aspect sweep (incident.aspect)")
    aspects = incidence.aspect_deg
    n = len(table["F"])
    if n == 0 or n % len(aspects):
        raise AveragesError(f"the far-field table has {n} rows, not a multiple of the "
                            f"sweep's {len(aspects)} aspects")
    shape = (n // len(aspects), len(aspects))
    freqs = table["frequency_hz"].reshape(shape)
    if not np.all(freqs == freqs[:, :1]):
        raise AveragesError("the far-field table's rows are not one block of the sweep's "
                            "aspects per frequency")
    theta, phi = directions_to_angles(-incidence.directions)
    pole = np.abs(np.sin(np.radians(theta))) < 1e-9  # phi is arbitrary on the poles
    same = (np.abs(table["theta_deg"].reshape(shape) - theta) < 1e-6) & (
        (np.abs(_wrap(table["phi_deg"].reshape(shape) - phi)) < 1e-6) | pole)
    if not np.all(same):
        raise AveragesError("the far-field table's directions are not the sweep's aspects "
                            "(incident.aspect changed since it was written?)")
    return freqs[:, 0], aspects, sigma_bs(table["F"]).reshape(shape)


def case_averages(table: dict, case) -> list[dict]:
    """The ts_averages.csv rows of a case (case.Case) from its far-field table (see
    monostatic_grid)."""
    freqs, aspects, sigma = monostatic_grid(table, case.incidence)
    return averages_table(sigma, freqs, aspects, case.bands, case.tilts)
