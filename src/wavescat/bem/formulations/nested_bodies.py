"""The formulation of nested bodies: a fluid body holding fluids or rigid or
pressure-release cores (the system itself is nested.py's)."""
from __future__ import annotations

import json

import numpy as np

from ...backend import resolve
from ...errors import WavescatError
from ...surface import SurfaceMesh
from ..discretisation import spaces
from .fluid import FluidMuller
from .muller_preconditioner import (PRECONDITIONER_CLASSES, chosen, dense_limit, dof_points,
                                    factor_dtype, restricted)
from .muller_preconditioner import free_bytes as free_bytes_of
from .nested import MultiDomainTransmission, interfaces_and_regions, region_surfaces
from .osrc import OsrcDtN, OsrcNtD, mass_and_stiffness
from .registry import formulation_for
from .rigid import osrc_options


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
            couplings[face.index] = cls(core, k_o, **osrc_options(solver.osrc, group))
        system = MultiDomainTransmission(self.interfaces, self.regions, ops, dofs,
                                         surface_of_dof, mass, k, couplings, core_dofs, xp=xp)
        system.preconditioners = self._interface_preconditioners(system, k, solver, xp,
                                                                 free_bytes, dof_points(space))
        return system

    def _interface_preconditioners(self, system, k, solver, xp, free_bytes=None,
                                   points=None) -> dict:
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
            name = chosen(setting, len(idx), dtype.itemsize, free, g * h, dense_limit(xp))
            if name == "none":
                continue
            blocks = {}  # the interface's own blocks of the regions on either side
            for sym, region in (("0", face.outer), ("1", face.inner)):
                pos = np.searchsorted(system.dofs[region], idx)
                for name_ in ("K", "W"):
                    blocks[f"{name_}{sym}"] = restricted(system.ops[region][name_], pos)
                if name == "hodlr":  # products with K' too (an H-matrix's transpose)
                    blocks[f"Kp{sym}"] = restricted(system.ops[region]["K"].T, pos)
            extra = {"points": points[idx]} if name == "hodlr" else {}
            out[face.index] = (idx, PRECONDITIONER_CLASSES[name](
                blocks, system.mass[idx][:, idx], k * outer.density_ratio, g,
                system._applied_on_host, xp, dtype, **extra))  # noqa: SLF001
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

    def record(self) -> dict:
        out = super().record()
        out["formulation"] = self.name
        resolved = [json.loads(out["boundary"])] + [
            json.loads(form.record()["boundary"]) for _, form in self.bodies[1:]]
        out["bodies"] = json.dumps([{"parent": b.parent, "boundary": r, "where": b.where}
                                    for (b, _), r in zip(self.bodies, resolved)], sort_keys=True)
        return out
