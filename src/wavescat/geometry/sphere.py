"""Sphere of `radius` about `center`, meshed by gmsh (OpenCASCADE)."""
from __future__ import annotations

from ..surface import SurfaceMesh
from .gmsh_model import gmsh_session, mesh_occ_model
from .params import center, positive
from .sizing import MeshOptions


def sphere(geometry: dict, options: MeshOptions) -> SurfaceMesh:
    r = positive(geometry, "radius")
    x0 = center(geometry)
    with gmsh_session(options.verbose) as gmsh:
        gmsh.model.occ.addSphere(*x0, r)
        return mesh_occ_model(gmsh, options, "sphere")

