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
from dataclasses import dataclass, replace

from ..defaults import MESH as MESH_DEFAULTS

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


def curvature_sizing(options: MeshOptions, volume: float, area: float,
                     floor: float) -> MeshOptions:
    """gmsh's curvature sizing (elements per turn of the local radius of curvature) set so
    that a body with no sizing of its own (a KRM loft, a CAD file) keeps `options.volume_error`
    of its volume: the sag rule h = sqrt(8 sag / H) at the body's typical radius R = 2 V / A
    (H = 1 / (2 R) on a cylinder), but at least ELEMENTS_PER_TURN; the mesher's second try
    scales it by 1 / geometry_refinement. Elements never below `floor` (m)."""
    if not options.volume_error or volume <= 0:
        return options
    radius = 2 * volume / area
    h_sag = math.sqrt(16 * options.sag(volume, area) * radius)
    turns = max(ELEMENTS_PER_TURN, 2 * math.pi * radius / h_sag, options.curvature_refinement)
    turns /= options.geometry_refinement
    return replace(options, curvature_refinement=int(math.ceil(turns)),
                   min_size_factor=min(floor / options.h, 1.0))


def surface_sound_speeds(case) -> list[float]:
    """The sound speed each surface of a case (case.Case) is sized for, in surface-id order
    (case.bodies): the slower of the regions on its two sides where `mesh.resolve_interior`
    (default), else the medium's."""
    c0 = case.medium.sound_speed
    bodies = case.bodies
    if not case.mesh.resolve_interior:
        return [c0] * len(bodies)
    out = []
    for body in bodies:
        outside = c0 if body.parent < 0 else bodies[body.parent].sound_speed
        out.append(outside if body.sound_speed is None else min(outside, body.sound_speed))
    return out


def element_sizes(case) -> list[float]:
    """h of each surface of the case (surface-id order) from the case's highest frequency,
    the surface's sound speed (`surface_sound_speeds`) and the `mesh` keys."""
    f_max = max(case.frequencies_hz)
    epw = float(case.mesh.elements_per_wavelength)
    cap = case.mesh.max_element_size
    out = []
    for c in surface_sound_speeds(case):
        h = c / (f_max * epw)
        out.append(h if cap is None else min(h, float(cap)))
    return out


def element_size(case, surface: int = 0) -> float:
    """h of one surface of the case (0: the outer body; see `element_sizes`)."""
    return element_sizes(case)[surface]


def mesh_options(case, verbose: bool = False, surface: int = 0) -> MeshOptions:
    e = case.mesh.max_volume_error
    return MeshOptions(h=element_size(case, surface),
                       curvature_refinement=case.mesh.curvature_refinement,
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


def sizing_frequencies(case) -> list[float]:
    """The frequency each of the case's frequencies is meshed for: itself, or lower where
    `mesh.max_element_size` makes h smaller than its wavelength would (then frequencies
    below that share one mesh)."""
    freqs = list(case.frequencies_hz)
    if case.mesh.max_element_size is None:
        return freqs
    # below the frequency where every surface's h reaches the cap, the mesh stays the same
    cap = min(surface_sound_speeds(case)) / (float(case.mesh.elements_per_wavelength)
                                             * float(case.mesh.max_element_size))
    return [max(f, cap) for f in freqs]
