"""The pressure-release (sound-soft) body's formulation."""
from __future__ import annotations

from ..assembly.potentials import single_layer, single_layer_far_field
from .burton_miller import OsrcDirichletBurtonMiller
from .osrc import OsrcDtN
from .rigid import SoundHardBurtonMiller, osrc_options


class PressureReleaseBurtonMiller(SoundHardBurtonMiller):
    """Pressure-release (sound-soft) body, p_tot = 0: OSRC-preconditioned Burton-Miller for
    the Dirichlet problem (Antoine & Darbas 2007).

    Unknown: the Neumann trace λ = dp_tot/dn. In P1, not P0: the OSRC DtN coupling is a
    surface-Laplacian operator that needs an H^1-conforming space, and one space for the
    unknown, the coupling and the mass matrix keeps the strong form as cheap as the rigid
    one (one mass solve per product); P1 also fits the smooth trace on smooth bodies with
    half the DOFs of P0 on the same mesh. From p_tot = p_inc - SL λ outside, the traces
    give V λ = p_inc and (1/2 + K') λ = dp_inc/dn, combined with the OSRC DtN map Λ:
        (1/2 + K' - Λ V) λ = dp_inc/dn - Λ p_inc
    (burton_miller.py, OsrcDirichletBurtonMiller; the DtN map is the Padé square root
    of osrc.py, the inverse counterpart of the rigid body's NtD map). The scattered field
    is p_s = -SL λ and F = -SL_inf λ.
    """

    kind = "pressure_release"
    name = "osrc_burton_miller_dirichlet"
    unknown = "normal derivative of the total pressure"
    operators = ("single_layer", "adjoint_double_layer")  # V and K', in this order

    def preconditioner(self, space, k: float, osrc, mass=None, stiffness=None, group=None):
        """The OSRC DtN map at wavenumber k (OsrcSettings), factorised once, and the mass
        matrix with it (the strong form's, `mass_lu`); `group`: the ranks sharing its Padé terms."""
        return OsrcDtN(space, k, mass=mass, stiffness=stiffness, mass_factor=True,
                       **osrc_options(osrc, group))

    def _system(self, space, k, operators, mass, coupling, xp):
        return OsrcDirichletBurtonMiller(*(operators[n] for n in self.operators), mass, coupling,
                                         xp=xp)

    def far_field(self, space, directions, k: float, backend=None):
        return -single_layer_far_field(space, directions, k, backend=backend)

    def potential(self, space, points, k: float, backend=None, order=None):
        return -single_layer(space, points, k, order=order, backend=backend)

    def surface_fields(self, coefficients, incident) -> dict:
        """The total pressure is zero: its normal derivative, the unknown, instead."""
        return {"dp_total_dn": coefficients}
