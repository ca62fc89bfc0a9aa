"""gmsh volume meshes for the DG runs: a box, and a box or sphere around a body (a hole, or a
second region for a fluid body).

gmsh is imported lazily (through `geometry.gmsh_model.gmsh_session`), so this module imports
on machines without gmsh.
"""
from __future__ import annotations

import numpy as np

from ...errors import InputError, MeshError
from ...geometry.gmsh_model import gmsh_session
from ...geometry.volume import match_volume
from ...surface import SurfaceMesh
from .mesh import FACE_VERTICES, TetMesh, signed_volumes


def _tet_mesh_from_model(gmsh, what: str, regions: dict | None = None):
    """The model's tetrahedra; with regions {volume tag: region}, (mesh, region of each tet)."""
    try:
        gmsh.model.mesh.generate(3)
    except Exception as exc:
        raise MeshError(f"gmsh could not mesh the {what}: {exc}") from exc
    node_tags, coords, _ = gmsh.model.mesh.getNodes()
    index = np.full(int(node_tags.max()) + 1, -1, dtype=np.int64)
    index[node_tags.astype(np.int64)] = np.arange(len(node_tags))
    parts = [(r, gmsh.model.mesh.getElementsByType(4, tag)[1]) for tag, r in (regions or {-1: 0}).items()]
    tet_nodes = np.concatenate([np.asarray(t, dtype=np.int64) for _, t in parts])  # 4-node tetrahedra
    region = np.concatenate([np.full(len(t) // 4, r, np.int64) for r, t in parts])
    tets = index[tet_nodes].reshape(-1, 4)
    vertices = np.asarray(coords, dtype=float).reshape(-1, 3)
    used = np.unique(tets)
    remap = np.full(len(vertices), -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    vertices, tets = vertices[used], remap[tets]
    flip = signed_volumes(vertices, tets) < 0
    tets[flip] = tets[flip][:, [0, 2, 1, 3]]
    return TetMesh(vertices, tets) if regions is None else (TetMesh(vertices, tets), region)


def _size_options(gmsh, h_max: float) -> None:
    gmsh.option.setNumber("Mesh.MeshSizeMax", h_max)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 0)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", 0)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 0)
    gmsh.option.setNumber("Mesh.Algorithm3D", 1)  # Delaunay
    gmsh.option.setNumber("Mesh.Optimize", 1)
    # the worst element sets the time step: smoothing and Netgen's optimiser take the largest
    # face-to-volume ratio of a sphere's shell mesh from 24 to 17 (median 4.3)
    gmsh.option.setNumber("Mesh.Smoothing", 10)
    gmsh.option.setNumber("Mesh.OptimizeNetgen", 1)


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


_AXES = np.array([(1, 0, 0), (0, 1, 0), (-1, 0, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], float)


def _octant_ellipsoid(geo, center, half_axes) -> list[int]:
    """The eight octant patches of an ellipsoid (a sphere where the half-axes are equal) in
    gmsh's built-in kernel, bounded by its quarter circles or ellipses in the coordinate planes
    (as geometry/sphere.py meshes the BEM's spheres): an OpenCASCADE sphere's poles leave tiny
    surface triangles whose needle-shaped tetrahedra set a time step about twice as small. A
    spheroid's filled patches lie within 2e-5 of its half-axes of the surface."""
    center, half_axes = np.asarray(center, float), np.asarray(half_axes, float)
    sphere = np.ptp(half_axes) == 0
    middle = geo.addPoint(*center)
    extent = [half_axes[np.argmax(np.abs(a))] for a in _AXES]
    points = [geo.addPoint(*(center + e * a)) for e, a in zip(extent, _AXES)]
    arcs = {}

    def arc(i, j):
        if (i, j) not in arcs:
            if extent[i] == extent[j]:
                arcs[(i, j)] = geo.addCircleArc(points[i], middle, points[j])
            else:  # through the end on the major axis
                major = points[i] if extent[i] > extent[j] else points[j]
                arcs[(i, j)] = geo.addEllipseArc(points[i], middle, major, points[j])
        return arcs[(i, j)]

    patches = []
    for i in range(4):  # equator arc (i, i+1) closed over each pole
        j = (i + 1) % 4
        for pole in (4, 5):
            loop = geo.addCurveLoop([arc(i, j), arc(j, pole), arc(i, pole)], reorient=True)
            patches.append(geo.addSurfaceFilling([loop], sphereCenterTag=middle if sphere else -1))
    return patches


def scattering_volume_mesh(body, outer_size: float, h_inner: float, h_outer: float,
                           outer: str = "sphere", h_fill: float | None = None,
                           sponge: tuple[float, float] | None = None):
    """Tetrahedra around `body` (scatterer.Body) inside an outer sphere of radius `outer_size`
    or a cube of half-width `outer_size` about its centre; element size growing linearly with
    the distance from the body, from h_inner at it to h_outer at the outer boundary, or with
    sponge = (start, h_far) to h_outer at the distance `start` and on to h_far at the outer
    boundary (the sponge layer, which needs to absorb, not to resolve). h_fill: the body is
    meshed too (a fluid body), elements of at most this size, conforming at its surface.
    Returns (mesh, regions): region 0 outside, 1 inside the body."""
    if outer not in ("sphere", "box"):
        raise InputError(f"outer boundary = {outer!r}: must be sphere or box")
    for name, value in (("h_inner", h_inner), ("h_outer", h_outer), ("h_fill", h_fill or 1.0)):
        if not value > 0:
            raise InputError(f"{name} = {value!r}: must be positive")
    r0 = body.inner()
    if not outer_size > body.extent():
        raise InputError(f"outer_size = {outer_size!r}: must exceed the body's extent {body.extent():.4g}")
    c = body.center
    with gmsh_session() as gmsh:
        inside = None
        if body.shape in ("sphere", "spheroid") and outer == "sphere":
            geo = gmsh.model.geo
            hole = geo.addSurfaceLoop(_octant_ellipsoid(geo, c, body.half_axes()))
            geo.addVolume([geo.addSurfaceLoop(_octant_ellipsoid(geo, c, np.full(3, outer_size))), hole])
            if h_fill:
                inside = geo.addVolume([hole])
            geo.synchronize()
        else:
            occ = gmsh.model.occ
            hole = body.occ_volume(gmsh)
            if outer == "sphere":
                dom = occ.addSphere(*c, outer_size)
            else:
                dom = occ.addBox(*(c - outer_size), 2 * outer_size, 2 * outer_size, 2 * outer_size)
            if h_fill:
                _, pieces = occ.fragment([(3, dom)], [(3, hole)])
                (inside,) = [tag for _, tag in pieces[1]]  # the body, whole inside the domain
            else:
                occ.cut([(3, dom)], [(3, hole)])
            occ.synchronize()
        _size_options(gmsh, max(h_inner, h_outer, (sponge or (0, 0))[1]))
        fields = gmsh.model.mesh.field
        grow = fields.add("MathEval")
        rr = f"Sqrt((x-({c[0]}))^2+(y-({c[1]}))^2+(z-({c[2]}))^2)"
        start, h_far = sponge or (outer_size, h_outer)
        formula = f"{h_inner}+({h_outer}-{h_inner})*Min(1,Max(0,({rr}-{r0})/({start}-{r0})))"
        if start < outer_size:
            formula += f"+({h_far}-{h_outer})*Min(1,Max(0,({rr}-{start})/({outer_size}-{start})))"
        fields.setString(grow, "F", formula)
        volumes = [tag for _, tag in gmsh.model.getEntities(3)]
        regions = {tag: 0 for tag in volumes}
        if h_fill:
            regions[inside] = 1
            fill = fields.add("MathEval")
            fields.setString(fill, "F", f"{h_fill}")
            restrict = fields.add("Restrict")
            fields.setNumber(restrict, "InField", fill)
            fields.setNumbers(restrict, "VolumesList", [inside])
            smallest = fields.add("Min")
            fields.setNumbers(smallest, "FieldsList", [grow, restrict])
            grow = smallest
        fields.setAsBackgroundMesh(grow)
        mesh, regions = _tet_mesh_from_model(gmsh, f"{body.shape} in a {outer}", regions)
    return (mesh if body.shape == "box" else match_body_volume(mesh, regions, body)), regions


def body_surface(mesh: TetMesh, regions: np.ndarray, body) -> np.ndarray:
    """The triangles (m, 3) of the body's surface in the mesh, oriented out of the body: the
    faces between the regions, or the faces of the hole."""
    k = mesh.n_elements
    faces = mesh.tets[:, FACE_VERTICES].reshape(-1, 3)
    key = np.sort(faces, axis=1)
    _, inverse, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    element = np.repeat(np.arange(k), 4)
    if (regions == 1).any():  # a fluid body: its own elements' faces towards region 0
        shared = counts[inverse] == 2
        other = np.empty(4 * k, np.int64)
        order = np.argsort(inverse, kind="stable")
        pairs = order[shared[order]].reshape(-1, 2)
        other[pairs[:, 0]], other[pairs[:, 1]] = element[pairs[:, 1]], element[pairs[:, 0]]
        pick = shared & (regions[element] == 1) & (regions[np.where(shared, other, 0)] == 0)
        outward = True  # an inside element's outward face normal leaves the body
    else:  # the hole: boundary faces nearer the body than the outer boundary
        centroid = mesh.vertices[faces].mean(axis=1)
        near = np.linalg.norm(centroid - body.center, axis=1) < 2 * body.extent()
        pick = (counts[inverse] == 1) & near
        outward = False  # a fluid element's outward normal enters the hole
    tri, el = faces[pick], element[pick]
    x = mesh.vertices[tri]
    normal = np.cross(x[:, 1] - x[:, 0], x[:, 2] - x[:, 0])
    away = np.einsum("ij,ij->i", normal, x.mean(axis=1) - mesh.vertices[mesh.tets[el]].mean(axis=1)) > 0
    flip = away != outward
    tri[flip] = tri[flip][:, [0, 2, 1]]
    return tri


def match_body_volume(mesh: TetMesh, regions: np.ndarray, body) -> TetMesh:
    """The mesh with the body's surface vertices offset along their normals so that the
    surface encloses the body's exact volume (geometry.volume.match_volume: flat facets
    inscribed in a curved body enclose less, about h^2 / 8a too little radius), as the BEM's
    `mesh.match_volume` does. The offset is a fraction of the chord sag: no element inverts."""
    tri = body_surface(mesh, regions, body)
    used = np.unique(tri)
    local = np.searchsorted(used, tri)
    moved, _ = match_volume(SurfaceMesh(mesh.vertices[used], local), body.exact_volume())
    vertices = mesh.vertices.copy()
    vertices[used] = moved.vertices
    return TetMesh(vertices, mesh.tets)
