"""One gmsh session per mesh: quiet, single-threaded, deterministic; and the step that
turns the meshed gmsh model into an outward-oriented `SurfaceMesh`.

gmsh is imported here only, inside functions, so that the package imports on machines
without gmsh (the GPU device).
"""
from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import replace

import numpy as np

from ..errors import MeshError
from ..surface import SurfaceMesh
from .checks import orient_outward
from .sizing import MIN_SIZE_OF_THINNEST, MeshOptions, curvature_sizing

log = logging.getLogger(__name__)

_LOCK = threading.Lock()  # gmsh has one global model per process


@contextlib.contextmanager
def gmsh_session(verbose: bool = False):
    """Initialise gmsh, yield the module, always finalise (also on errors)."""
    try:
        import gmsh
    except ImportError as exc:  # pragma: no cover - gmsh is a dependency
        raise MeshError(f"gmsh is not available: {exc}") from exc
    with _LOCK:
        gmsh.initialize(readConfigFiles=False, interruptible=False)
        try:
            gmsh.option.setNumber("General.Terminal", 1 if verbose else 0)
            gmsh.option.setNumber("General.Verbosity", 4 if verbose else 2)  # 4: info, with "[ 40%] Meshing surface" lines
            # CI has 2 cores shared by 2 test workers; one thread also keeps meshes reproducible.
            gmsh.option.setNumber("General.NumThreads", 1)
            gmsh.option.setNumber("Mesh.MaxNumThreads1D", 1)
            gmsh.option.setNumber("Mesh.MaxNumThreads2D", 1)
            gmsh.option.setNumber("Geometry.OCCParallel", 0)
            gmsh.option.setNumber("Mesh.RandomSeed", 1)
            gmsh.model.add("wavescat")
            yield gmsh
        finally:
            gmsh.finalize()


def apply_mesh_options(gmsh, options: MeshOptions, size_from_points: bool = False) -> None:
    """Global size field: h everywhere, smaller only where curvature asks for it."""
    h = options.h
    gmsh.option.setNumber("Mesh.MeshSizeMax", h)
    gmsh.option.setNumber("Mesh.MeshSizeMin",
                          h * options.min_size_factor if options.curvature_refinement else 0.0)
    gmsh.option.setNumber("Mesh.MeshSizeFromCurvature", options.curvature_refinement)
    gmsh.option.setNumber("Mesh.MeshSizeFromPoints", 1 if size_from_points else 0)
    gmsh.option.setNumber("Mesh.MeshSizeExtendFromBoundary", 1)
    gmsh.option.setNumber("Mesh.Algorithm", 6)  # Frontal-Delaunay: near-equilateral triangles
    gmsh.option.setNumber("Mesh.ElementOrder", 1)


# Frontal-Delaunay works in each surface's parameter plane and overshoots h near the poles
# of doubly curved surfaces (edges up to 2.5 h on a sphere); MeshAdapt keeps them <= 1.4 h
# at a higher cost, so it is used only there.
FLAT_OR_RULED = ("Plane", "Cylinder", "Cone", "Discrete")


def generate_surface_mesh(gmsh, options: MeshOptions, size_from_points: bool = False,
                          adapt_curved: bool = True) -> None:
    """Mesh every surface; `adapt_curved`: MeshAdapt on doubly curved surfaces (above)."""
    apply_mesh_options(gmsh, options, size_from_points)
    for _, tag in gmsh.model.getEntities(2):
        if adapt_curved and not gmsh.model.getType(2, tag).startswith(FLAT_OR_RULED):
            gmsh.model.mesh.setAlgorithm(2, tag, 1)
    try:
        gmsh.model.mesh.generate(2)
    except Exception as exc:
        raise MeshError(f"gmsh could not mesh the surface (h = {options.h:.4g} m): {exc}") from exc


def surface_from_model(gmsh, source: str) -> SurfaceMesh:
    """Collect the triangles of the meshed model. With volumes, only their boundary
    surfaces count (construction leftovers such as a revolved profile are skipped);
    without, every surface. gmsh orients an OpenCASCADE solid's face meshes outward
    already; the checks that follow verify (and if needed repair) orientation."""
    vols = gmsh.model.getEntities(3)
    surfaces = sorted({abs(t) for _, t in gmsh.model.getBoundary(vols, combined=False,
                                                               oriented=False)}) \
        if vols else [tag for _, tag in gmsh.model.getEntities(2)]
    node_tags, coords, _ = gmsh.model.mesh.getNodes()
    if len(node_tags) == 0:
        raise MeshError(f"{source}: gmsh produced no mesh nodes")
    index = np.full(int(node_tags.max()) + 1, -1, dtype=np.int64)
    index[node_tags.astype(np.int64)] = np.arange(len(node_tags))
    blocks = []
    for tag in surfaces:
        types, _, nodes = gmsh.model.mesh.getElements(2, tag)
        for etype, enodes in zip(types, nodes):
            if etype != 2:  # 3-node triangle
                continue
            tri = index[np.asarray(enodes, dtype=np.int64).reshape(-1, 3)]
            blocks.append(tri)
    if not blocks:
        raise MeshError(f"{source}: holds no triangles")
    tri = np.concatenate(blocks)
    used = np.unique(tri)
    remap = np.full(len(node_tags), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    vertices = np.asarray(coords, dtype=np.float64).reshape(-1, 3)[used]
    mesh = SurfaceMesh(vertices, remap[tri], {"source": source})
    # Surface meshes follow each surface's own orientation (built-in kernel, sewn shells);
    # making them agree is gmsh's business, not a defect of the user's input: no warning.
    try:
        mesh, _, flip = orient_outward(mesh, source)
        log.debug("%s: re-oriented %d of %d gmsh triangles", source, int(flip.sum()), len(flip))
    except MeshError:
        pass  # open or non-manifold: check_surface reports it
    return mesh


def occ_volume_area(gmsh) -> tuple[float, float]:
    """Exact volume and area of the synchronised OpenCASCADE solids."""
    occ = gmsh.model.occ
    vols = gmsh.model.getEntities(3)
    faces = {abs(t) for _, t in gmsh.model.getBoundary(vols, combined=False, oriented=False)}
    return (sum(occ.getMass(3, t) for _, t in vols), sum(occ.getMass(2, t) for t in faces))


def size_field(gmsh, expression: str) -> int:
    """A gmsh size field from a formula in x, y, z (evaluated by gmsh, not Python)."""
    tag = gmsh.model.mesh.field.add("MathEval")
    gmsh.model.mesh.field.setString(tag, "F", expression)
    return tag


def box_size_field(gmsh, lo, hi, size: float, outside: float, thickness: float) -> int:
    """`size` inside the box lo..hi, `outside` beyond, graded over `thickness`."""
    tag = gmsh.model.mesh.field.add("Box")
    for name, value in (("VIn", size), ("VOut", outside), ("Thickness", thickness),
                        ("XMin", lo[0]), ("YMin", lo[1]), ("ZMin", lo[2]),
                        ("XMax", hi[0]), ("YMax", hi[1]), ("ZMax", hi[2])):
        gmsh.model.mesh.field.setNumber(tag, name, float(value))
    return tag


def use_size_fields(gmsh, tags: list[int]) -> None:
    """The smallest of `tags` everywhere is the mesh size (capped by Mesh.MeshSizeMax = h)."""
    if not tags:
        return
    tag = tags[0]
    if len(tags) > 1:
        tag = gmsh.model.mesh.field.add("Min")
        gmsh.model.mesh.field.setNumbers(tag, "FieldsList", tags)
    gmsh.model.mesh.field.setAsBackgroundMesh(tag)


def mesh_occ_model(gmsh, options: MeshOptions, source: str, size_fields=None,
                   curvature_sized: bool = False) -> SurfaceMesh:
    """Synchronise the OpenCASCADE model, mesh its surfaces, return the surface mesh with
    the solid's exact volume in `meta["exact_volume"]`. `size_fields(gmsh, volume, area)`:
    the builder's geometry size fields (field tags), used when options ask for them;
    `curvature_sized`: gmsh's curvature sizing instead (sizing.curvature_sizing), for a
    shape known only to OpenCASCADE (a CAD file)."""
    gmsh.model.occ.synchronize()
    volume, area = occ_volume_area(gmsh)
    box = gmsh.model.getBoundingBox(-1, -1)
    thinnest = min(b - a for a, b in zip(box[:3], box[3:]))
    # Elements larger than the body's thinnest extent can crash gmsh (OpenCASCADE spheres).
    options = replace(options, h=min(options.h, thinnest / 2))
    if size_fields is not None and options.volume_error and volume > 0:
        use_size_fields(gmsh, size_fields(gmsh, volume, area))
    if curvature_sized:
        options = curvature_sizing(options, volume, area, MIN_SIZE_OF_THINNEST * thinnest / 2)
    generate_surface_mesh(gmsh, options)
    mesh = surface_from_model(gmsh, source)
    if volume > 0:
        mesh.meta["exact_volume"] = volume
    return mesh
