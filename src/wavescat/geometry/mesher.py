"""`mesh_case`: the surface mesh of a case, checked and outward, with its statistics; for a
case with bodies `inside`, the union of every body's surface in surface-id order."""
from __future__ import annotations

import logging
import math
import time
from dataclasses import replace

from ..surface import SurfaceMesh
from .checks import check_surface
from .nesting import check_nesting
from .resolution import resolution_warnings
from .sizing import mesh_options, surface_sound_speeds
from .statistics import mesh_statistics, unique_edge_lengths
from .volume import match_volume, volume_deviation

log = logging.getLogger(__name__)


def _volume_retry(mesh: SurfaceMesh, options) -> float | None:
    """Factor (< 1) on the geometry sizes for a second try where the first mesh missed the
    volume tolerance; None where it met it or the geometry sizing is off. The error goes as
    size^2. A mesh within the tolerance is kept as it is: coarsening the geometry sizes of
    one that met it with a margin saved few vertices, where the wavelength sets most sizes,
    for a second meshing as long as the first."""
    tol = options.volume_error
    if not tol or not mesh.meta.get("exact_volume"):
        return None
    err = abs(volume_deviation(mesh))
    if err <= tol:
        return None
    return max(math.sqrt(0.85 * tol / err), 0.5)


def _mesh_body(case, body, options, source: str):
    """One body's surface: built, retried for the volume tolerance, checked (closed,
    outward), offset to the exact volume where `mesh.match_volume` says so. Returns
    (mesh, seconds, volume offset or None, warnings)."""
    geometry = body.geometry
    start = time.perf_counter()
    mesh = geometry.build(options)
    retry = _volume_retry(mesh, options)
    if retry is not None:
        first = mesh
        mesh = geometry.build(replace(options, geometry_refinement=retry))
        log.info("%s: meshed volume %+.3f%% off the body's (%d triangles); geometry sizes "
                 "times %.3g: now %+.3f%% off (%d triangles)", source,
                 100 * volume_deviation(first), first.n_triangles, retry,
                 100 * volume_deviation(mesh), mesh.n_triangles)
    seconds = time.perf_counter() - start
    mesh = check_surface(mesh, source=source)
    offset = None
    exact = mesh.meta.get("exact_volume")
    if case.mesh.matches_volume(body.boundary) and exact:
        before = volume_deviation(mesh)
        mesh, offset = match_volume(mesh, exact)
        log.info("%s: meshed volume %+.3f%% off the body's; vertices offset %.4g m along their "
                 "normals (mesh.match_volume), now %+.2g%% off", source, 100 * before, offset,
                 100 * volume_deviation(mesh))
    warnings = resolution_warnings(mesh, geometry, source, options.volume_error)
    bodies = mesh.meta.get("closed_bodies", 1)
    if bodies > 1:  # legitimate (a school of fish), but easy to do by accident
        warnings.append(f"{source}: {bodies} closed bodies (disjoint surfaces), solved as one "
                        "scatterer with one boundary")
    if not mesh.meta.get("h_applied", True):
        edge = float(unique_edge_lengths(mesh).max())
        if edge > 1.5 * options.h:
            warnings.append(
                f"{geometry.label}: the stored mesh is used as it is; its longest edge "
                f"{edge:.4g} m exceeds 1.5 h = {1.5 * options.h:.4g} m (fewer than "
                f"{case.mesh.elements_per_wavelength:g} elements per wavelength there)")
    for w in warnings:
        log.warning(w)
    return mesh, seconds, offset, warnings


def mesh_case(case, verbose: bool = False) -> tuple[SurfaceMesh, dict]:
    """Mesh the body of `case` (case.Case) at h = c / (f_max * elements_per_wavelength) (capped by
    `mesh.max_element_size`), finer where the body's curvature needs it (geometry sizing,
    `mesh.max_volume_error`), run the checks, offset it to the body's exact volume where
    `mesh.match_volume` says so, and return (mesh, statistics); the statistics' `warnings` say
    where the mesh is coarse against the body. c is the slower of the medium and a fluid
    body's interior (`mesh.resolve_interior`, sizing.surface_sound_speeds).

    A case with bodies `inside` meshes every body with its own builder at its own h and
    returns their union (`SurfaceMesh.union`, surfaces in case.bodies' order), after
    checking that each lies strictly inside its parent and outside its siblings
    (geometry.nesting); the statistics then list each surface and the smallest gap between
    surfaces. Messages name the bodies by their config paths (body.where)."""
    if not case.nested:
        return _mesh_single(case, verbose)
    return _mesh_nested(case, verbose)


def _mesh_single(case, verbose: bool) -> tuple[SurfaceMesh, dict]:
    kind = case.geometry.kind
    options = mesh_options(case, verbose)
    source = case.geometry.label
    mesh, seconds, offset, warnings = _mesh_body(case, case.bodies[0], options, source)
    stats = {"kind": kind, **mesh_statistics(mesh, options.h, seconds),
             "h_applied": bool(mesh.meta.get("h_applied", True)),
             "closed_bodies": int(mesh.meta.get("closed_bodies", 1)),
             "frequency_max_hz": float(max(case.frequencies_hz)),
             "elements_per_wavelength": float(case.mesh.elements_per_wavelength),
             "sizing_sound_speed": surface_sound_speeds(case)[0],
             "curvature_refinement": options.curvature_refinement,
             "max_volume_error": options.volume_error,
             "exact_volume": mesh.meta.get("exact_volume"), "volume_offset": offset,
             "warnings": warnings}
    log.info("%s: %d triangles, %d vertices, h = %.4g m, edges %.4g..%.4g m, %.2f s",
             kind, stats["elements"], stats["vertices"], options.h, stats["edge_length_min"],
             stats["edge_length_max"], seconds)
    return mesh, stats


def _mesh_nested(case, verbose: bool):
    bodies = case.bodies
    speeds = surface_sound_speeds(case)
    parts, surfaces, warnings, total = [], [], [], 0.0
    for body in bodies:
        options = mesh_options(case, verbose, surface=body.index)
        source = f"{body.where}: {body.geometry.label}"
        mesh, seconds, offset, body_warnings = _mesh_body(case, body, options, source)
        mesh.meta["where"] = body.where
        parts.append(mesh)
        warnings += body_warnings
        total += seconds
        surfaces.append({"surface": body.index, "where": body.where, "parent": body.parent,
                         "kind": body.geometry.kind, "boundary_kind": body.kind,
                         "sizing_sound_speed": speeds[body.index],
                         **mesh_statistics(mesh, options.h, seconds),
                         "h_applied": bool(mesh.meta.get("h_applied", True)),
                         "closed_bodies": int(mesh.meta.get("closed_bodies", 1)),
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
        if g.get("warning"):  # in the log, mesh_stats.json and summary.json
            log.warning(g["warning"])
            warnings.append(g["warning"])
    top = surfaces[0]
    stats = {"kind": case.geometry.kind,
             **mesh_statistics(mesh, top["h_requested"], total),
             "h_applied": all(s["h_applied"] for s in surfaces),
             "frequency_max_hz": float(max(case.frequencies_hz)),
             "elements_per_wavelength": float(case.mesh.elements_per_wavelength),
             "sizing_sound_speed": top["sizing_sound_speed"],
             "curvature_refinement": mesh_options(case).curvature_refinement,
             "max_volume_error": mesh_options(case).volume_error,
             "exact_volume": top["exact_volume"], "volume_offset": top["volume_offset"],
             "n_surfaces": mesh.n_surfaces, "surfaces": surfaces, "surface_gaps": gaps,
             "min_surface_gap": min(g["gap"] for g in gaps),
             "min_surface_gap_over_element": min(g["gap_over_element"] for g in gaps),
             "warnings": warnings}
    # the union's enclosed volume would add the bodies' volumes up: the outer body's instead
    stats["enclosed_volume"] = top["enclosed_volume"]
    stats["edge_length_max_over_h"] = max(s["edge_length_max_over_h"] for s in surfaces)
    return mesh, stats
