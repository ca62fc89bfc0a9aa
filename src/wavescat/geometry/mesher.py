"""`mesh_case`: the surface mesh of a case, checked and outward, with its statistics."""
from __future__ import annotations

import logging
import time

from ..errors import ConfigError
from ..surface import SurfaceMesh
from .checks import check_surface
from .sizing import mesh_options
from .statistics import mesh_statistics

log = logging.getLogger(__name__)


def _builders() -> dict:
    from .box import box
    from .cylinder import cylinder
    from .file import file
    from .sphere import sphere
    from .spheroid import spheroid
    from .submarine import submarine
    return {"sphere": sphere, "spheroid": spheroid, "box": box, "cylinder": cylinder,
            "submarine": submarine, "file": file}


def mesh_case(case: dict, medium: dict, verbose: bool = False) -> tuple[SurfaceMesh, dict]:
    """Mesh `case["geometry"]` at h = c / (f_max * elements_per_wavelength) (capped by
    `mesh.max_element_size`), run the checks, and return (mesh, statistics)."""
    geometry = case.get("geometry") or {}
    kind = geometry.get("kind")
    builders = _builders()
    if kind not in builders:
        raise ConfigError(f"geometry.kind = {kind!r}: must be one of {', '.join(builders)}")
    options = mesh_options(case, medium, verbose)
    start = time.perf_counter()
    mesh = builders[kind](geometry, options)
    seconds = time.perf_counter() - start
    mesh = check_surface(mesh, source=f"{kind} mesh" if kind != "file" else str(geometry["path"]))
    stats = {"kind": kind, **mesh_statistics(mesh, options.h, seconds),
             "h_applied": bool(mesh.meta.get("h_applied", True)),
             "frequency_max_hz": float(max(case["frequencies_hz"])),
             "elements_per_wavelength": float((case.get("mesh") or {}).get(
                 "elements_per_wavelength", 10.0)),
             "curvature_refinement": options.curvature_refinement}
    if not stats["h_applied"] and stats["edge_length_max"] > 1.5 * options.h:
        log.warning("%s: the stored mesh is used as it is; its longest edge %.4g m exceeds "
                    "1.5 h = %.4g m (fewer than %g elements per wavelength there)",
                    geometry["path"], stats["edge_length_max"], 1.5 * options.h,
                    stats["elements_per_wavelength"])
    log.info("%s: %d triangles, %d vertices, h = %.4g m, edges %.4g..%.4g m, %.2f s",
             kind, stats["elements"], stats["vertices"], options.h, stats["edge_length_min"],
             stats["edge_length_max"], seconds)
    return mesh, stats
