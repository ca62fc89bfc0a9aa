"""The homogeneous fluid body's formulation."""
from __future__ import annotations

import json

import numpy as np

from ...backend import resolve
from ...errors import InputError
from ...problem.boundary import Boundary
from ...problem.medium import Medium
from ...reference._validate import positive
from ...reference.absorption import loss_factor
from ..assembly.potentials import (double_layer, double_layer_far_field, single_layer,
                                   single_layer_far_field)
from .muller_preconditioner import chosen, dense_limit, dof_points, factor_dtype
from .muller_preconditioner import free_bytes as free_bytes_of
from .osrc import mass_and_stiffness
from .rigid import SoundHardBurtonMiller
from .transmission import MullerTransmission, stacked


class FluidMuller(SoundHardBurtonMiller):
    """Homogeneous fluid body (density ratio g, sound-speed ratio h; inside k1 = k / h):
    p and (1/rho) dp/dn continuous across the surface. Müller's second-kind transmission
    formulation (Müller 1969; Kleinman & Martin 1988), transmission.py.

    Why Müller: the g-weighted sum of the exterior and interior Calderón equations leaves
    identity + compact operators (the single layers and hypersingular operators enter only
    as differences between k and k1, with smooth kernels), so GMRES needs few iterations
    with no preconditioner, none of the Calderón/OSRC machinery that a first-kind
    multi-trace (PMCHWT) system needs, and it is uniquely solvable at every real frequency
    for positive g, h (no spurious resonances). Rows scaled by 2/(1 + g) keep the identity
    part 1 from the gas-bubble limit (g -> 0, where the system tends to the interior
    Dirichlet equation at k1 coupled by g V) to the rigid one (g -> infinity): iterations
    stay low for a gas bubble through its Minnaert resonance, a weak scatterer and fish
    flesh (tests/solve/test_fluid_formulation.py). A gas body many interior wavelengths
    across is the exception: every surface mode that varies more slowly than the interior
    wave keeps an eigenvalue far from 1 (near 0 close to the gas's weakly damped interior
    resonances), and GMRES needs up to a step for each mode the incident wave excites, with
    its whole Krylov basis: restarted early it stagnates, which is why
    solver.gmres.restart defaults to maxiter. The block-triangular preconditioner
    (muller_preconditioner.py, `solver.fluid_preconditioner`, on by default while its
    two dense n x n factors fit) inverts the interior (Dirichlet-row) and exterior
    (Neumann-row) diagonal blocks exactly and leaves GMRES only the O(g) coupling. The
    iteration counts with and without it: bench/README.md, "Gas bodies with and without the
    fluid preconditioner".
    For the weak scatterer (g, h -> 1) the unknowns are the scattered traces and the data
    are written with operator differences, so both the data and the answer are
    proportional to the contrast: no cancellation between O(1) terms.

    Unknowns: the scattered exterior traces u = p_s and w = (1/k) dp_s/dn, both P1 on one
    mesh (the hypersingular operator needs P1 for u; P1 for the Neumann trace too keeps one
    space, one mass matrix and one solve per product, and a smooth trace on a smooth body is
    fitted with fewer DOFs than P0), stacked (2 n_vertices values). Operators V, K, W at
    k and k1 (K' too for H-matrices; from dense K as its transpose). The scattered field is
    p_s = DL u - k SL w and F = DL_inf u - k SL_inf w.
    """

    kind = "fluid"
    name = "muller_transmission"
    unknown = "scattered pressure then (1/k) times its normal derivative"
    operators = ("single_layer", "double_layer", "adjoint_double_layer", "hypersingular")
    keys = frozenset({"density_ratio", "density", "sound_speed_ratio", "sound_speed",
                      "absorption_db_per_wavelength"})
    traces = 2
    _symbols = {"single_layer": "V", "double_layer": "K", "adjoint_double_layer": "Kp",
                "hypersingular": "W"}

    # (ratio, absolute) keys of the two contrasts: exactly one of each pair
    CONTRASTS = (("density_ratio", "density"), ("sound_speed_ratio", "sound_speed"))

    def __init__(self, boundary: Boundary):
        super().__init__(boundary)
        self.density_ratio = boundary.density_ratio
        self.sound_speed_ratio = boundary.sound_speed_ratio
        self.absorption = boundary.absorption_db_per_wavelength

    @classmethod
    def parameters(cls, block: dict, medium: Medium) -> dict:
        """g and h, each given as a ratio or as the body's absolute value (divided by the
        medium's), and the absorption (default 0)."""
        out = {}
        for ratio, absolute in cls.CONTRASTS:
            given = [key for key in (ratio, absolute) if block.get(key) is not None]
            if len(given) != 1:
                what = "both are given" if given else "neither is given"
                raise InputError(f"{ratio} / {absolute}: boundary kind 'fluid' needs exactly "
                                 f"one of them ({what})")
            value = positive(given[0], block[given[0]])
            out[ratio] = value / getattr(medium, absolute) if given[0] == absolute else value
        value = block.get("absorption_db_per_wavelength", 0.0)
        try:
            loss_factor(None if isinstance(value, bool) else value)
        except InputError:
            raise InputError(f"absorption_db_per_wavelength = {value!r}: must be a number >= 0 "
                             "(dB of amplitude lost per wavelength)") from None
        return {**out, "absorption_db_per_wavelength": float(value)}

    @property
    def wavenumber_factor(self) -> complex:
        """k1 / k: 1 / h, times (1 + i delta) with absorption (reference/absorption.py)."""
        return (1 + 1j * loss_factor(self.absorption)) / self.sound_speed_ratio

    # its preconditioner (muller_preconditioner.py) is chosen by the memory the operators
    # leave free: made after them, never beside
    start_preconditioner = None

    def operator_specs(self, k: float, operator_format: str) -> dict:
        names = [n for n in self.operators if n != "adjoint_double_layer"]  # K' = K^T
        k1 = k * self.wavenumber_factor
        return {f"{self._symbols[n]}{i}": (n, kk) for i, kk in enumerate(
            (k, k1 if k1.imag else k1.real)) for n in names}

    def system(self, space, k: float, operators: dict, solver, xp=np, free_bytes=None,
               group=None):
        """The Müller system (transmission.py) for the operators of `operator_specs`,
        right-preconditioned as `solver.fluid_preconditioner` says (auto: the
        block-triangular preconditioner of muller_preconditioner.py for a body of high
        impedance contrast, g h below 1/5 or above 5, while its dense factors take at most
        half the free memory; else none)."""
        mass, _ = mass_and_stiffness(space)
        itemsize = factor_dtype(operators["K0"]).itemsize
        setting = solver.fluid_preconditioner
        name = chosen(setting, space.n_dofs, itemsize,
                      (free_bytes or free_bytes_of(xp)) if setting == "auto" else np.inf,
                      self.density_ratio * self.sound_speed_ratio, dense_limit(xp))
        return MullerTransmission(operators, mass, k, self.density_ratio, xp=xp,
                                  preconditioner=name, points=dof_points(space))

    def _traces(self, double, single, space, points, k, backend, order=None):
        """[DL, -k SL]: the potential (or far field) of (u, w)."""
        be = resolve(backend)
        return stacked(be.xp, double(space, points, k, order=order, backend=be),
                       -k * single(space, points, k, order=order, backend=be))

    def far_field(self, space, directions, k: float, backend=None):
        return self._traces(double_layer_far_field, single_layer_far_field, space, directions,
                            k, backend)

    def potential(self, space, points, k: float, backend=None, order=None):
        return self._traces(double_layer, single_layer, space, points, k, backend, order)

    def surface_fields(self, coefficients, incident) -> dict:
        """The total pressure p_s + p_inc (on every surface of nested bodies, whose first
        trace is p - p_inc on each)."""
        return {"p_total": coefficients[:len(incident)] + incident}

    def record(self) -> dict:
        """The boundary block with the contrasts resolved (absolute values need the medium,
        which the records do not carry), and the block as given."""
        out = super().record()
        resolved = {"kind": FluidMuller.kind, "density_ratio": self.density_ratio,
                    "sound_speed_ratio": self.sound_speed_ratio}
        if self.absorption:
            resolved["absorption_db_per_wavelength"] = self.absorption
        out["boundary"] = json.dumps(resolved, sort_keys=True)
        out["boundary_given"] = self.boundary.given
        return out
