"""The fluid around the bodies, and the one place that turns a frequency into a wavenumber."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..defaults import MEDIUM
from ..errors import InputError


@dataclass(frozen=True)
class Medium:
    """Sound speed c (m/s) and density (kg/m^3); the config's `medium` block, whose defaults
    (the schema's) are these fields' defaults."""

    sound_speed: float = MEDIUM["sound_speed"]
    density: float = MEDIUM["density"]

    def __post_init__(self):
        for key in ("sound_speed", "density"):
            v = getattr(self, key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise InputError(f"{key} = {v!r}: must be a number > 0")
            object.__setattr__(self, key, float(v))

    @classmethod
    def from_dict(cls, block: dict | None = None) -> Medium:
        """The `medium` block (keys sound_speed, density; absent ones take the defaults)."""
        return cls(**(block or {}))

    def wavenumber(self, frequency_hz: float) -> float:
        """k = 2 pi f / c (docs/conventions.md)."""
        return 2.0 * math.pi * float(frequency_hz) / self.sound_speed

    def wavelength(self, frequency_hz: float) -> float:
        return self.sound_speed / float(frequency_hz)
