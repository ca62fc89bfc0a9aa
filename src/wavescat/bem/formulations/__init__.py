"""Boundary-integral formulations, one class per boundary condition of the scatterer.

A case names its boundary condition with `boundary.kind` (docs/conventions.md; the
schema's default `rigid`); `boundary_from(block)` reads the block into a Boundary (the
kind and its parameters) and `formulation_for(boundary)` returns the formulation that
solves it. A formulation says which keys its block takes, which unknown it solves for, on
which function space, with which boundary operators, and how to turn the assembled
operators and the incident field into a preconditioned system (`matvec`, `rhs`), the far
field and the near-field potential of the unknown, and what the solution records carry.
The driver (solve/driver.py) and the probes (commands/probes.py) hold no physics of their
own: a new boundary condition is a new class registered in FORMULATIONS (and its keys in
the config schema).

Conventions (docs/conventions.md): time dependence exp(-i w t), incident plane waves
exp(ik d.x) of unit amplitude, outward normal n, G(x, y) = exp(ik|x-y|)/(4 pi |x-y|).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import partial
from types import SimpleNamespace

import numpy as np

from ... import defaults
from ...backend import resolve
from ...errors import InputError, WavescatError
from ...geometry.bodies import Body
from ...medium import Medium
from ...reference import fluid_sphere, impedance_sphere, pressure_release_sphere, rigid_sphere
from ...reference._validate import positive
from ...reference.absorption import complex_sound_speed_ratio, loss_factor
from ...reference.impedance_sphere import admittance_value
from ...surface import SurfaceMesh
from ..assembly.potentials import (double_layer, double_layer_far_field, single_layer,
                                   single_layer_far_field)
from ..discretisation import spaces
from .burton_miller import (OsrcBurtonMiller, OsrcDirichletBurtonMiller, OsrcImpedanceBurtonMiller,
                            plane_wave_data)
from .muller_preconditioner import BlockTriangular, chosen, factor_dtype, restricted
from .muller_preconditioner import free_bytes as free_bytes_of
from .nested import MultiDomainTransmission, interfaces_and_regions, region_surfaces
from .osrc import OsrcDtN, OsrcNtD, in_background, mass_and_stiffness
from .transmission import MullerTransmission, adjoint_of, stacked


@dataclass(frozen=True)
class Boundary:
    """A surface's boundary condition: its kind (a formulation of FORMULATIONS) and that
    kind's parameters; a fluid's contrasts are relative to the medium around the case."""

    kind: str
    density_ratio: float | None = None  # fluid: g = rho1 / rho
    sound_speed_ratio: float | None = None  # fluid: h = c1 / c (phase speed)
    absorption_db_per_wavelength: float = 0.0  # fluid: loss of the interior plane wave
    admittance: complex | None = None  # impedance: beta
    given: str = ""  # the block as given, with its kind, as JSON (what the records keep)

    @property
    def is_fluid(self) -> bool:
        return self.kind == "fluid"


def _series(module, **params) -> SimpleNamespace:
    """`far_field(k, a, d, xhat, center)`, `monostatic_far_field(k, a, ds, center)` and
    `scattered_field(k, a, d, points, center)` of a sphere series module of reference/ with
    this boundary condition's parameters bound."""
    return SimpleNamespace(far_field=partial(module.far_field, **params),
                           monostatic_far_field=partial(module.monostatic_far_field, **params),
                           scattered_field=partial(module.scattered_field, **params))


def _osrc_options(osrc, group=None) -> dict:
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
                       **_osrc_options(osrc, group))

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

    def sphere_series(self) -> SimpleNamespace:
        """The exact far field of a sphere with this boundary condition (reference/):
        `far_field(k, a, d, xhat, center)` and `monostatic_far_field(k, a, ds, center)`."""
        return _series(rigid_sphere)


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
                       **_osrc_options(osrc, group))

    def _system(self, space, k, operators, mass, coupling, xp):
        return OsrcDirichletBurtonMiller(*(operators[n] for n in self.operators), mass, coupling,
                                         xp=xp)

    def far_field(self, space, directions, k: float, backend=None):
        return -single_layer_far_field(space, directions, k, backend=backend)

    def sphere_series(self) -> SimpleNamespace:
        return _series(pressure_release_sphere)

    def potential(self, space, points, k: float, backend=None, order=None):
        return -single_layer(space, points, k, order=order, backend=backend)

    def surface_fields(self, coefficients, incident) -> dict:
        """The total pressure is zero: its normal derivative, the unknown, instead."""
        return {"dp_total_dn": coefficients}


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

    def sphere_series(self) -> SimpleNamespace:
        return _series(impedance_sphere, admittance=self.admittance)


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
                      self.density_ratio * self.sound_speed_ratio)
        return MullerTransmission(operators, mass, k, self.density_ratio, xp=xp,
                                  preconditioner=name)

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

    def sphere_series(self) -> SimpleNamespace:
        """The fluid sphere's series; an absorption makes h complex (reference/absorption.py)."""
        h = self.sound_speed_ratio
        if self.absorption:
            h = complex_sound_speed_ratio(h, self.absorption)
        return _series(fluid_sphere, density_ratio=self.density_ratio, sound_speed_ratio=h)


def sub_space(space, surfaces):
    """(P1 space of the given surfaces of a union mesh, in increasing order, and the global
    dofs of its dofs): the union's vertex values are its dofs, each surface's contiguous."""

    mesh = space.mesh
    surfaces = sorted(surfaces)
    if len(surfaces) == mesh.n_surfaces:
        return space, np.arange(space.n_dofs)
    part = SurfaceMesh.union([mesh.surface(i) for i in surfaces])
    dofs = np.concatenate([np.arange(space.n_dofs)[mesh.surface_vertices(i)] for i in surfaces])
    return spaces.p1(part), dofs


class NestedTransmission(FluidMuller):
    """Nested bodies (config `inside`): the multi-domain transmission system of
    nested.py, one pair of traces per interface, on the union mesh of every body's
    surface in the body tree's order. The outer body is a fluid; the bodies inside are
    fluids, or rigid or pressure-release cores. P1 on every surface; the operators V, K, W
    of each region at its own wavenumber on the surfaces that bound it (the medium's on
    every surface: they also give the incident field's identities in the data)."""

    kind = "nested"
    name = "multidomain_transmission"
    unknown = "p - p_inc then ((1/g) dp/dn - dp_inc/dn) / k on every surface"
    operators = ("single_layer", "double_layer", "hypersingular")

    def __init__(self, bodies):
        """`bodies`: the case's Body objects in surface order (Case.bodies: the outer body,
        a fluid, then the bodies inside it depth first, each of an `inner` kind)."""
        super().__init__(bodies[0].boundary)
        self.bodies = [(body, formulation_for(body.boundary)) for body in bodies]
        specs = [(-1, "fluid", self.density_ratio, self.wavenumber_factor)]
        for body, form in self.bodies[1:]:
            fluid = form.kind == "fluid"
            specs.append((body.parent, form.kind, form.density_ratio if fluid else None,
                          form.wavenumber_factor if fluid else None))
        self.interfaces, self.regions = interfaces_and_regions(specs)

    def n_unknowns(self, space) -> int:
        return 2 * space.n_dofs

    def _region_wavenumbers(self, k):
        return [k * complex(r.wavenumber_factor) for r in self.regions]

    def operator_specs(self, k: float, operator_format: str) -> dict:
        """{key: (operator, wavenumber, surfaces)}: V, K, W of every region on its
        surfaces (nested.region_surfaces)."""
        out = {}
        for region, kk in zip(self.regions, self._region_wavenumbers(k)):
            surfaces = tuple(region_surfaces(self.interfaces, region.index))
            kk = kk if kk.imag else kk.real
            for n in self.operators:
                out[f"{self._symbols[n]}{region.index}"] = (n, kk, surfaces)
        return out

    def check_mesh(self, mesh):
        """The mesh must hold one surface per body of the tree."""
        if mesh.n_surfaces != len(self.bodies):
            raise WavescatError(f"the mesh holds {mesh.n_surfaces} surface(s); the body "
                                f"tree has {len(self.bodies)}")

    def system(self, space, k: float, operators: dict, solver, xp=np, free_bytes=None,
               group=None):
        self.check_mesh(space.mesh)
        mass, _ = mass_and_stiffness(space)
        surface_of_dof = self.surface_of_dof(space)
        ops, dofs = [], []
        for region in self.regions:
            surfaces = region_surfaces(self.interfaces, region.index)
            dofs.append(np.flatnonzero(np.isin(surface_of_dof, surfaces)))
            ops.append({sym: operators[f"{sym}{region.index}"] for sym in ("V", "K", "W")})
        couplings, core_dofs = {}, {}
        for face in self.interfaces:
            if face.kind == "fluid":
                continue
            core, core_dofs[face.index] = sub_space(space, (face.index,))
            k_o = float((k * complex(self.regions[face.outer].wavenumber_factor)).real)
            cls = OsrcNtD if face.kind == "rigid" else OsrcDtN
            couplings[face.index] = cls(core, k_o, **_osrc_options(solver.osrc, group))
        system = MultiDomainTransmission(self.interfaces, self.regions, ops, dofs,
                                         surface_of_dof, mass, k, couplings, core_dofs, xp=xp)
        system.preconditioners = self._interface_preconditioners(system, k, solver, xp,
                                                                 free_bytes)
        return system

    def _interface_preconditioners(self, system, k, solver, xp, free_bytes=None) -> dict:
        """{surface: (its dofs, BlockTriangular)} for the fluid interfaces that
        `solver.fluid_preconditioner` picks (auto: high impedance contrast between the two
        sides, factors within half the free memory), each from its own diagonal blocks: the
        interface's rows are the single-body Müller system with g = g_i / g_o and k g_o
        (nested.py), so the single body's preconditioner serves it unchanged."""
        setting = solver.fluid_preconditioner
        out = {}
        for face in self.interfaces:
            if face.kind != "fluid":
                continue
            outer, inner = self.regions[face.outer], self.regions[face.inner]
            idx = np.flatnonzero(system.surface_of_dof == face.index)
            g = inner.density_ratio / outer.density_ratio
            h = abs(outer.wavenumber_factor / inner.wavenumber_factor)
            dtype = factor_dtype(system.ops[face.outer]["K"])
            free = (free_bytes or free_bytes_of(xp)) if setting == "auto" else np.inf
            name = chosen(setting, len(idx), dtype.itemsize, free, g * h)
            if name != "block_triangular":
                continue
            blocks = {}  # the interface's own blocks of the regions on either side
            for sym, region in (("0", face.outer), ("1", face.inner)):
                pos = np.searchsorted(system.dofs[region], idx)
                for name_ in ("K", "W"):
                    blocks[f"{name_}{sym}"] = restricted(system.ops[region][name_], pos)
            out[face.index] = (idx, BlockTriangular(
                blocks, system.mass[idx][:, idx], k * outer.density_ratio, g,
                system._applied_on_host, xp, dtype))  # noqa: SLF001
        return out

    @staticmethod
    def surface_of_dof(space) -> np.ndarray:
        """The surface id of every P1 dof (vertex) of the union mesh."""
        out = np.zeros(space.n_dofs, np.int64)
        for i in range(space.mesh.n_surfaces):
            out[space.mesh.surface_vertices(i)] = i
        return out

    def _outer_only(self, matrix, space, xp):
        """Zero the columns of every surface but the outer one (the medium sees only it)."""
        inner = xp.asarray(self.surface_of_dof(space) != 0)
        mask = xp.concatenate([inner, inner])
        if mask.any():
            matrix = matrix.copy()
            matrix[:, mask] = 0
        return matrix

    def far_field(self, space, directions, k: float, backend=None):
        be = resolve(backend)
        return self._outer_only(super().far_field(space, directions, k, be), space, be.xp)

    def potential(self, space, points, k: float, backend=None, order=None):
        be = resolve(backend)
        return self._outer_only(super().potential(space, points, k, be, order), space, be.xp)

    def sphere_series(self) -> SimpleNamespace:
        raise InputError("nested bodies: their exact answer is the concentric spheres' "
                         "(reference/layered_sphere.py, reference.sphere.case_series)")

    def record(self) -> dict:
        out = super().record()
        out["formulation"] = self.name
        resolved = [json.loads(out["boundary"])] + [
            json.loads(form.record()["boundary"]) for _, form in self.bodies[1:]]
        out["bodies"] = json.dumps([{"parent": b.parent, "boundary": r, "where": b.where}
                                    for (b, _), r in zip(self.bodies, resolved)], sort_keys=True)
        return out


FORMULATIONS = {cls.kind: cls for cls in (SoundHardBurtonMiller, PressureReleaseBurtonMiller,
                                           FluidMuller, ImpedanceBurtonMiller)}


def boundary_from(block: dict | None = None, medium: Medium | None = None) -> Boundary:
    """The Boundary of a `boundary` block (None or {}: the schema's default kind); `medium`
    (default: the schema's) turns a fluid's absolute density and sound speed into
    contrasts. InputError naming the key of what is wrong (the config layer adds where)."""
    block = {**defaults.BOUNDARY, **(block or {})}
    kind = block["kind"]
    if kind not in FORMULATIONS:
        raise InputError(f"kind = {kind!r}: must be one of {', '.join(FORMULATIONS)}")
    cls = FORMULATIONS[kind]
    foreign = sorted(set(block) - {"kind"} - cls.keys)
    if foreign:
        raise InputError(f"{foreign[0]} = {block[foreign[0]]!r}: not a key of boundary kind "
                         f"{kind!r}")
    return Boundary(kind, **cls.parameters(block, medium or Medium()),
                    given=json.dumps(block, sort_keys=True))


INNER_KINDS = tuple(kind for kind, cls in FORMULATIONS.items() if cls.inner)


def formulation_for(boundary: Boundary):
    """The formulation of a surface's boundary condition."""
    return FORMULATIONS[boundary.kind](boundary)


def formulation_for_case(case):
    """The formulation of a case (case.Case): its body's, or the nested system where it
    holds bodies inside."""
    if len(case.bodies) > 1:
        return NestedTransmission(case.bodies)
    return formulation_for(case.boundary)


def formulation_of_record(solution: dict):
    """The formulation that wrote a solution (records.read_solution); files without a
    `boundary` attribute are rigid-body solutions (they predate the other kinds)."""
    where = solution.get("path", "solution")
    try:
        if solution.get("bodies"):  # nested: the tree as the records hold it
            bodies = json.loads(solution["bodies"])
            return NestedTransmission([
                Body(i, b["parent"], 0, None, boundary_from(b["boundary"]), b["where"])
                for i, b in enumerate(bodies)])
        form = formulation_for(boundary_from(json.loads(solution.get("boundary",
                                                                     '{"kind": "rigid"}'))))
    except InputError as exc:
        raise WavescatError(f"{where}: boundary {exc}") from None
    if solution.get("formulation", form.name) != form.name:
        raise WavescatError(f"{where}: formulation {solution['formulation']!r} does not match "
                            f"boundary kind {form.kind!r} ({form.name})")
    return form
