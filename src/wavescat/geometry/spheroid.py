"""Ellipsoid with `semi_axes` [a, b, c] along x, y, z about `center` (a scaled OCC sphere)."""
from __future__ import annotations

from ..surface import SurfaceMesh
from .gmsh_model import gmsh_session, mesh_occ_model
from .params import center, vector3
from .sizing import MeshOptions


def spheroid(geometry: dict, options: MeshOptions) -> SurfaceMesh:
    a, b, c = vector3(geometry, "semi_axes", positive_entries=True)
    x0 = center(geometry)
    with gmsh_session(options.verbose) as gmsh:
        occ = gmsh.model.occ
        ball = occ.addSphere(*x0, 1.0)
        occ.dilate([(3, ball)], *x0, a, b, c)
        return mesh_occ_model(gmsh, options, "spheroid")
