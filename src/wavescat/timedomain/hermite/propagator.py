"""The half step of scalar advection as a translation: three 1D operators (CPU reference).

For u_t = a . grad u the Cauchy-Kowalewski recursion sums the Taylor series of
exp(tau a.grad) on the tensor interpolant. That interpolant has total degree 3(2m+1), so
with q >= 3(2m+1) stages (a.grad)^(q+1) annihilates it and the series *is* the exponential:
the translation z -> z + lam, lam_d = a_d tau / h_d in the cell variable. A translation and
the tensor-product interpolant both factorise over the axes, so a half step applies, along
each axis d in turn, the (m+1) x 2(m+1) operator

    P_d = E(lam_d) H:  Hermite interpolation from the two vertices (H, interpolation.py),
                       then the scaled derivatives k = 0..m of the interpolant at z = lam_d,

to the 8 vertices' data. It is the recursion's discrete operator up to round-off, at
12 (m+1)^4 FLOPs per cell once the axis passes are shared between neighbouring cells.
gpu_propagator.py is the CUDA form; `half_step` here is the NumPy reference and CPU path.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError
from .interpolation import evaluate_scaled_derivatives, hermite_matrix_1d


def unavailable_reason(system, m: int, q: int) -> str | None:
    """Why the translation is not the method's half step for (system, m, q), or None if it is."""
    full = 3 * (2 * m + 1)
    if system.n_fields != 1:
        return (f"the {system.name} system couples {system.n_fields} fields; the propagator "
                "form needs a single advected field")
    if q < full:
        return f"q = {q} Taylor stages truncate the series; the propagator form needs q >= 3(2m+1) = {full}"
    return None


def require(system, m: int, q: int) -> None:
    reason = unavailable_reason(system, m, q)
    if reason is not None:
        raise InputError(f"hermite kernel = 'propagator': {reason}; use a recursion form "
                          "(monolithic, two-kernel)")


def shifts(system, lam) -> np.ndarray:
    """The translation of one half step per axis, from the coupling factors A_d * tau / h_d."""
    out = np.zeros(3)
    for (d, _, _, _), value in zip(system.couplings(), lam):
        out[d] += value
    return out


def operators(m: int, shift_per_axis) -> np.ndarray:
    """(3, m+1, 2m+2): P_d = E(lam_d) H, columns [left vertex k = 0..m, right vertex k = 0..m]."""
    h = hermite_matrix_1d(m)
    return np.stack([evaluate_scaled_derivatives(h, float(lam), m) for lam in shift_per_axis])


def half_step(src: np.ndarray, dst: np.ndarray, ops: np.ndarray, shift: int) -> None:
    """dst = centre data of the cells between src nodes i+shift and i+shift+1 (periodic).

    src, dst: (1, m+1, m+1, m+1, n0, n1, n2) as in solver.py; ops from `operators`. Each
    axis pass maps nodes to cells along that axis, so it is shared by the cells around a node.
    """
    out = src
    for d, op in enumerate(ops):
        dof, grid = 1 + d, 4 + d
        left = np.roll(out, -shift, axis=grid)  # left[i] = out[i + shift]
        both = np.concatenate([left, np.roll(left, -1, axis=grid)], axis=dof)
        out = np.moveaxis(np.tensordot(op, both, axes=([1], [dof])), 0, dof)
    dst[...] = out
