"""gmsh volume meshes for the DG runs: a box, and a box or sphere with a spherical hole.

gmsh is imported lazily (through `geometry.gmsh_model.gmsh_session`), so this module imports
on machines without gmsh.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError, MeshError
from ...geometry.gmsh_model import gmsh_session
from .mesh import TetMesh, signed_volumes


def _tet_mesh_from_model(gmsh, what: str) -> TetMesh:
    try:
        gmsh.model.mesh.generate(3)
    except Exception as exc:
        raise MeshError(f"gmsh could not mesh the {what}: {exc}") from exc
    node_tags, coords, _ = gmsh.model.mesh.getNodes()
    index = np.full(int(node_tags.max()) + 1, -1, dtype=np.int64)
    index[node_tags.astype(np.int64)] = np.arange(len(node_tags))
    _, tet_nodes = gmsh.model.mesh.getElementsByType(4)  # 4-node tetrahedra
    tets = index[np.asarray(tet_nodes, dtype=np.int64)].reshape(-1, 4)
    vertices = np.asarray(coords, dtype=float).reshape(-1, 3)
    used = np.unique(tets)
    remap = np.full(len(vertices), -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    vertices, tets = vertices[used], remap[tets]
    flip = signed_volumes(vertices, tets) < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return TetMesh(vertices, tets)


def _size_options(gmsh, h_max: float) -> None:
    gmsh.option.setNumber("Mesh.MeshSizeMax", h_max)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)
    gmsh.option.setNumber("Mesh.Algorithm3D", 1)  # Delaunay
    gmsh.option.setNumber("Mesh.Optimize", 1)


def box_volume_mesh(h: float, lower=(0.0, 0.0, 0.0), upper=(1.0, 1.0, 1.0)) -> TetMesh:
    """Unstructured tetrahedral mesh of an axis-aligned box with element size h."""
    if not h > 0:
        raise InputError(f"mesh size h = {h!r}: must be positive")
    lower, upper = np.asarray(lower, float), np.asarray(upper, float)
    with gmsh_session() as gmsh:
        gmsh.model.occ.addBox(*lower, *(upper - lower))
        gmsh.model.occ.synchronize()
        _size_options(gmsh, h)
        gmsh.option.setNumber("Mesh.MeshSizeMin", h)
        return _tet_mesh_from_model(gmsh, "box")


def shell_volume_mesh(radius: float, outer_size: float, h_inner: float, h_outer: float,
                      outer: str = "sphere", center=(0.0, 0.0, 0.0)) -> TetMesh:
    """Tetrahedra between a sphere of `radius` (the hole) and an outer sphere of radius
    `outer_size` or a cube of half-width `outer_size`; element size grows linearly with
    the distance from the hole, from h_inner to h_outer."""
    if outer not in ("sphere", "box"):
        raise InputError(f"outer boundary = {outer!r}: must be sphere or box")
    for name, value in (("radius", radius), ("h_inner", h_inner), ("h_outer", h_outer)):
        if not value > 0:
            raise InputError(f"{name} = {value!r}: must be positive")
    if not outer_size > radius:
        raise InputError(f"outer_size = {outer_size!r}: must exceed the hole radius {radius}")
    c = np.asarray(center, float)
    with gmsh_session() as gmsh:
        occ = gmsh.model.occ
        hole = occ.addSphere(*c, radius)
        if outer == "sphere":
            dom = occ.addSphere(*c, outer_size)
        else:
            dom = occ.addBox(*(c - outer_size), 2 * outer_size, 2 * outer_size, 2 * outer_size)
        occ.cut([(3, dom)], [(3, hole)])
        occ.synchronize()
        _size_options(gmsh, max(h_inner, h_outer))
        field = gmsh.model.mesh.field.add("MathEval")
        rr = f"Sqrt((x-({c[0]}))^2+(y-({c[1]}))^2+(z-({c[2]}))^2)"
        gmsh.model.mesh.field.setString(
            field, "F", f"{h_inner}+({h_outer}-{h_inner})*Min(1,Max(0,({rr}-{radius})/({outer_size}-{radius})))")
        gmsh.model.mesh.field.setAsBackgroundMesh(field)
        return _tet_mesh_from_model(gmsh, "spherical shell" if outer == "sphere" else "box with a hole")
