"""Constant-coefficient linear hyperbolic systems u_t = sum_d A_d du/dx_d.

Only the nonzero entries of the A_d matter to the Cauchy-Kowalewski recursion,
so a system is described by its list of couplings (d, f, g, A_d[f, g]); the CPU
and GPU kernels are written once against that list.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError


@dataclass(frozen=True)
class LinearSystem:
    name: str
    fields: tuple[str, ...]
    matrices: np.ndarray  # (3, F, F): A_d
    #: (3, F) parity of each field under reflection across a wall normal to axis d
    #: (+1 even, -1 odd), or None where the system has no rigid-wall condition
    wall_parity: np.ndarray | None = None

    @property
    def n_fields(self) -> int:
        return len(self.fields)

    def couplings(self) -> list[tuple[int, int, int, float]]:
        """Nonzero (dimension d, target field f, source field g, A_d[f, g])."""
        d, f, g = np.nonzero(self.matrices)
        return [(int(a), int(b), int(c), float(self.matrices[a, b, c])) for a, b, c in zip(d, f, g)]

    def max_speeds(self) -> np.ndarray:
        """Largest characteristic speed along each axis: spectral radius of A_d."""
        return np.array([np.max(np.abs(np.linalg.eigvals(a))) for a in self.matrices])


def advection(velocity=(1.0, 1.0, 1.0)) -> LinearSystem:
    """u_t = a . grad u (the paper's test equation); the solution is u0(x + a t)."""
    a = np.asarray(velocity, dtype=float)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise InputError(f"advection velocity = {velocity!r}: must be 3 finite numbers")
    return LinearSystem("advection", ("u",), a.reshape(3, 1, 1).copy())


def acoustics(sound_speed: float = 1.0, density: float = 1.0) -> LinearSystem:
    """Linear acoustics p_t + rho c^2 div v = 0, rho v_t + grad p = 0; fields (p, vx, vy, vz)."""
    for key, val in (("sound_speed", sound_speed), ("density", density)):
        if not np.isfinite(val) or val <= 0:
            raise InputError(f"acoustics {key} = {val!r}: must be a positive number")
    a = np.zeros((3, 4, 4))
    for d in range(3):
        a[d, 0, 1 + d] = -density * sound_speed ** 2
        a[d, 1 + d, 0] = -1.0 / density
    # rigid wall normal to axis d: the pressure is even across it, the normal velocity odd
    parity = np.ones((3, 4))
    for d in range(3):
        parity[d, 1 + d] = -1.0
    return LinearSystem("acoustics", ("p", "vx", "vy", "vz"), a, parity)
