"""The rigid (sound-hard) body's formulation, whose pieces the other Burton-Miller
formulations (pressure_release.py, impedance.py) and the fluid one (fluid.py) inherit."""
from __future__ import annotations

import numpy as np

from ...problem.boundary import Boundary
from ...problem.medium import Medium
from ..assembly.potentials import double_layer, double_layer_far_field
from ..discretisation import spaces
from .burton_miller import OsrcBurtonMiller, plane_wave_data
from .osrc import OsrcNtD, in_background, mass_and_stiffness


def osrc_options(osrc, group=None) -> dict:
    """The OSRC maps' settings (OsrcSettings) and the ranks that share their Padé terms
    (solve/parallel.Ranks of a solve on several, else None)."""
    return {"pade_terms": osrc.pade_terms, "branch_angle": osrc.branch_angle,
            "radius": osrc.radius, "group": group}


class SoundHardBurtonMiller:
    """Rigid (sound-hard) body, dp_tot/dn = 0: OSRC-preconditioned Burton-Miller.

    Unknown: the total surface pressure p in P1 (vertex values). From p = p_inc + DL p
    outside, the exterior Dirichlet and Neumann traces give (1/2 - K) p = p_inc and
    W p = dp_inc/dn; the combination with the OSRC NtD map N as coupling operator,
        (1/2 - K - N W) p = p_inc - N dp_inc/dn,
    has no spurious resonances (burton_miller.py has the Galerkin strong form,
    osrc.py the NtD map). The scattered field is the double-layer potential of p,
    p_s = DL p, and its far-field amplitude F = DL_inf p (bem/assembly/potentials.py).
    """

    kind = "rigid"
    name = "osrc_burton_miller"  # the `formulation` of the solution records
    unknown = "total pressure"  # what the records' surface_pressure holds
    space_kind = "P1"
    operators = ("double_layer", "hypersingular")  # K and W, in this order
    keys = frozenset()  # boundary keys besides `kind`: a rigid body has no parameters
    inner = True  # may be a body inside another (a core of a fluid body)
    traces = 1  # surface traces solved for, each on `space`

    def __init__(self, boundary: Boundary):
        self.boundary = boundary

    @classmethod
    def parameters(cls, block: dict, medium: Medium) -> dict:
        """The Boundary fields of a block of this kind (its keys checked), InputError naming
        the key of a wrong value."""
        return {}

    def operator_specs(self, k: float, operator_format: str) -> dict:
        """{key: (operator name, wavenumber)} of the boundary operators the driver assembles
        for `system` at exterior wavenumber k in `operator_format` (dense or hmatrix)."""
        return {name: (name, k) for name in self.operators}

    def n_unknowns(self, space) -> int:
        """Length of the solution vector: one coefficient per DOF of `space` and trace."""
        return self.traces * space.n_dofs

    def space(self, mesh):
        """The function space of the unknown on `mesh`."""
        return spaces.p1(mesh)

    def preconditioner(self, space, k: float, osrc, mass=None, stiffness=None, group=None):
        """The OSRC NtD map at wavenumber k (OsrcSettings), factorised once, and the mass
        matrix with it (the strong form's, `mass_lu`); `group`: the ranks sharing its Padé terms."""
        return OsrcNtD(space, k, mass=mass, stiffness=stiffness, mass_factor=True,
                       **osrc_options(osrc, group))

    def _system(self, space, k, operators, mass, coupling, xp):
        return OsrcBurtonMiller(*(operators[n] for n in self.operators), mass, coupling, xp=xp)

    def _coupling(self, space, k, solver, group):
        mass, stiffness = mass_and_stiffness(space)
        return mass, self.preconditioner(space, k, solver.osrc, mass, stiffness, group)

    def start_preconditioner(self, space, k: float, solver, group=None):
        """The mass matrix and the OSRC map of `system`, factorised on a host thread: a
        Future that `system(..., ahead=)` takes. A GPU assembly leaves the host's cores
        idle, and the factorisations take them (minutes at 4 kHz on the submarine, issue 28)."""
        return in_background(lambda: self._coupling(space, k, solver, group))

    def system(self, space, k: float, operators: dict, solver, xp=np, free_bytes=None,
               group=None, ahead=None):
        """The preconditioned system with `matvec(x)` and `rhs(g, h)` (burton_miller.py)
        for the assembled operators {name: op} (dense or H-matrix, on the backend `xp`);
        `solver`: the case's SolverSettings, of which this formulation reads `osrc`;
        `free_bytes`: the memory free for a fluid preconditioner's factors (None: what
        `xp`'s device has; a solve on several ranks gives the least over them); `group`:
        the ranks of such a solve, which share the OSRC maps' Padé terms (osrc.py);
        `ahead`: the Future of `start_preconditioner` for the same arguments, if started."""
        mass, coupling = ahead.result() if ahead is not None else \
            self._coupling(space, k, solver, group)
        return self._system(space, k, operators, mass, coupling, xp)

    def rhs(self, system, space, k: float, directions):
        """Right-hand sides (n_dofs, n_directions) for unit plane waves travelling along the
        rows of `directions`, on the system's backend."""
        return system.rhs(*plane_wave_data(space, k, directions))

    def far_field(self, space, directions, k: float, backend=None):
        """(n_directions, n_dofs) matrix P on the backend: F(xhat) = P @ p."""
        return double_layer_far_field(space, directions, k, backend=backend)

    def potential(self, space, points, k: float, backend=None, order=None):
        """(n_points, n_dofs) matrix P on the backend: scattered pressure p_s(x) = P @ p at
        points off the surface (`order`: of the triangle rule, assembly/potentials.py)."""
        return double_layer(space, points, k, order=order, backend=backend)

    def surface_fields(self, coefficients, incident) -> dict:
        """{name: dof values} of the surface fields a viewer shows, from one solution vector
        and the unit incident pressure p_inc at the dofs: here the total pressure."""
        return {"p_total": coefficients}

    def record(self) -> dict:
        """What the solution records say about the formulation (HDF5 attributes)."""
        return {"formulation": self.name, "space": self.space_kind, "unknown": self.unknown,
                "boundary": self.boundary.given}
