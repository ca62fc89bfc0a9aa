"""Checked values of geometry parameters: InputErrors that name the parameter and the value
(the config layer adds where the value came from)."""
from __future__ import annotations

import math

from ..errors import InputError


def positive(name: str, value) -> float:
    """`value` as a finite float > 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} = {value!r}: must be a number") from None
    if not (v > 0 and math.isfinite(v)):
        raise InputError(f"{name} = {value!r}: must be > 0")
    return v


def vector3(name: str, value, positive_entries: bool = False) -> tuple[float, float, float]:
    """`value` as three finite floats (each > 0 if `positive_entries`)."""
    try:
        v = tuple(float(x) for x in value)
    except (TypeError, ValueError):
        raise InputError(f"{name} = {value!r}: must be three numbers") from None
    if len(v) != 3 or not all(math.isfinite(x) for x in v):
        raise InputError(f"{name} = {value!r}: must be three numbers")
    if positive_entries and not all(x > 0 for x in v):
        raise InputError(f"{name} = {value!r}: every entry must be > 0")
    return v
