"""Reading geometry keys with errors that name the key and the value."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ConfigError


def positive_number(name: str, value) -> float:
    """`value` as a finite float > 0, or an error naming `name` and the value."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r}: must be a number") from None
    if not (v > 0 and math.isfinite(v)):
        raise ConfigError(f"{name} = {value!r}: must be > 0")
    return v


def positive(geometry: dict, key: str, default=None, prefix: str = "geometry") -> float:
    value = geometry.get(key, default)
    if value is None:
        raise ConfigError(f"{prefix}.{key} is missing")
    return positive_number(f"{prefix}.{key}", value)


def nonnegative(geometry: dict, key: str, default, prefix: str = "geometry") -> float:
    value = geometry.get(key, default)
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{prefix}.{key} = {value!r}: must be a number") from None
    if not (v >= 0 and math.isfinite(v)):
        raise ConfigError(f"{prefix}.{key} = {value!r}: must be >= 0")
    return v


def vector3(geometry: dict, key: str, default=None, positive_entries: bool = False,
            prefix: str = "geometry") -> np.ndarray:
    value = geometry.get(key, default)
    try:
        v = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{prefix}.{key} = {value!r}: must be three numbers") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ConfigError(f"{prefix}.{key} = {value!r}: must be three numbers")
    if positive_entries and not np.all(v > 0):
        raise ConfigError(f"{prefix}.{key} = {value!r}: every entry must be > 0")
    return v


def center(geometry: dict) -> np.ndarray:
    return vector3(geometry, "center", [0.0, 0.0, 0.0])
