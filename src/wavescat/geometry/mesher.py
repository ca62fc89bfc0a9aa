"""`mesh_case`: the surface mesh of a case, checked and outward, with its statistics."""
from __future__ import annotations

import logging
import math
import time
from dataclasses import replace

from ..errors import ConfigError
from ..surface import SurfaceMesh
from .checks import check_surface
from .resolution import resolution_warnings
from .sizing import MESH_DEFAULTS, mesh_options
from .statistics import mesh_statistics
from .volume import match_volume

log = logging.getLogger(__name__)


def _builders() -> dict:
    from .box import box
    from .cylinder import cylinder
    from .file import file
    from .krm import krm
    from .sphere import sphere
    from .spheroid import spheroid
    from .submarine import submarine
    return {"sphere": sphere, "spheroid": spheroid, "box": box, "cylinder": cylinder,
            "submarine": submarine, "file": file, "krm": krm}


def _volume_error(mesh: SurfaceMesh) -> float:
    return 1 - mesh.enclosed_volume / mesh.meta["exact_volume"]


def _volume_retry(mesh: SurfaceMesh, options) -> float | None:
    """Factor on the geometry sizes for a second try, where the first mesh missed the
    volume tolerance (refine) or met it with a wide margin (coarsen: fewer unknowns);
    None where it is fine or the geometry sizing is off. The error goes as size^2."""
    tol = options.volume_error
    if not tol or not mesh.meta.get("exact_volume"):
        return None
    err = abs(_volume_error(mesh))
    if 0.6 * tol <= err <= tol or err < 0.05 * tol:  # fine, or flat (a box): as it is
        return None
    return min(max(math.sqrt(0.85 * tol / max(err, 1e-12)), 0.5), 1.6)


def matches_volume(case: dict) -> bool:
    """`mesh.match_volume` resolved: `auto` is on for fluid bodies only, whose answers follow
    the volume; the others keep the inscribed mesh (their results stay as they were)."""
    value = {**MESH_DEFAULTS, **(case.get("mesh") or {})}["match_volume"]
    if value == "auto":
        return (case.get("boundary") or {}).get("kind") == "fluid"
    if isinstance(value, bool):
        return value
    raise ConfigError(f"mesh.match_volume = {value!r}: must be auto, true or false")


def mesh_case(case: dict, medium: dict, verbose: bool = False) -> tuple[SurfaceMesh, dict]:
    """Mesh `case["geometry"]` at h = c / (f_max * elements_per_wavelength) (capped by
    `mesh.max_element_size`), finer where the body's curvature needs it (geometry sizing,
    `mesh.max_volume_error`), run the checks, offset it to the body's exact volume where
    `mesh.match_volume` says so, and return (mesh, statistics); the statistics' `warnings` say
    where the mesh is coarse against the body."""
    geometry = case.get("geometry") or {}
    kind = geometry.get("kind")
    builders = _builders()
    if kind not in builders:
        raise ConfigError(f"geometry.kind = {kind!r}: must be one of {', '.join(builders)}")
    options = mesh_options(case, medium, verbose)
    start = time.perf_counter()
    mesh = builders[kind](geometry, options)
    retry = _volume_retry(mesh, options)
    if retry is not None:
        log.info("%s: meshed volume %.3f%% off the body's; geometry sizes times %.3g",
                 kind, 100 * _volume_error(mesh), retry)
        again = builders[kind](geometry, replace(options, geometry_refinement=retry))
        if abs(_volume_error(again)) <= options.volume_error or retry < 1:
            mesh = again
    seconds = time.perf_counter() - start
    source = f"{kind} mesh" if kind != "file" else str(geometry["path"])
    mesh = check_surface(mesh, source=source)
    offset = None
    exact = mesh.meta.get("exact_volume")
    if matches_volume(case) and exact:
        before = _volume_error(mesh)
        mesh, offset = match_volume(mesh, exact)
        log.info("%s: meshed volume %.3f%% off the body's; vertices offset %.4g m along their "
                 "normals (mesh.match_volume), now %.2g%% off", source, 100 * before, offset,
                 100 * _volume_error(mesh))
    warnings = resolution_warnings(mesh, geometry, source, options.volume_error)
    for w in warnings:
        log.warning(w)
    stats = {"kind": kind, **mesh_statistics(mesh, options.h, seconds),
             "h_applied": bool(mesh.meta.get("h_applied", True)),
             "frequency_max_hz": float(max(case["frequencies_hz"])),
             "elements_per_wavelength": float((case.get("mesh") or {}).get(
                 "elements_per_wavelength", MESH_DEFAULTS["elements_per_wavelength"])),
             "curvature_refinement": options.curvature_refinement,
             "max_volume_error": options.volume_error,
             "exact_volume": exact, "volume_offset": offset, "warnings": warnings}
    if not stats["h_applied"] and stats["edge_length_max"] > 1.5 * options.h:
        msg = (f"{geometry['path']}: the stored mesh is used as it is; its longest edge "
               f"{stats['edge_length_max']:.4g} m exceeds 1.5 h = {1.5 * options.h:.4g} m (fewer "
               f"than {stats['elements_per_wavelength']:g} elements per wavelength there)")
        log.warning(msg)
        warnings.append(msg)
    log.info("%s: %d triangles, %d vertices, h = %.4g m, edges %.4g..%.4g m, %.2f s",
             kind, stats["elements"], stats["vertices"], options.h, stats["edge_length_min"],
             stats["edge_length_max"], seconds)
    return mesh, stats
