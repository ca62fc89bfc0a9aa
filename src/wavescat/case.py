"""The case as the stages take it: frozen typed objects made from the config by the config
layer (config.py checks and normalises the dicts; this module turns them into objects).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import defaults
from .errors import ConfigError


@dataclass(frozen=True)
class Medium:
    """The fluid around the bodies: sound speed c (m/s) and density (kg/m^3)."""

    sound_speed: float
    density: float

    @classmethod
    def from_dict(cls, block: dict | None = None, where: str = "medium") -> Medium:
        """The `medium` block, the schema's defaults filled in."""
        values = {**defaults.MEDIUM, **(block or {})}
        for key in ("sound_speed", "density"):
            v = values[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise ConfigError(f"{where}.{key} = {v!r}: must be a number > 0")
        return cls(float(values["sound_speed"]), float(values["density"]))

    def wavenumber(self, frequency_hz: float) -> float:
        """k = 2 pi f / c (docs/conventions.md)."""
        return 2.0 * math.pi * float(frequency_hz) / self.sound_speed

    def wavelength(self, frequency_hz: float) -> float:
        return self.sound_speed / float(frequency_hz)
