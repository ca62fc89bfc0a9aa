"""Element size of a case: `h = c / (f_max * elements_per_wavelength)`, capped by
`mesh.max_element_size`, plus the gmsh options that carry it."""
from __future__ import annotations

from dataclasses import dataclass

from ..defaults import MESH as MESH_DEFAULTS
from ..errors import ConfigError


@dataclass(frozen=True)
class MeshOptions:
    """What every geometry builder needs to know to mesh.

    h: target edge length (m). curvature_refinement: elements per 2*pi of curvature
    (0 = off); refined elements are never smaller than h * min_size_factor.
    """
    h: float
    curvature_refinement: int = MESH_DEFAULTS["curvature_refinement"]
    min_size_factor: float = 0.1
    verbose: bool = False


def _positive(name: str, value) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} = {value!r}: must be a number") from None
    if not v > 0:
        raise ConfigError(f"{name} = {value!r}: must be > 0")
    return v


def element_size(case: dict, medium: dict) -> float:
    """h from the case's highest frequency, the medium's sound speed and `mesh` keys."""
    mesh = {**MESH_DEFAULTS, **(case.get("mesh") or {})}
    freqs = case.get("frequencies_hz")
    if not freqs:
        raise ConfigError(f"frequencies_hz = {freqs!r}: needs at least one frequency")
    f_max = max(_positive(f"frequencies_hz[{i}]", f) for i, f in enumerate(freqs))
    c = _positive("medium.sound_speed", medium.get("sound_speed"))
    epw = _positive("mesh.elements_per_wavelength", mesh["elements_per_wavelength"])
    h = c / (f_max * epw)
    if mesh["max_element_size"] is not None:
        h = min(h, _positive("mesh.max_element_size", mesh["max_element_size"]))
    return h


def mesh_options(case: dict, medium: dict, verbose: bool = False) -> MeshOptions:
    mesh = {**MESH_DEFAULTS, **(case.get("mesh") or {})}
    n = mesh["curvature_refinement"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ConfigError(f"mesh.curvature_refinement = {n!r}: must be an integer >= 0")
    return MeshOptions(h=element_size(case, medium), curvature_refinement=n, verbose=verbose)
