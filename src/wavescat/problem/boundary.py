"""A surface's boundary condition as the config gives it: frozen, typed, and below every
layer that reads it (bem/formulations/ solves it, reference/ has its sphere series, the DG
time domain applies it), so none of them imports another for it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Boundary:
    """A surface's boundary condition: its kind (a key of bem/formulations/registry.py's
    FORMULATIONS) and that kind's parameters; a fluid's contrasts are relative to the medium
    around the case."""

    kind: str
    density_ratio: float | None = None  # fluid: g = rho1 / rho
    sound_speed_ratio: float | None = None  # fluid: h = c1 / c (phase speed)
    absorption_db_per_wavelength: float = 0.0  # fluid: loss of the interior plane wave
    admittance: complex | None = None  # impedance: beta
    given: str = ""  # the block as given, with its kind, as JSON (what the records keep)

    @property
    def is_fluid(self) -> bool:
        return self.kind == "fluid"
