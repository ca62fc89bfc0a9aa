"""Directions, far field and target strength.

Receivers and incidence directions come from the case config (docs/conventions.md):
`receivers: {plane, count}` gives angles linspace(0, 360, count) from the plane's first
axis towards its second; `receivers: {directions_deg: [[theta, phi], ...]}` lists them.
`incident` is {direction}, {directions} or {aspect: {plane, start_deg, stop_deg, count}}:
a monostatic sweep whose sonar sits at the plane direction of each aspect angle a, so the
wave travels along d = -xhat(a) and the monostatic receiver is xhat(a) = -d.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..defaults import ASPECT, RECEIVERS
from ..errors import InputError

PLANE_AXES = {"xy": (0, 1), "xz": (0, 2), "yz": (1, 2)}


def angles_to_directions(theta_deg, phi_deg) -> np.ndarray:
    """Unit vectors (n, 3) from polar angle theta (from +z) and azimuth phi (from +x), degrees."""
    t, p = np.radians(np.asarray(theta_deg, float)), np.radians(np.asarray(phi_deg, float))
    return np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1)


def directions_to_angles(directions) -> tuple[np.ndarray, np.ndarray]:
    """(theta_deg, phi_deg) of unit vectors; phi in [0, 360), 0 on the poles."""
    v = np.asarray(directions, float).reshape(-1, 3)
    v = v / np.linalg.norm(v, axis=1, keepdims=True)
    theta = np.degrees(np.arccos(np.clip(v[:, 2], -1.0, 1.0)))
    phi = np.degrees(np.arctan2(v[:, 1], v[:, 0])) % 360.0
    phi[np.hypot(v[:, 0], v[:, 1]) < 1e-12] = 0.0
    return np.round(theta, 10), np.round(phi, 10) % 360.0


def plane_directions(plane: str, angles_deg) -> np.ndarray:
    """Directions at angles a in `plane`: cos a along the first axis + sin a along the second."""
    if plane not in PLANE_AXES:
        raise InputError(f"plane = {plane!r}: must be one of {', '.join(PLANE_AXES)}")
    a = np.radians(np.asarray(angles_deg, float))
    v = np.zeros((len(a), 3))
    i, j = PLANE_AXES[plane]
    v[:, i], v[:, j] = np.cos(a), np.sin(a)
    return v


@dataclass(frozen=True)
class Directions:
    theta_deg: np.ndarray
    phi_deg: np.ndarray
    vectors: np.ndarray  # (n, 3) unit vectors
    angle_deg: np.ndarray | None = None  # plane angle, when they lie on a great circle
    plane: str | None = None


def receiver_directions(receivers: dict) -> Directions:
    """The receivers of a case, in config order."""
    if "directions_deg" in receivers:
        td = np.asarray(receivers["directions_deg"], float).reshape(-1, 2)
        if not np.all(np.isfinite(td)):
            raise InputError(f"directions_deg = {receivers['directions_deg']!r}: "
                              "must be finite [theta, phi] pairs")
        return Directions(td[:, 0].copy(), td[:, 1].copy(), angles_to_directions(td[:, 0], td[:, 1]))
    if "plane" not in receivers:
        raise InputError(f"receivers = {receivers!r}: give plane (with count) or directions_deg")
    count = int(receivers.get("count", RECEIVERS["count"]))
    if count < 1:
        raise InputError(f"count = {count}: must be >= 1")
    a = np.linspace(0.0, 360.0, count)
    v = plane_directions(receivers["plane"], a)
    theta, phi = directions_to_angles(v)
    if receivers["plane"] == "xy":  # keep phi = a exactly, 360 included
        theta, phi = np.full(count, 90.0), a.copy()
    return Directions(theta, phi, v, a, receivers["plane"])


@dataclass(frozen=True)
class Incidence:
    directions: np.ndarray  # (n, 3) unit vectors d of travel
    monostatic: bool = False  # an aspect sweep: the receiver of interest is -d
    aspect_deg: np.ndarray | None = None
    plane: str | None = None


def _unit(v, where):
    v = np.asarray(v, float).reshape(-1, 3)
    n = np.linalg.norm(v, axis=1, keepdims=True)
    if not np.all(np.isfinite(n)) or np.any(n == 0):
        raise InputError(f"{where} = {v.tolist()!r}: must be non-zero finite vectors")
    return v / n


def incident_directions(incident: dict) -> Incidence:
    """Incidence directions of a case: one, a list, or a monostatic aspect sweep."""
    modes = [k for k in ("direction", "directions", "aspect") if k in incident]
    if len(modes) != 1:
        raise InputError(f"incident = {incident!r}: give exactly one of direction, directions, aspect")
    if "direction" in incident:
        return Incidence(_unit(incident["direction"], "direction"))
    if "directions" in incident:
        return Incidence(_unit(incident["directions"], "directions"))
    sweep = incident["aspect"]
    count = int(sweep.get("count", 0))
    if count < 1:
        raise InputError(f"aspect.count = {sweep.get('count')!r}: must be >= 1")
    a = np.linspace(float(sweep.get("start_deg", ASPECT["start_deg"])),
                    float(sweep.get("stop_deg", ASPECT["stop_deg"])), count)
    xhat = plane_directions(sweep.get("plane"), a)
    return Incidence(-xhat, True, a, sweep["plane"])


def target_strength(far_field) -> np.ndarray:
    """TS = 20 log10(|F| / 1 m) in dB; a zero far field gives -inf-free -300 dB."""
    return 20.0 * np.log10(np.maximum(np.abs(np.asarray(far_field)), 1e-15))


def far_field_errors(computed, exact) -> dict:
    """RMS TS difference (dB) and relative L2 error of the complex far field."""
    computed, exact = np.asarray(computed).ravel(), np.asarray(exact).ravel()
    dts = target_strength(computed) - target_strength(exact)
    return {"rms_ts_error_db": float(np.sqrt(np.mean(dts**2))),
            "max_ts_error_db": float(np.abs(dts).max()),
            "relative_l2_error": float(np.linalg.norm(computed - exact) / np.linalg.norm(exact))}
