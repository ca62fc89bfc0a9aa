"""Boundary-integral formulations, one class per boundary condition of the scatterer.

A case names its boundary condition with `boundary.kind` (docs/conventions.md; default
`rigid`); `formulation_for(boundary)` returns the formulation that solves it. A formulation
says which unknown it solves for, on which function space, with which boundary operators,
and how to turn the assembled operators and the incident field into a preconditioned
system (`matvec`, `rhs`), the far field and the near-field potential of the unknown, and
what the solution records carry. The driver (solve/driver.py) and the probes
(commands/probes.py) hold no physics of their own: a new boundary condition is a new class
registered in FORMULATIONS.

Conventions (docs/conventions.md): time dependence exp(-i w t), incident plane waves
exp(ik d.x) of unit amplitude, outward normal n, G(x, y) = exp(ik|x-y|)/(4 pi |x-y|).
"""
from __future__ import annotations

import json

import numpy as np

from .. import defaults
from ..errors import ConfigError, WavescatError

BOUNDARY_KINDS = ("rigid", "pressure_release", "fluid", "impedance")  # the contract's kinds
INNER_KINDS = ("fluid", "rigid", "pressure_release")  # kinds of a body inside another


def absorption_of(boundary: dict, where: str = "boundary") -> float:
    """`absorption_db_per_wavelength` of a fluid boundary block (default 0), checked."""
    from ..reference.absorption import loss_factor  # noqa: PLC0415

    value = boundary.get("absorption_db_per_wavelength", 0.0)
    try:
        loss_factor(None if isinstance(value, bool) else value)
    except ConfigError:
        raise ConfigError(f"{where}.absorption_db_per_wavelength = {value!r}: must be a "
                          "number >= 0 (dB of amplitude lost per wavelength)") from None
    return float(value)


def _osrc_options(solver: dict) -> dict:
    """The OSRC maps' settings (`solver.osrc`) and the ranks that share their Padé terms
    (`solver["group"]`, set by the driver on several ranks)."""
    osrc = solver["osrc"]
    return {"pade_terms": osrc["pade_terms"], "branch_angle": osrc["branch_angle"],
            "radius": osrc["radius"], "group": solver.get("group")}


class SoundHardBurtonMiller:
    """Rigid (sound-hard) body, dp_tot/dn = 0: OSRC-preconditioned Burton-Miller.

    Unknown: the total surface pressure p in P1 (vertex values). From p = p_inc + DL p
    outside, the exterior Dirichlet and Neumann traces give (1/2 - K) p = p_inc and
    W p = dp_inc/dn; the combination with the OSRC NtD map N as coupling operator,
        (1/2 - K - N W) p = p_inc - N dp_inc/dn,
    has no spurious resonances (bem/burton_miller.py has the Galerkin strong form,
    bem/osrc.py the NtD map). The scattered field is the double-layer potential of p,
    p_s = DL p, and its far-field amplitude F = DL_inf p (bem/potentials.py).
    """

    kind = "rigid"
    name = "osrc_burton_miller"  # the `formulation` of the solution records
    unknown = "total pressure"  # what the records' surface_pressure holds
    space_kind = "P1"
    operators = ("double_layer", "hypersingular")  # K and W, in this order
    keys = frozenset()  # boundary keys besides `kind`: a rigid body has no parameters
    traces = 1  # surface traces solved for, each on `space`

    def __init__(self, boundary: dict | None = None, where: str = "boundary",
                 medium: dict | None = None):
        self.boundary = {"kind": self.kind, **(boundary or {})}

    def operator_specs(self, k: float, operator_format: str) -> dict:
        """{key: (operator name, wavenumber)} of the boundary operators the driver assembles
        for `system` at exterior wavenumber k in `operator_format` (dense or hmatrix)."""
        return {name: (name, k) for name in self.operators}

    def n_unknowns(self, space) -> int:
        """Length of the solution vector: one coefficient per DOF of `space` and trace."""
        return self.traces * space.n_dofs

    def space(self, mesh):
        """The function space of the unknown on `mesh`."""
        from . import spaces  # noqa: PLC0415

        return spaces.p1(mesh)

    def preconditioner(self, space, k: float, solver: dict, mass=None, stiffness=None):
        """The OSRC NtD map at wavenumber k (settings `solver.osrc`), factorised once."""
        from .osrc import OsrcNtD  # noqa: PLC0415

        return OsrcNtD(space, k, mass=mass, stiffness=stiffness, **_osrc_options(solver))

    def _system(self, space, k, operators, mass, coupling, xp):
        from .burton_miller import OsrcBurtonMiller  # noqa: PLC0415

        return OsrcBurtonMiller(*(operators[n] for n in self.operators), mass, coupling, xp=xp)

    def system(self, space, k: float, operators: dict, solver: dict, xp=np):
        """The preconditioned system with `matvec(x)` and `rhs(g, h)` (bem/burton_miller.py)
        for the assembled operators {name: op} (dense or H-matrix, on the backend `xp`);
        `solver`: the solver settings with defaults filled in (solve.driver.solver_settings),
        of which this formulation reads `osrc`."""
        from .osrc import mass_and_stiffness  # noqa: PLC0415

        mass, stiffness = mass_and_stiffness(space)
        coupling = self.preconditioner(space, k, solver, mass, stiffness)
        return self._system(space, k, operators, mass, coupling, xp)

    def rhs(self, system, space, k: float, directions):
        """Right-hand sides (n_dofs, n_directions) for unit plane waves travelling along the
        rows of `directions`, on the system's backend."""
        from .burton_miller import plane_wave_data  # noqa: PLC0415

        return system.rhs(*plane_wave_data(space, k, directions))

    def far_field(self, space, directions, k: float, backend="cpu"):
        """(n_directions, n_dofs) matrix P on the backend: F(xhat) = P @ p."""
        from .potentials import double_layer_far_field  # noqa: PLC0415

        return double_layer_far_field(space, directions, k, backend=backend)

    def potential(self, space, points, k: float, backend="cpu", order=None):
        """(n_points, n_dofs) matrix P on the backend: scattered pressure p_s(x) = P @ p at
        points off the surface (`order`: of the triangle rule, bem/potentials.py)."""
        from .potentials import double_layer  # noqa: PLC0415

        return double_layer(space, points, k, order=order, backend=backend)

    def surface_fields(self, coefficients, incident) -> dict:
        """{name: dof values} of the surface fields a viewer shows, from one solution vector
        and the unit incident pressure p_inc at the dofs: here the total pressure."""
        return {"p_total": coefficients}

    def record(self) -> dict:
        """What the solution records say about the formulation (HDF5 attributes)."""
        return {"formulation": self.name, "space": self.space_kind, "unknown": self.unknown,
                "boundary": json.dumps(self.boundary, sort_keys=True)}


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
    (bem/burton_miller.py, OsrcDirichletBurtonMiller; the DtN map is the Padé square root
    of bem/osrc.py, the inverse counterpart of the rigid body's NtD map). The scattered field
    is p_s = -SL λ and F = -SL_inf λ.
    """

    kind = "pressure_release"
    name = "osrc_burton_miller_dirichlet"
    unknown = "normal derivative of the total pressure"
    operators = ("single_layer", "adjoint_double_layer")  # V and K', in this order

    def preconditioner(self, space, k: float, solver: dict, mass=None, stiffness=None):
        """The OSRC DtN map at wavenumber k (settings `solver.osrc`), factorised once."""
        from .osrc import OsrcDtN  # noqa: PLC0415

        return OsrcDtN(space, k, mass=mass, stiffness=stiffness, **_osrc_options(solver))

    def _system(self, space, k, operators, mass, coupling, xp):
        from .burton_miller import OsrcDirichletBurtonMiller  # noqa: PLC0415

        return OsrcDirichletBurtonMiller(*(operators[n] for n in self.operators), mass, coupling,
                                         xp=xp)

    def far_field(self, space, directions, k: float, backend="cpu"):
        from .potentials import single_layer_far_field  # noqa: PLC0415

        return -single_layer_far_field(space, directions, k, backend=backend)

    def potential(self, space, points, k: float, backend="cpu", order=None):
        from .potentials import single_layer  # noqa: PLC0415

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
    with the rigid body's OSRC NtD map N as coupling (bem/burton_miller.py,
    OsrcImpedanceBurtonMiller says why it needs no other preconditioner); beta = 0 is the
    rigid system. F = DL_inf p + ik beta SL_inf p.
    """

    kind = "impedance"
    name = "osrc_burton_miller_impedance"
    operators = ("double_layer", "hypersingular", "single_layer", "adjoint_double_layer")
    keys = frozenset({"admittance"})

    def __init__(self, boundary: dict | None = None, where: str = "boundary",
                 medium: dict | None = None):
        from ..reference.impedance_sphere import admittance_value  # noqa: PLC0415

        super().__init__(boundary, where, medium)
        if "admittance" not in self.boundary:
            raise ConfigError(f"{where}.admittance: required for boundary kind 'impedance' "
                              "(the normalised admittance beta as [re, im])")
        try:
            self.admittance = admittance_value(self.boundary["admittance"])
        except ConfigError as exc:
            raise ConfigError(f"{where}.{exc}") from None

    def operator_specs(self, k: float, operator_format: str) -> dict:
        return {name: (name, k) for name in self.operators if name != "adjoint_double_layer"}

    def _system(self, space, k, operators, mass, coupling, xp):
        from .burton_miller import OsrcImpedanceBurtonMiller  # noqa: PLC0415
        from .transmission import adjoint_of  # noqa: PLC0415

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

    def far_field(self, space, directions, k: float, backend="cpu"):
        from .potentials import double_layer_far_field, single_layer_far_field  # noqa: PLC0415

        return self._with_single_layer(double_layer_far_field, single_layer_far_field, space,
                                       directions, k, backend)

    def potential(self, space, points, k: float, backend="cpu", order=None):
        from .potentials import double_layer, single_layer  # noqa: PLC0415

        return self._with_single_layer(double_layer, single_layer, space, points, k, backend,
                                       order)


class FluidMuller(SoundHardBurtonMiller):
    """Homogeneous fluid body (density ratio g, sound-speed ratio h; inside k1 = k / h):
    p and (1/rho) dp/dn continuous across the surface. Müller's second-kind transmission
    formulation (Müller 1969; Kleinman & Martin 1988), bem/transmission.py.

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
    (bem/muller_preconditioner.py, `solver.fluid_preconditioner`, on by default while its
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

    def __init__(self, boundary: dict | None = None, where: str = "boundary",
                 medium: dict | None = None):
        from ..reference.fluid_sphere import fluid_contrasts  # noqa: PLC0415

        super().__init__(boundary, where, medium)
        self.density_ratio, self.sound_speed_ratio = fluid_contrasts(self.boundary, medium,
                                                                     where)
        self.absorption = absorption_of(self.boundary, where)

    @property
    def wavenumber_factor(self) -> complex:
        """k1 / k: 1 / h, times (1 + i delta) with absorption (reference/absorption.py)."""
        from ..reference.absorption import loss_factor  # noqa: PLC0415

        return (1 + 1j * loss_factor(self.absorption)) / self.sound_speed_ratio

    def operator_specs(self, k: float, operator_format: str) -> dict:
        names = [n for n in self.operators if n != "adjoint_double_layer"]  # K' = K^T
        k1 = k * self.wavenumber_factor
        return {f"{self._symbols[n]}{i}": (n, kk) for i, kk in enumerate(
            (k, k1 if k1.imag else k1.real)) for n in names}

    def system(self, space, k: float, operators: dict, solver: dict, xp=np):
        """The Müller system (bem/transmission.py) for the operators of `operator_specs`,
        right-preconditioned as `solver.fluid_preconditioner` says (auto: the
        block-triangular preconditioner of bem/muller_preconditioner.py for a body of high
        impedance contrast, g h below 1/5 or above 5, while its dense factors take at most
        half the free memory; else none)."""
        from .muller_preconditioner import chosen, factor_dtype  # noqa: PLC0415
        from .osrc import mass_and_stiffness  # noqa: PLC0415
        from .transmission import MullerTransmission  # noqa: PLC0415

        mass, _ = mass_and_stiffness(space)
        itemsize = factor_dtype(operators["K0"]).itemsize
        setting = solver.get("fluid_preconditioner", "auto")
        name = chosen(setting, space.n_dofs, itemsize,
                      _free_bytes(solver, xp) if setting == "auto" else np.inf,
                      self.density_ratio * self.sound_speed_ratio)
        return MullerTransmission(operators, mass, k, self.density_ratio, xp=xp,
                                  preconditioner=name)

    def _traces(self, double, single, space, points, k, backend, order=None):
        """[DL, -k SL]: the potential (or far field) of (u, w)."""
        from ..backend import Backend, get_backend  # noqa: PLC0415
        from .transmission import stacked  # noqa: PLC0415

        be = backend if isinstance(backend, Backend) else get_backend(backend)
        return stacked(be.xp, double(space, points, k, order=order, backend=be),
                       -k * single(space, points, k, order=order, backend=be))

    def far_field(self, space, directions, k: float, backend="cpu"):
        from .potentials import double_layer_far_field, single_layer_far_field  # noqa: PLC0415

        return self._traces(double_layer_far_field, single_layer_far_field, space, directions,
                            k, backend)

    def potential(self, space, points, k: float, backend="cpu", order=None):
        from .potentials import double_layer, single_layer  # noqa: PLC0415

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
        out["boundary_given"] = json.dumps(self.boundary, sort_keys=True)
        return out


def _free_bytes(solver: dict, xp) -> float:
    """The memory free for the fluid preconditioner's factors: the solve's figure where it
    gives one (the least over the ranks of a solve on several, solve/parallel.py)."""
    from .muller_preconditioner import free_bytes  # noqa: PLC0415

    return solver.get("free_bytes") or free_bytes(xp)


def sub_space(space, surfaces):
    """(P1 space of the given surfaces of a union mesh, in increasing order, and the global
    dofs of its dofs): the union's vertex values are its dofs, each surface's contiguous."""
    from ..surface import SurfaceMesh  # noqa: PLC0415
    from . import spaces  # noqa: PLC0415

    mesh = space.mesh
    surfaces = sorted(surfaces)
    if len(surfaces) == mesh.n_surfaces:
        return space, np.arange(space.n_dofs)
    part = SurfaceMesh.union([mesh.surface(i) for i in surfaces])
    dofs = np.concatenate([np.arange(space.n_dofs)[mesh.surface_vertices(i)] for i in surfaces])
    return spaces.p1(part), dofs


class NestedTransmission(FluidMuller):
    """Nested bodies (config `inside`): the multi-domain transmission system of
    bem/nested.py, one pair of traces per interface, on the union mesh of every body's
    surface in the body tree's order. The outer body is a fluid; the bodies inside are
    fluids, or rigid or pressure-release cores. P1 on every surface; the operators V, K, W
    of each region at its own wavenumber on the surfaces that bound it (the medium's on
    every surface: they also give the incident field's identities in the data)."""

    kind = "nested"
    name = "multidomain_transmission"
    unknown = "p - p_inc then ((1/g) dp/dn - dp_inc/dn) / k on every surface"
    operators = ("single_layer", "double_layer", "hypersingular")

    def __init__(self, bodies, medium: dict | None = None):
        """`bodies`: the body tree flat, in surface order, each {"parent": index or -1,
        "boundary": block, "where": config path} (geometry.bodies.body_tree's order)."""
        from .nested import interfaces_and_regions  # noqa: PLC0415

        outer = bodies[0]
        super().__init__(outer["boundary"], f"{outer['where']}.boundary", medium)
        self.bodies = [{**outer, "boundary": self.boundary}]
        specs = [(-1, "fluid", self.density_ratio, self.wavenumber_factor)]
        for body in bodies[1:]:
            boundary = {"kind": "rigid", **(body["boundary"] or {})}
            if boundary["kind"] not in INNER_KINDS:
                raise ConfigError(f"{body['where']}.boundary.kind = {boundary['kind']!r}: a "
                                  f"body inside another must be one of {', '.join(INNER_KINDS)}")
            form = formulation_for(boundary, f"{body['where']}.boundary", medium)
            self.bodies.append({**body, "boundary": form.boundary, "formulation": form})
            fluid = form.kind == "fluid"
            specs.append((body["parent"], form.kind, form.density_ratio if fluid else None,
                          form.wavenumber_factor if fluid else None))
        self.interfaces, self.regions = interfaces_and_regions(specs)

    def n_unknowns(self, space) -> int:
        return 2 * space.n_dofs

    def _region_wavenumbers(self, k):
        return [k * complex(r.wavenumber_factor) for r in self.regions]

    def operator_specs(self, k: float, operator_format: str) -> dict:
        """{key: (operator, wavenumber, surfaces)}: V, K, W of every region on its
        surfaces (nested.region_surfaces)."""
        from .nested import region_surfaces  # noqa: PLC0415

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

    def system(self, space, k: float, operators: dict, solver: dict, xp=np):
        from .nested import MultiDomainTransmission, region_surfaces  # noqa: PLC0415
        from .osrc import OsrcDtN, OsrcNtD, mass_and_stiffness  # noqa: PLC0415

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
            couplings[face.index] = cls(core, k_o, **_osrc_options(solver))
        system = MultiDomainTransmission(self.interfaces, self.regions, ops, dofs,
                                         surface_of_dof, mass, k, couplings, core_dofs, xp=xp)
        system.preconditioners = self._interface_preconditioners(system, k, solver, xp)
        system.__dict__.pop("_dense", None)  # the dense blocks were for the factors only
        return system

    def _interface_preconditioners(self, system, k, solver, xp) -> dict:
        """{surface: (its dofs, BlockTriangular)} for the fluid interfaces that
        `solver.fluid_preconditioner` picks (auto: high impedance contrast between the two
        sides, factors within half the free memory), each from its own diagonal blocks: the
        interface's rows are the single-body Müller system with g = g_i / g_o and k g_o
        (bem/nested.py), so the single body's preconditioner serves it unchanged."""
        from .muller_preconditioner import BlockTriangular, chosen, factor_dtype  # noqa: PLC0415

        setting = solver.get("fluid_preconditioner", "auto")
        out = {}
        for face in self.interfaces:
            if face.kind != "fluid":
                continue
            outer, inner = self.regions[face.outer], self.regions[face.inner]
            idx = np.flatnonzero(system.surface_of_dof == face.index)
            g = inner.density_ratio / outer.density_ratio
            h = abs(outer.wavenumber_factor / inner.wavenumber_factor)
            dtype = factor_dtype(system.ops[face.outer]["K"])
            name = chosen(setting, len(idx), dtype.itemsize,
                          _free_bytes(solver, xp) if setting == "auto" else np.inf, g * h)
            if name != "block_triangular":
                continue
            blocks = {}
            for sym, region in (("0", face.outer), ("1", face.inner)):
                pos = np.searchsorted(system.dofs[region], idx)
                for name_ in ("K", "W"):
                    blocks[f"{name_}{sym}"] = system.dense_block(region, name_, pos)
            out[face.index] = (idx, BlockTriangular(
                blocks, system.mass[idx][:, idx], k * outer.density_ratio, g,
                lambda op, x: op @ x, np, dtype))
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

    def far_field(self, space, directions, k: float, backend="cpu"):
        from ..backend import Backend, get_backend  # noqa: PLC0415

        be = backend if isinstance(backend, Backend) else get_backend(backend)
        return self._outer_only(super().far_field(space, directions, k, be), space, be.xp)

    def potential(self, space, points, k: float, backend="cpu", order=None):
        from ..backend import Backend, get_backend  # noqa: PLC0415

        be = backend if isinstance(backend, Backend) else get_backend(backend)
        return self._outer_only(super().potential(space, points, k, be, order), space, be.xp)

    def record(self) -> dict:
        out = super().record()
        out["formulation"] = self.name
        resolved = [json.loads(out["boundary"])] + [
            json.loads(b["formulation"].record()["boundary"]) for b in self.bodies[1:]]
        out["bodies"] = json.dumps([{"parent": b["parent"], "boundary": r, "where": b["where"]}
                                    for b, r in zip(self.bodies, resolved)], sort_keys=True)
        return out


FORMULATIONS = {cls.kind: cls for cls in (SoundHardBurtonMiller, PressureReleaseBurtonMiller,
                                           FluidMuller, ImpedanceBurtonMiller)}


def formulation_for(boundary: dict | None = None, where: str = "boundary",
                    medium: dict | None = None):
    """The formulation of a case's `boundary` block (None: rigid). `where` names the block
    in error messages (e.g. cases.ball.boundary); `medium` (density, sound_speed; else the
    defaults) turns a fluid body's absolute density and sound speed into contrasts."""
    boundary = dict(boundary or {})
    kind = boundary.get("kind", "rigid")
    if kind not in BOUNDARY_KINDS:
        raise ConfigError(f"{where}.kind = {kind!r}: must be one of {', '.join(BOUNDARY_KINDS)}")
    cls = FORMULATIONS[kind]
    foreign = sorted(set(boundary) - {"kind"} - cls.keys)
    if foreign:
        raise ConfigError(f"{where}.{foreign[0]} = {boundary[foreign[0]]!r}: not a key of "
                          f"boundary kind {kind!r}")
    return cls(boundary, where, medium)


def formulation_for_case(case: dict, medium: dict | None = None, where: str = "case"):
    """The formulation of a case: its boundary's, or the nested system where the case holds
    bodies `inside` (geometry/bodies.py checks the tree)."""
    from ..geometry.bodies import body_tree  # noqa: PLC0415

    if not case.get("inside"):
        return formulation_for(case.get("boundary"), f"{where}.boundary", medium)
    bodies = body_tree(case, {**defaults.MEDIUM, **(medium or {})}, where)
    return NestedTransmission([{"parent": b.parent, "boundary": b.boundary, "where": b.where}
                               for b in bodies], medium)


def formulation_of_record(solution: dict):
    """The formulation that wrote a solution (records.read_solution); files without a
    `boundary` attribute are rigid-body solutions."""
    boundary = json.loads(solution.get("boundary", '{"kind": "rigid"}'))
    if solution.get("bodies"):  # nested: the tree as the records hold it
        return NestedTransmission(json.loads(solution["bodies"]))
    form = formulation_for(boundary, f"{solution.get('path', 'solution')}: boundary")
    if solution.get("formulation", form.name) != form.name:
        raise WavescatError(f"{solution.get('path', 'solution')}: formulation "
                          f"{solution['formulation']!r} does not match boundary kind "
                          f"{form.kind!r} ({form.name})")
    return form
