"""Smooth periodic exact solutions and their Hermite data (scaled derivatives at nodes).

Every solution here is a sum of separable terms c * prod_d sin(k_d x_d + phi_d), whose
scaled derivatives h^j/j! d^j/dx^j are known in closed form, so the exact nodal data
is an outer product per term (no finite differences, no quadrature).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np

from .equations import LinearSystem


@dataclass(frozen=True)
class SeparableTerm:
    coef: float
    wavenumbers: tuple[float, float, float]
    phases: tuple[float, float, float]


def _scaled_derivatives_1d(k: float, phase: float, x: np.ndarray, h: float, m: int) -> np.ndarray:
    """(m+1, len(x)): h^j/j! d^j/dx^j sin(k x + phase)."""
    j = np.arange(m + 1)[:, None]
    scale = (k * h) ** j / np.array([factorial(i) for i in range(m + 1)], dtype=float)[:, None]
    return scale * np.sin(k * x[None, :] + phase + j * np.pi / 2)


def hermite_data(terms_per_field, coords, h, m: int) -> np.ndarray:
    """(F, m+1, m+1, m+1, n0, n1, n2) nodal data of the fields at the grid nodes `coords`."""
    out = np.zeros((len(terms_per_field),) + (m + 1,) * 3 + tuple(len(c) for c in coords))
    for f, terms in enumerate(terms_per_field):
        for t in terms:
            d0, d1, d2 = (_scaled_derivatives_1d(t.wavenumbers[d], t.phases[d], coords[d], h[d], m)
                          for d in range(3))
            out[f] += t.coef * np.einsum("ai,bj,ck->abcijk", d0, d1, d2)
    return out


@dataclass(frozen=True)
class ExactSolution:
    """A periodic exact solution of `system` on the box [0, L0] x [0, L1] x [0, L2]."""

    system: LinearSystem
    lengths: tuple[float, float, float]
    period: float
    _terms: object  # t -> list (per field) of lists of SeparableTerm

    def terms(self, t: float):
        return self._terms(t)


def advection_wave(system: LinearSystem, lengths=(1.0, 0.5, 0.5), phases=(0.3, 0.7, 1.1)):
    """u = prod_d sin(2 pi (x_d + a_d t)/L_d + phi_d); one period when a_d = L_d (as chosen here)."""
    a = system.matrices[:, 0, 0]
    k = tuple(2 * np.pi / np.asarray(lengths))
    # the period is the first time every a_d t is a multiple of L_d; with a_d = c L_d it is 1/c
    ratios = a / np.asarray(lengths)
    period = 1.0 / abs(ratios[0]) if np.allclose(np.abs(ratios), abs(ratios[0])) and ratios[0] else np.nan
    return ExactSolution(system, tuple(lengths), period, lambda t: [[SeparableTerm(
        1.0, k, tuple(phases[d] + k[d] * a[d] * t for d in range(3)))]])


def acoustic_standing_mode(system: LinearSystem, sound_speed: float, density: float,
                           lengths=(1.0, 0.5, 0.5), phases=(0.3, 0.7, 1.1), amplitude=1.0):
    """p = P cos(w t) prod cos(k_d x_d + phi_d), v_d = P k_d/(rho w) sin(w t) sin(k_d x_d + phi_d) prod_{e!=d} cos,
    with k_d = 2 pi / L_d and w = c |k|: an exact solution with period 2 pi / w."""
    k = 2 * np.pi / np.asarray(lengths)
    w = sound_speed * np.linalg.norm(k)
    cosph = tuple(p + np.pi / 2 for p in phases)

    def terms(t):
        out = [[SeparableTerm(amplitude * np.cos(w * t), tuple(k), cosph)]]
        for d in range(3):
            ph = tuple(phases[e] if e == d else cosph[e] for e in range(3))
            out.append([SeparableTerm(amplitude * k[d] / (density * w) * np.sin(w * t), tuple(k), ph)])
        return out

    return ExactSolution(system, tuple(lengths), 2 * np.pi / w, terms)
