"""The impedance body's formulation."""
from __future__ import annotations

from ...errors import InputError
from ...problem.boundary import Boundary
from ...problem.medium import Medium
from ...reference.impedance_sphere import admittance_value
from ..assembly.potentials import (double_layer, double_layer_far_field, single_layer,
                                   single_layer_far_field)
from .burton_miller import OsrcImpedanceBurtonMiller
from .rigid import SoundHardBurtonMiller
from .transmission import adjoint_of


class ImpedanceBurtonMiller(SoundHardBurtonMiller):
    """Impedance body, dp_tot/dn = -i k beta p_tot (outward normal, beta = `admittance`,
    Re beta > 0 absorbs): OSRC-preconditioned Burton-Miller.

    Unknown: the total surface pressure p in P1, as for the rigid body. The Robin condition
    in the representation p = p_inc + DL p - SL dp/dn gives p_s = DL p + ik beta SL p and
        (1/2 - K - ik beta V) p - N (W - ik beta (1/2 + K')) p = p_inc - N dp_inc/dn
    with the rigid body's OSRC NtD map N as coupling (burton_miller.py,
    OsrcImpedanceBurtonMiller says why it needs no other preconditioner); beta = 0 is the
    rigid system. F = DL_inf p + ik beta SL_inf p.
    """

    kind = "impedance"
    name = "osrc_burton_miller_impedance"
    operators = ("double_layer", "hypersingular", "single_layer", "adjoint_double_layer")
    keys = frozenset({"admittance"})

    inner = False  # not a body inside another

    def __init__(self, boundary: Boundary):
        super().__init__(boundary)
        self.admittance = boundary.admittance

    @classmethod
    def parameters(cls, block: dict, medium: Medium) -> dict:
        if "admittance" not in block:
            raise InputError("admittance: required for boundary kind 'impedance' (the "
                             "normalised admittance beta as [re, im])")
        return {"admittance": admittance_value(block["admittance"])}

    def operator_specs(self, k: float, operator_format: str) -> dict:
        return {name: (name, k) for name in self.operators if name != "adjoint_double_layer"}

    def _system(self, space, k, operators, mass, coupling, xp):
        ops = {"adjoint_double_layer": adjoint_of(operators["double_layer"]), **operators}
        return OsrcImpedanceBurtonMiller(*(ops[n] for n in self.operators), mass, coupling,
                                         k, self.admittance, xp=xp)

    def _with_single_layer(self, double, single, space, points, k, backend, order=None):
        """double(...) + ik beta single(...): the potential (or far field) of p from the
        representation p_s = DL p + ik beta SL p."""
        out = double(space, points, k, order=order, backend=backend)
        if self.admittance != 0:
            out = out + (1j * k * self.admittance) * single(space, points, k, order=order,
                                                             backend=backend)
        return out

    def far_field(self, space, directions, k: float, backend=None):
        return self._with_single_layer(double_layer_far_field, single_layer_far_field, space,
                                       directions, k, backend)

    def potential(self, space, points, k: float, backend=None, order=None):
        return self._with_single_layer(double_layer, single_layer, space, points, k, backend,
                                       order)
