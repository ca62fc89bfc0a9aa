"""Rectangular box of `size` [lx, ly, lz] centred at `center`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..surface import SurfaceMesh
from .gmsh_model import gmsh_session, mesh_occ_model
from .params import vector3
from .shape import Geometry
from .sizing import MeshOptions


@dataclass(frozen=True, kw_only=True)
class Box(Geometry):
    """A box of `size` (lx, ly, lz) along x, y, z centred at `center`; flat, so the geometry
    sizing leaves it at the frequency's elements."""

    kind: ClassVar[str] = "box"
    size: tuple[float, float, float]

    def __post_init__(self):
        super().__post_init__()
        self._set("size", vector3("size", self.size, positive_entries=True))

    def build(self, options: MeshOptions) -> SurfaceMesh:
        return box(self.size, self.center, options)

    def area(self) -> float:
        x, y, z = self.size
        return 2.0 * (x * y + y * z + x * z)

    def bounding_box(self) -> tuple[list[float], list[float]]:
        return ([c - 0.5 * s for c, s in zip(self.center, self.size)],
                [c + 0.5 * s for c, s in zip(self.center, self.size)])


def box(size, center, options: MeshOptions) -> SurfaceMesh:
    size = np.asarray(size, float)
    corner = np.asarray(center, float) - 0.5 * size
    with gmsh_session(options.verbose) as gmsh:
        gmsh.model.occ.addBox(*corner, *size)
        return mesh_occ_model(gmsh, options, "box")
