"""Finite circular cylinder with flat ends: `radius`, `length`, `axis` (default z) and
`center` (the midpoint of the axis), an OpenCASCADE solid.

The two rim circles where the mantle meets the flat ends are curves of the model, so every
triangle edge there lies on the rim (no triangle straddles the edge). Near a right-angled
edge the surface fields of the BEM vary fastest (the Neumann trace of a sound-soft body is
singular there), so the element size falls linearly from h at a distance h to EDGE_FACTOR h
on the rims.

Geometry sizing: the mantle (mean curvature 1 / (2 r)) and its rims get the chord-sag size
of the volume tolerance; the flat ends lose no volume and keep the frequency size inside.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..errors import InputError
from ..surface import SurfaceMesh
from .gmsh_model import gmsh_session, mesh_occ_model, size_field
from .params import positive, vector3
from .shape import Geometry
from .sizing import MeshOptions, sag_size

EDGE_FACTOR = 0.5  # element size on the rims, relative to h


@dataclass(frozen=True, kw_only=True)
class Cylinder(Geometry):
    """A circular cylinder of `radius` and `length` with flat ends, its axis along `axis`
    through `center`."""

    kind: ClassVar[str] = "cylinder"
    radius: float
    length: float
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)

    def __post_init__(self):
        super().__post_init__()
        self._set("radius", positive("radius", self.radius))
        self._set("length", positive("length", self.length))
        self._set("axis", vector3("axis", self.axis))
        if not any(self.axis):
            raise InputError(f"axis = {list(self.axis)!r}: must be a nonzero vector")

    def build(self, options: MeshOptions) -> SurfaceMesh:
        return cylinder(self.radius, self.length, self.axis, self.center, options)

    def area(self) -> float:
        return 2.0 * math.pi * self.radius * (self.radius + self.length)

    def volume_and_curvature(self) -> tuple[float, float]:
        return math.pi * self.radius**2 * self.length, math.pi * self.length

    def box_sides(self) -> list[float]:
        return [2.0 * self.radius, 2.0 * self.radius, self.length]


def cylinder(r: float, length: float, axis, center, options: MeshOptions) -> SurfaceMesh:
    axis = np.asarray(axis, float)
    axis = axis / float(np.linalg.norm(axis))
    base = np.asarray(center, float) - 0.5 * length * axis
    with gmsh_session(options.verbose) as gmsh:
        occ = gmsh.model.occ
        occ.addCylinder(*base, *(length * axis), r)
        occ.synchronize()
        rims = [tag for _, tag in gmsh.model.getEntities(1)
                if gmsh.model.getType(1, tag) == "Circle"]
        mantle = [tag for _, tag in gmsh.model.getEntities(2)
                  if gmsh.model.getType(2, tag) != "Plane"]
        field = gmsh.model.mesh.field
        distance = field.add("Distance")
        field.setNumbers(distance, "CurvesList", rims)
        field.setNumber(distance, "Sampling", 200)
        threshold = field.add("Threshold")
        field.setNumber(threshold, "InField", distance)
        field.setNumber(threshold, "SizeMin", EDGE_FACTOR * options.h)
        field.setNumber(threshold, "SizeMax", options.h)
        field.setNumber(threshold, "DistMin", 0.0)
        field.setNumber(threshold, "DistMax", options.h)
        field.setAsBackgroundMesh(threshold)

        def sizes(gmsh, volume, area):
            h_geo = options.geometry_refinement * sag_size(options.sag(volume, area), 1 / (2 * r))
            curved = field.add("Restrict")
            field.setNumber(curved, "InField", size_field(gmsh, f"{h_geo:.12g}"))
            field.setNumbers(curved, "SurfacesList", mantle)
            field.setNumbers(curved, "CurvesList", rims)
            return [threshold, curved]

        return mesh_occ_model(gmsh, options, "cylinder", sizes)
