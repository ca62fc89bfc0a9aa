"""Rectangular box of `size` [lx, ly, lz] centred at `center`."""
from __future__ import annotations

from ..surface import SurfaceMesh
from .gmsh_model import gmsh_session, mesh_occ_model
from .params import center, vector3
from .sizing import MeshOptions


def box(geometry: dict, options: MeshOptions) -> SurfaceMesh:
    size = vector3(geometry, "size", positive_entries=True)
    corner = center(geometry) - 0.5 * size
    with gmsh_session(options.verbose) as gmsh:
        gmsh.model.occ.addBox(*corner, *size)
        return mesh_occ_model(gmsh, options, "box")
