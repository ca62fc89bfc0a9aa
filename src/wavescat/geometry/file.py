"""Geometry from a file: CAD (.step/.stp through OpenCASCADE, gmsh .geo) is meshed at the
case's element size; surface meshes (.stl, .msh) are taken as they are.

A relative `path` is relative to the current working directory. Coordinates are read as
stored and multiplied by `scale` (default 1; 0.001 for a file in millimetres: STEP files
are not converted by their declared unit); then the body is shifted by `center`.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import InputError, MeshError, WavescatError
from ..surface import SurfaceMesh
from .checks import check_surface
from .geo_script import check_geo_script
from .gmsh_model import generate_surface_mesh, gmsh_session, mesh_occ_model, surface_from_model
from .params import positive
from .resolution import mesh_extent
from .shape import Geometry
from .sizing import MeshOptions

log = logging.getLogger(__name__)

CAD_SUFFIXES = (".step", ".stp", ".geo")
MESH_SUFFIXES = (".stl", ".msh")


@dataclass(frozen=True, kw_only=True)
class FileGeometry(Geometry):
    """A body read from `path` (CAD meshed at the case's element size, a stored surface
    mesh used as it is), its coordinates times `scale`, then shifted by `center`."""

    kind: ClassVar[str] = "file"
    path: str
    scale: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        self._set("path", str(self.path))
        self._set("scale", positive("scale", self.scale))
        suffix = Path(self.path).suffix.lower()
        if suffix not in CAD_SUFFIXES + MESH_SUFFIXES:
            raise InputError(f"path = {self.path!r}: unsupported file type (use one of "
                             f"{', '.join(sorted(CAD_SUFFIXES + MESH_SUFFIXES))})")

    def build(self, options: MeshOptions) -> SurfaceMesh:
        return read_file(Path(self.path), self.scale, self.center, options)

    @property
    def label(self) -> str:
        return self.path

    def files(self) -> list[str]:
        return [self.path]

    def check_files(self, base_dir: Path) -> None:
        """The file is there; a .geo script is safe to run; a stored mesh (.stl, .msh up to
        QUICK_MESH_FILE_BYTES) reads and bounds a body (closed, manifold, orientable: the
        mesh job's check_surface), so a file with a hole is refused before any job starts.
        CAD files are meshed, and their meshes checked, by the mesh job."""
        path = Path(self.path)
        full = path if path.is_absolute() else base_dir / path
        if not full.is_file():
            raise InputError(f"path = {self.path!r}: file not found (relative paths are "
                             f"taken from {base_dir})")
        try:
            if path.suffix.lower() == ".geo":
                check_geo_script(full)
            checked_mesh(full, f"path = {self.path!r}")
        except MeshError as exc:
            text = str(exc)
            raise InputError(text if text.startswith("path = ")
                             else f"path = {self.path!r}: {text}") from None

    def closed_bodies(self) -> int | None:
        """How many closed surfaces the stored mesh holds (None: not read before meshing)."""
        path = Path(self.path)
        mesh = checked_mesh(path, f"path = {self.path!r}") if path.is_file() else None
        return None if mesh is None else int(mesh.meta["closed_bodies"])

    def stored_mesh(self) -> SurfaceMesh | None:
        """The stored mesh (.stl, .msh no larger than QUICK_MESH_FILE_BYTES), scaled and
        shifted as the mesh job would; None for CAD or a larger file."""
        return stored_file_mesh(self)

    def facts(self) -> dict | None:
        """file_facts: extent, area and stored vertices, read quickly (None: not read)."""
        return file_facts(self)

    def area(self) -> float | None:
        facts = self.facts()
        return facts["area"] if facts and facts.get("area") else None

    def vertex_count(self) -> int | None:
        facts = self.facts()
        return int(facts["vertices"]) if facts and facts.get("vertices") else None

    def box_sides(self) -> list[float] | None:
        facts = self.facts()
        return [float(s) for s in facts["extent"]] if facts else None


def read_triangle_file(path: Path) -> SurfaceMesh:
    """Triangles of an .stl or .msh file through meshio (other cells are ignored)."""
    import meshio

    fmt = "gmsh" if path.suffix.lower() == ".msh" else "stl"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # meshio's binary-STL size probe
            m = meshio.read(path, file_format=fmt)
    except (Exception, SystemExit) as exc:  # meshio may sys.exit on unreadable input
        raise MeshError(f"cannot read mesh file {str(path)!r}: {exc}") from exc
    tris = [np.asarray(c.data) for c in m.cells if c.type == "triangle"]
    if not tris or sum(len(t) for t in tris) == 0:
        raise MeshError(f"mesh file {str(path)!r} holds no triangles")
    pts = np.asarray(m.points, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] not in (2, 3):
        raise MeshError(f"mesh file {str(path)!r}: points of shape {pts.shape} are not 3-D")
    if pts.shape[1] == 2:
        pts = np.column_stack([pts, np.zeros(len(pts))])
    tri = np.concatenate(tris).astype(np.int64)
    used, tri = np.unique(tri, return_inverse=True)  # drop nodes no triangle uses
    return SurfaceMesh(pts[used], tri.reshape(-1, 3), {"source": str(path), "h_applied": False})


def _mesh_cad(path: Path, options: MeshOptions) -> SurfaceMesh:
    if path.suffix.lower() == ".geo":
        check_geo_script(path)  # before gmsh runs a line of it
    with gmsh_session(options.verbose) as gmsh:
        try:
            if path.suffix.lower() == ".geo":
                gmsh.open(str(path))
            else:
                gmsh.model.occ.importShapes(str(path))
        except Exception as exc:
            raise MeshError(f"cannot read geometry file {str(path)!r}: {exc}") from exc
        if path.suffix.lower() == ".geo":
            gmsh.model.geo.synchronize()
            gmsh.model.occ.synchronize()
            if not gmsh.model.getEntities(2):
                raise MeshError(f"geometry file {str(path)!r} defines no surfaces")
            # A .geo may set its own point sizes; h still caps them.
            generate_surface_mesh(gmsh, options, size_from_points=True)
            return surface_from_model(gmsh, str(path))
        gmsh.model.occ.synchronize()
        if not gmsh.model.getEntities(2):
            raise MeshError(f"geometry file {str(path)!r} holds no surfaces")
        if len(gmsh.model.getEntities(3)) > 1:
            # Several solids touching or overlapping: one body without internal faces.
            vols = gmsh.model.getEntities(3)
            gmsh.model.occ.fuse(vols[:1], vols[1:])
        # sized for the volume tolerance as the built-in kinds are, so that the mesher's
        # second try (geometry_refinement) meshes finer
        return mesh_occ_model(gmsh, options, str(path), curvature_sized=True)


def read_file(path: Path, scale: float, center, options: MeshOptions) -> SurfaceMesh:
    """The surface of a geometry file (relative to the working directory), scaled, shifted."""
    if not path.is_file():
        raise InputError(f"path = {str(path)!r}: no such file (relative to {Path.cwd()})")
    if path.suffix.lower() in CAD_SUFFIXES:
        # Mesh in the file's units so that h is h metres after scaling.
        mesh = _mesh_cad(path, replace(options, h=options.h / scale))
    else:
        mesh = read_triangle_file(path)
    x0 = np.asarray(center, float)
    if scale != 1.0 or np.any(x0):
        mesh = SurfaceMesh(scale * mesh.vertices + x0, mesh.triangles, mesh.meta)
    return mesh


# -- read before any job starts -------------------------------------------------------------
# A stored mesh file (.stl, .msh) up to this size is read when the config is checked, so a
# mesh far too coarse for its wavelengths (a file in millimetres read as metres) is refused
# before any job starts; larger files and CAD files are checked by the mesh job.
QUICK_MESH_FILE_BYTES = 32 * 2**20
_FILE_MESHES: dict = {}


def _quick_mesh(path: Path) -> SurfaceMesh | None:
    """The triangles of a stored mesh file no larger than QUICK_MESH_FILE_BYTES, read once
    per file version; None for CAD or a larger file."""
    if path.suffix.lower() not in MESH_SUFFIXES or not path.is_file() \
            or path.stat().st_size > QUICK_MESH_FILE_BYTES:
        return None
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    if key not in _FILE_MESHES:
        _FILE_MESHES[key] = read_triangle_file(path)
    return _FILE_MESHES[key]


def checked_mesh(path: Path, source: str) -> SurfaceMesh | None:
    """A stored mesh file (as _quick_mesh) through check_surface, once per file version:
    MeshError (message starting with `source`) where it does not bound a body; its meta
    "closed_bodies" counts the disjoint closed surfaces. None for CAD or a larger file."""
    mesh = _quick_mesh(path)
    if mesh is None:
        return None
    key = ("checked", str(path.resolve()), path.stat().st_mtime_ns, source)
    if key not in _FILE_MESHES:
        try:
            _FILE_MESHES[key] = check_surface(mesh, source)
        except MeshError as exc:
            _FILE_MESHES[key] = exc
    if isinstance(_FILE_MESHES[key], MeshError):
        raise _FILE_MESHES[key]
    return _FILE_MESHES[key]


def stored_file_mesh(geometry: FileGeometry):
    """The SurfaceMesh of a `file` geometry's stored mesh (.stl or .msh no larger than
    QUICK_MESH_FILE_BYTES), scaled and shifted as the mesh job would; None otherwise."""
    mesh = _quick_mesh(Path(geometry.path))
    if mesh is None:
        return None
    return SurfaceMesh(geometry.scale * mesh.vertices + np.asarray(geometry.center, float),
                       mesh.triangles, mesh.meta)


def file_facts(geometry: FileGeometry) -> dict | None:
    """What a `file` geometry is, read quickly and in metres (geometry.scale applied):
    {"extent": bounding-box sides, "area": surface area, "vertices": vertex count of a stored
    mesh (None for CAD, which is meshed at h)}. Stored meshes up to QUICK_MESH_FILE_BYTES and
    STEP files (OpenCASCADE, no meshing) are read; None for others or a file that does not
    read (the mesh job reports that)."""
    try:
        mesh = stored_file_mesh(geometry)
    except WavescatError:
        return None
    if mesh is not None:
        return {"extent": mesh_extent(mesh.vertices), "area": float(mesh.total_area),
                "vertices": int(mesh.n_vertices)}
    path = Path(geometry.path)
    if path.suffix.lower() not in (".step", ".stp") or not path.is_file() \
            or path.stat().st_size > QUICK_MESH_FILE_BYTES:
        return None
    key = ("cad", str(path.resolve()), path.stat().st_mtime_ns)
    if key not in _FILE_MESHES:
        try:
            with gmsh_session() as gmsh:
                gmsh.model.occ.importShapes(str(path))
                gmsh.model.occ.synchronize()
                box = np.asarray(gmsh.model.getBoundingBox(-1, -1), float)
                area = sum(gmsh.model.occ.getMass(2, tag)
                           for _, tag in gmsh.model.getEntities(2))
            _FILE_MESHES[key] = (box[3:] - box[:3], float(area))
        except Exception:  # noqa: BLE001 - unreadable here: the mesh job names the problem
            _FILE_MESHES[key] = None
    if _FILE_MESHES[key] is None:
        return None
    extent, area = _FILE_MESHES[key]
    scale = geometry.scale
    return {"extent": scale * extent, "area": scale**2 * area, "vertices": None}
