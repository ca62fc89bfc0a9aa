"""Checks before any job starts, which name the config's keys: a case whose mesh or solve
job cannot fit the machine (config key `limits`, against the estimates of
wavescat.planning.resources), a stored mesh file far too coarse for its wavelengths, and the
hypersensitivity warnings of every case (wavescat.planning.sensitivity).
"""
from __future__ import annotations

import numpy as np

from ..backend import gpu_memory_bytes
from ..configuration.case import Case
from ..errors import ConfigError, MeshError
from ..geometry.file import FileGeometry
from ..geometry.krm import KrmShape, station_clearance
from ..geometry.nesting import REFUSE_GAP_ELEMENTS
from ..geometry.resolution import check_mesh_resolution
from ..geometry.sizing import element_sizes
from ..memory import host_memory_bytes
from .resources import case_estimates
from .sensitivity import sensitivity_warnings


def _limit(limits: dict, key: str, machine) -> tuple[float | None, str]:
    """(bytes, where it comes from) of a memory limit: the config's, else this machine's."""
    if limits.get(key) is not None:
        return limits[key] * 1e9, f"limits.{key} = {limits[key]:g}"
    value = machine()
    return value, f"this machine's, set limits.{key} to change it"


def _gpu_runs(solver, gpu_here: bool) -> bool:
    return solver.backend == "gpu" or (solver.backend == "auto" and gpu_here)


def _size(nbytes: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale or unit == "MB":
            return f"{nbytes / scale:.3g} {unit}"


def check_limits(config: dict, cases) -> None:
    """Refuse, before any job starts, a case whose mesh or solve job cannot fit: estimated
    unknowns and memory (at the case's highest frequency) against `limits` (the machine's
    host and GPU memory by default). The message names case, frequency, estimate and limit."""
    limits = config.get("limits") or {}
    host, host_from = _limit(limits, "host_memory_gb", host_memory_bytes)
    gpu_here = None
    for name in cases:
        case = Case.from_config(config, name)
        f = max(case.frequencies_hz)
        solver = case.solver
        if gpu_here is None and solver.backend != "cpu":
            gpu_here = gpu_memory_bytes()
        gpu = _gpu_runs(solver, bool(gpu_here))
        if gpu:
            gpu_limit, gpu_from = _limit(limits, "gpu_memory_gb", lambda: gpu_here)
        # operator_format auto: the format whose solve fits the memory it will have
        est = case_estimates(case, gpu, gpu_limit if gpu else host)
        where = f"case {name!r} at {f:g} Hz (about {est['unknowns']:.3g} unknowns)"
        max_n = limits.get("max_unknowns")
        unit = unit_hint(case.geometry, case.where)
        if max_n is not None and est["unknowns"] > max_n:
            raise ConfigError(f"{where}: more than limits.max_unknowns = {max_n}; lower the "
                              "frequency or elements_per_wavelength, or raise the limit" + unit)
        checks = [("meshing", est["mesh_bytes"], host, "host memory", host_from),
                  (f"the {est['format']} solve", est["solve_host_bytes"], host, "host memory",
                   host_from)]
        if gpu:
            limit, limit_from = gpu_limit, gpu_from
            movable = est.get("solve_gpu_movable_bytes", 0)
            if limit is not None:
                checks.append((f"the {est['format']} solve on the GPU",
                               est["solve_gpu_bytes"] - movable, limit, "GPU memory", limit_from))
            if limit is not None and host is not None and movable:
                # blocks the card cannot hold move to host memory (slower products)
                checks.append(("the hmatrix solve (its blocks on the GPU or moved to the host)",
                               est["solve_gpu_bytes"] + est["solve_host_bytes"], limit + host,
                               "GPU and host memory together", f"{limit_from}; {host_from}"))
        for stage, need, limit, kind, limit_from in checks:
            if need > limit:
                hint = (" (operator_format: hmatrix needs less)" if est["format"] == "dense"
                        and "solve" in stage else "")
                raise ConfigError(
                    f"{where}: {stage} needs about {_size(need)}, more than the {_size(limit)} "
                    f"of {kind} ({limit_from}){hint}{unit}")


def unit_hint(geometry, where: str) -> str:
    """'; if the file is in millimetres, set <where>.geometry.scale: 0.001 (...)' for an
    unscaled file geometry a metre or more long, '' otherwise."""
    if not isinstance(geometry, FileGeometry) or geometry.scale != 1.0:
        return ""
    facts = geometry.facts()
    if not facts:
        return ""
    longest = float(max(facts["extent"]))
    if longest < 1.0:
        return ""
    return (f"; the body is {longest:.3g} m long: if the file is in millimetres, set "
            f"{where}.geometry.scale: 0.001 (then {longest * 0.001:.3g} m)")


def check_resolution(config: dict, cases) -> list[str]:
    """Before any job starts: refuse (ConfigError, one line) a case whose stored mesh file
    is far too coarse for its highest frequency (geometry.resolution.coarse_mesh_refusal),
    and return the warnings of every case: a stored mesh of several disjoint bodies, and
    hypersensitivity (wavescat.planning.sensitivity)."""
    out = []
    for name in cases:
        case = Case.from_config(config, name)
        try:
            mesh = case.geometry.stored_mesh()
        except MeshError as exc:
            raise ConfigError(f"{case.where}.geometry.path: {exc}") from None
        if mesh is not None:
            try:
                check_mesh_resolution(mesh, case, max(case.frequencies_hz))
            except MeshError as exc:  # point at the file's key (config_error finds its line)
                text = str(exc).replace(f"{case.where}: ", f"{case.where}.geometry.path: ", 1)
                raise ConfigError(text) from None
        for body in case.bodies:  # said before the mesh job says it again
            n = body.geometry.closed_bodies() if body.geometry is not None else None
            if n and n > 1:
                out.append(f"{body.where}.geometry.path = {body.geometry.path!r}: {n} closed "
                           "bodies (disjoint surfaces) in one file, solved as one scatterer "
                           "with one boundary (a body inside another goes under `inside:`)")
        out += [w for w in nesting_warnings(case) if w not in out]
        # a file's size is its stored mesh's or its CAD bounding box (Geometry.box_sides)
        out += [w for w in sensitivity_warnings(case) if w not in out]
    return out


def nesting_warnings(case) -> list[str]:
    """Before meshing, a `krm` part nested in a `krm` part whose stations (each at its
    `center`) come closer than half the coarser surface's element size h: the mesh job
    refuses surfaces under half an element apart (geometry.nesting), so it is said here
    first, with the way out. Other kinds: their bounding boxes (case.check_boxes)."""
    out = []
    sizes = element_sizes(case)
    for body in case.bodies[1:]:
        parent = case.bodies[body.parent]
        inner, outer = body.geometry, parent.geometry
        if not (isinstance(inner, KrmShape) and isinstance(outer, KrmShape)):
            continue
        shift = np.subtract(inner.center, outer.center)
        gap, x = station_clearance(inner.outline(), outer.outline(), shift)
        h = max(sizes[body.index], sizes[parent.index])
        if gap < REFUSE_GAP_ELEMENTS * h:
            near = "touch or cross" if gap == 0 else f"come within {gap:.2g} m of"
            out.append(f"{body.where}: its stations {near} those of "
                       f"{parent.where} (at x = {x:.4g} m, before lofting), under half the "
                       f"element size h = {h:.3g} m: the mesh job refuses surfaces closer than "
                       f"half an element; move {body.where}.geometry.center (or refine, "
                       "mesh.max_element_size)")
    return out
