"""Element size of a case: `h = c / (f_max * elements_per_wavelength)`, capped by
`mesh.max_element_size`, refined where the body's curvature asks for it, plus the gmsh
options that carry it; and the frequency bands of a sweep, one mesh each.

Each surface has its own c: the slower of the two regions it separates (`mesh.resolve_interior`,
default true), so a surface resolves the shortest wavelength on either side of it. Outside
the outer body is the medium; inside a fluid body its own fluid (phase speed; absorption does
not enter); a rigid or pressure-release body carries no wave inside. A gas body (345 m/s in
water at 1477 m/s) thus gets elements 4.3 times smaller than the water's wavelength alone
would give it; `resolve_interior: false` sizes every surface for the medium's wavelength.

Geometry sizing: a flat triangle of edge h on a surface of mean curvature H lies on average
`H h^2 / 8` inside it (chord sag of a paraboloid cap over an equilateral triangle). A sag
`delta = e V / A` everywhere loses the fraction e of the volume V of a body of area A, so
`h_geo = sqrt(8 delta / H)` keeps the meshed volume within e of the exact one at any
frequency; the mesher checks the result against the exact volume and remeshes once where
the model missed (it overestimates the loss of cylinder-like parts).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..defaults import MESH as MESH_DEFAULTS
from ..errors import ConfigError
from .bodies import body_tree, fluid_sound_speed
from .params import positive_number

# Share of the volume tolerance the geometry sizing aims at: the sag model overestimates
# the loss (0.5-0.9 of the target came out on spheres, spheroids and the submarine).
VOLUME_ERROR_TARGET = 1.0
# Geometry sizing puts at least this many elements on a full turn of the smallest local
# radius of curvature (22.5 degrees per element); a mesh with fewer than
# COARSE_ELEMENTS_PER_TURN there is reported as coarse against the body.
ELEMENTS_PER_TURN = 16
COARSE_ELEMENTS_PER_TURN = 8
# Geometry sizing never asks for elements below this share of the body's thinnest half-width.
MIN_SIZE_OF_THINNEST = 0.02


@dataclass(frozen=True)
class MeshOptions:
    """What every geometry builder needs to know to mesh.

    h: target edge length (m) from the frequency. curvature_refinement: elements per 2*pi of
    curvature (0 = off); refined elements are never smaller than h * min_size_factor.
    volume_error: relative volume tolerance the geometry sizing aims at (None: frequency
    sizing only). geometry_refinement: factor on the geometry sizes (< 1 refines; the mesher
    uses it when a first mesh misses the volume tolerance).
    """
    h: float
    curvature_refinement: int = MESH_DEFAULTS["curvature_refinement"]
    min_size_factor: float = 0.1
    verbose: bool = False
    volume_error: float | None = None
    geometry_refinement: float = 1.0

    def sag(self, volume: float, area: float) -> float | None:
        """Chord sag (m) that loses the targeted share of `volume` over `area`."""
        if not self.volume_error:
            return None
        return VOLUME_ERROR_TARGET * self.volume_error * volume / area


def sag_size(sag: float, mean_curvature: float) -> float:
    """Edge length whose flat triangles lie `sag` inside a surface of that mean curvature."""
    return math.sqrt(8.0 * sag / mean_curvature)


def _frequencies(case: dict) -> list[float]:
    freqs = case.get("frequencies_hz")
    if not freqs:
        raise ConfigError(f"frequencies_hz = {freqs!r}: needs at least one frequency")
    return [positive_number(f"frequencies_hz[{i}]", f) for i, f in enumerate(freqs)]


def _settings(case: dict) -> dict:
    mesh = {**MESH_DEFAULTS, **(case.get("mesh") or {})}
    if not isinstance(mesh["resolve_interior"], bool):
        raise ConfigError(f"mesh.resolve_interior = {mesh['resolve_interior']!r}: must be true "
                          "or false")
    return mesh


def surface_sound_speeds(case: dict, medium: dict) -> list[float]:
    """The sound speed each surface of the case is sized for, in surface-id order (the bodies
    of `bodies.body_tree`): the slower of the regions on its two sides where
    `mesh.resolve_interior` (default), else the medium's."""
    c0 = positive_number("medium.sound_speed", medium.get("sound_speed"))
    resolve = _settings(case)["resolve_interior"]
    if not case.get("inside"):  # one body (the geometry need not be given here)
        inside = fluid_sound_speed(case.get("boundary"), medium) if resolve else None
        return [c0 if inside is None else min(c0, inside)]
    bodies = body_tree(case, medium)
    if not resolve:
        return [c0] * len(bodies)
    out = []
    for body in bodies:
        outside = c0 if body.parent < 0 else bodies[body.parent].sound_speed
        out.append(outside if body.sound_speed is None else min(outside, body.sound_speed))
    return out


def element_sizes(case: dict, medium: dict) -> list[float]:
    """h of each surface of the case (surface-id order) from the case's highest frequency,
    the surface's sound speed (`surface_sound_speeds`) and the `mesh` keys."""
    mesh = _settings(case)
    f_max = max(_frequencies(case))
    epw = positive_number("mesh.elements_per_wavelength", mesh["elements_per_wavelength"])
    cap = mesh["max_element_size"]
    if cap is not None:
        cap = positive_number("mesh.max_element_size", cap)
    out = []
    for c in surface_sound_speeds(case, medium):
        h = c / (f_max * epw)
        out.append(h if cap is None else min(h, cap))
    return out


def element_size(case: dict, medium: dict, surface: int = 0) -> float:
    """h of one surface of the case (0: the outer body; see `element_sizes`)."""
    return element_sizes(case, medium)[surface]


def mesh_options(case: dict, medium: dict, verbose: bool = False, surface: int = 0) -> MeshOptions:
    mesh = _settings(case)
    n = mesh["curvature_refinement"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ConfigError(f"mesh.curvature_refinement = {n!r}: must be an integer >= 0")
    e = mesh["max_volume_error"]
    if e is not None and not (positive_number("mesh.max_volume_error", e) < 1):
        raise ConfigError(f"mesh.max_volume_error = {e!r}: must be < 1 (a fraction, 0.01 = 1%)")
    return MeshOptions(h=element_size(case, medium, surface), curvature_refinement=n,
                       verbose=verbose, volume_error=None if e is None else float(e))


def frequency_bands(frequencies, ratio: float) -> list[list[int]]:
    """Indices of `frequencies` grouped into bands, finest first, one mesh per band.

    Band 0 holds the highest frequency f0 and every frequency above f0 / ratio; band 1
    starts at the highest frequency left, and so on. Each band's mesh is sized for its top
    frequency, so no frequency is solved on elements more than `ratio` times smaller than
    its own would be (at most ratio^2 as many unknowns), and a sweep over a decade at
    ratio 1.5 needs six meshes. ratio <= 1 gives a mesh per distinct frequency.
    """
    ratio = float(ratio)
    left = sorted(range(len(frequencies)), key=lambda i: (-frequencies[i], i))
    bands = []
    while left:
        top = frequencies[left[0]]
        band = [i for i in left if frequencies[i] * ratio >= top]
        bands.append(sorted(band))
        left = [i for i in left if i not in band]
    return bands


def sizing_frequencies(case: dict, medium: dict) -> list[float]:
    """The frequency each of the case's frequencies is meshed for: itself, or lower where
    `mesh.max_element_size` makes h smaller than its wavelength would (then frequencies
    below that share one mesh)."""
    mesh = _settings(case)
    freqs = _frequencies(case)
    if mesh["max_element_size"] is None:
        return freqs
    # below the frequency where every surface's h reaches the cap, the mesh stays the same
    cap = min(surface_sound_speeds(case, medium)) / (
        positive_number("mesh.elements_per_wavelength", mesh["elements_per_wavelength"])
        * positive_number("mesh.max_element_size", mesh["max_element_size"]))
    return [max(f, cap) for f in freqs]


def band_case(case: dict, band: list[int]) -> dict:
    """The case restricted to the frequencies of one band (what its mesh is sized for)."""
    freqs = case["frequencies_hz"]
    return {**case, "frequencies_hz": [freqs[i] for i in band]}
