"""`mesh_case`: the surface mesh of a case, checked and outward, with its statistics; for a
case with bodies `inside`, the union of every body's surface in surface-id order."""
from __future__ import annotations

import logging
import math
import time
from dataclasses import replace

from ..errors import ConfigError
from ..surface import SurfaceMesh
from .bodies import body_tree
from .checks import check_surface
from .nesting import check_nesting
from .resolution import resolution_warnings
from .sizing import MESH_DEFAULTS, mesh_options, surface_sound_speeds
from .statistics import mesh_statistics, unique_edge_lengths
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
    """Factor (< 1) on the geometry sizes for a second try where the first mesh missed the
    volume tolerance; None where it met it or the geometry sizing is off. The error goes as
    size^2. A mesh within the tolerance is kept as it is: coarsening the geometry sizes of
    one that met it with a margin saved few vertices, where the wavelength sets most sizes,
    for a second meshing as long as the first."""
    tol = options.volume_error
    if not tol or not mesh.meta.get("exact_volume"):
        return None
    err = abs(_volume_error(mesh))
    if err <= tol:
        return None
    return max(math.sqrt(0.85 * tol / err), 0.5)


def matches_volume(case: dict, boundary: dict | None = None) -> bool:
    """`mesh.match_volume` resolved: `auto` is on for fluid bodies only, whose answers follow
    the volume; the others keep the inscribed mesh (their results stay as they were).
    `boundary`: the block of the body in question (default: the case's own)."""
    value = {**MESH_DEFAULTS, **(case.get("mesh") or {})}["match_volume"]
    if value == "auto":
        if boundary is None:
            boundary = case.get("boundary")
        return (boundary or {}).get("kind") == "fluid"
    if isinstance(value, bool):
        return value
    raise ConfigError(f"mesh.match_volume = {value!r}: must be auto, true or false")


def _mesh_body(case: dict, geometry: dict, boundary: dict | None, options, source: str):
    """One body's surface: built, retried for the volume tolerance, checked (closed,
    outward), offset to the exact volume where `mesh.match_volume` says so. Returns
    (mesh, seconds, volume offset or None, warnings)."""
    kind = geometry.get("kind")
    builders = _builders()
    if kind not in builders:
        raise ConfigError(f"geometry.kind = {kind!r}: must be one of {', '.join(builders)}")
    start = time.perf_counter()
    mesh = builders[kind](geometry, options)
    retry = _volume_retry(mesh, options)
    if retry is not None:
        log.info("%s: meshed volume %.3f%% off the body's; geometry sizes times %.3g",
                 source, 100 * _volume_error(mesh), retry)
        again = builders[kind](geometry, replace(options, geometry_refinement=retry))
        mesh = again
    seconds = time.perf_counter() - start
    mesh = check_surface(mesh, source=source)
    offset = None
    exact = mesh.meta.get("exact_volume")
    if matches_volume(case, boundary) and exact:
        before = _volume_error(mesh)
        mesh, offset = match_volume(mesh, exact)
        log.info("%s: meshed volume %.3f%% off the body's; vertices offset %.4g m along their "
                 "normals (mesh.match_volume), now %.2g%% off", source, 100 * before, offset,
                 100 * _volume_error(mesh))
    warnings = resolution_warnings(mesh, geometry, source, options.volume_error)
    if not mesh.meta.get("h_applied", True):
        edge = float(unique_edge_lengths(mesh).max())
        if edge > 1.5 * options.h:
            warnings.append(
                f"{geometry['path']}: the stored mesh is used as it is; its longest edge "
                f"{edge:.4g} m exceeds 1.5 h = {1.5 * options.h:.4g} m (fewer than "
                f"{_epw(case):g} elements per wavelength there)")
    for w in warnings:
        log.warning(w)
    return mesh, seconds, offset, warnings


def _epw(case: dict) -> float:
    return float((case.get("mesh") or {}).get("elements_per_wavelength",
                                              MESH_DEFAULTS["elements_per_wavelength"]))


def _source(geometry: dict) -> str:
    kind = geometry.get("kind")
    return f"{kind} mesh" if kind != "file" else str(geometry.get("path"))


def mesh_case(case: dict, medium: dict, verbose: bool = False,
              name: str | None = None) -> tuple[SurfaceMesh, dict]:
    """Mesh `case["geometry"]` at h = c / (f_max * elements_per_wavelength) (capped by
    `mesh.max_element_size`), finer where the body's curvature needs it (geometry sizing,
    `mesh.max_volume_error`), run the checks, offset it to the body's exact volume where
    `mesh.match_volume` says so, and return (mesh, statistics); the statistics' `warnings` say
    where the mesh is coarse against the body. c is the slower of the medium and a fluid
    body's interior (`mesh.resolve_interior`, sizing.surface_sound_speeds).

    A case with bodies `inside` meshes every body with its own builder at its own h and
    returns their union (`SurfaceMesh.union`, surfaces in body_tree order), after checking
    that each lies strictly inside its parent and outside its siblings (geometry.nesting);
    the statistics then list each surface and the smallest gap between surfaces. `name`
    (the case's) names the bodies in messages: cases.<name>.inside[0], ..."""
    if not case.get("inside"):
        return _mesh_single(case, medium, verbose)
    return _mesh_nested(case, medium, verbose, f"cases.{name}" if name else "case")


def _mesh_single(case: dict, medium: dict, verbose: bool) -> tuple[SurfaceMesh, dict]:
    geometry = case.get("geometry") or {}
    kind = geometry.get("kind")
    options = mesh_options(case, medium, verbose)
    source = _source(geometry)
    mesh, seconds, offset, warnings = _mesh_body(case, geometry, case.get("boundary"), options,
                                                 source)
    stats = {"kind": kind, **mesh_statistics(mesh, options.h, seconds),
             "h_applied": bool(mesh.meta.get("h_applied", True)),
             "frequency_max_hz": float(max(case["frequencies_hz"])),
             "elements_per_wavelength": _epw(case),
             "sizing_sound_speed": surface_sound_speeds(case, medium)[0],
             "curvature_refinement": options.curvature_refinement,
             "max_volume_error": options.volume_error,
             "exact_volume": mesh.meta.get("exact_volume"), "volume_offset": offset,
             "warnings": warnings}
    log.info("%s: %d triangles, %d vertices, h = %.4g m, edges %.4g..%.4g m, %.2f s",
             kind, stats["elements"], stats["vertices"], options.h, stats["edge_length_min"],
             stats["edge_length_max"], seconds)
    return mesh, stats


def _mesh_nested(case: dict, medium: dict, verbose: bool, where: str):
    bodies = body_tree(case, medium, where)
    speeds = surface_sound_speeds(case, medium)
    parts, surfaces, warnings, total = [], [], [], 0.0
    for body in bodies:
        options = mesh_options(case, medium, verbose, surface=body.index)
        source = f"{body.where}: {_source(body.geometry)}"
        mesh, seconds, offset, body_warnings = _mesh_body(case, body.geometry, body.boundary,
                                                          options, source)
        mesh.meta["where"] = body.where
        parts.append(mesh)
        warnings += body_warnings
        total += seconds
        surfaces.append({"surface": body.index, "where": body.where, "parent": body.parent,
                         "kind": body.geometry.get("kind"), "boundary_kind": body.kind,
                         "sizing_sound_speed": speeds[body.index],
                         **mesh_statistics(mesh, options.h, seconds),
                         "h_applied": bool(mesh.meta.get("h_applied", True)),
                         "exact_volume": mesh.meta.get("exact_volume"),
                         "volume_offset": offset})
        log.info("%s: %d triangles, %d vertices, h = %.4g m (c = %.4g m/s), %.2f s", source,
                 mesh.n_triangles, mesh.n_vertices, options.h, speeds[body.index], seconds)
    mesh = SurfaceMesh.union(parts)
    start = time.perf_counter()
    gaps = check_nesting(mesh, bodies)
    log.info("nesting checked in %.2f s", time.perf_counter() - start)
    for g in gaps:
        log.info("%s and %s: smallest gap %.4g m (%.3g elements)", *g["where"], g["gap"],
                 g["gap_over_element"])
    top = surfaces[0]
    stats = {"kind": case["geometry"].get("kind"),
             **mesh_statistics(mesh, top["h_requested"], total),
             "h_applied": all(s["h_applied"] for s in surfaces),
             "frequency_max_hz": float(max(case["frequencies_hz"])),
             "elements_per_wavelength": _epw(case),
             "sizing_sound_speed": top["sizing_sound_speed"],
             "curvature_refinement": mesh_options(case, medium).curvature_refinement,
             "max_volume_error": mesh_options(case, medium).volume_error,
             "exact_volume": top["exact_volume"], "volume_offset": top["volume_offset"],
             "n_surfaces": mesh.n_surfaces, "surfaces": surfaces, "surface_gaps": gaps,
             "min_surface_gap": min(g["gap"] for g in gaps),
             "min_surface_gap_over_element": min(g["gap_over_element"] for g in gaps),
             "warnings": warnings}
    # the union's enclosed volume would add the bodies' volumes up: the outer body's instead
    stats["enclosed_volume"] = top["enclosed_volume"]
    stats["edge_length_max_over_h"] = max(s["edge_length_max_over_h"] for s in surfaces)
    return mesh, stats
