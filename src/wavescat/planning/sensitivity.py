"""Is a case's single-frequency target strength hypersensitive? An estimate of the interior
quality factor Q of every fluid region of a case, and a warning where it is high and the
region is large enough to resonate at the case's frequencies.

The model (order of magnitude, on purpose):

- Contrast. A wave inside a region meets its boundary with an impedance ratio
  Z = rho_1 c_1 / (rho_0 c_0) against its surroundings (the medium, or the body that holds
  it). Little energy leaks out per bounce when Z is far from 1 either way, so
  Q_contrast = max(Z, 1 / Z): 3,546 for the fisheries gas (1.24 kg/m^3, 345 m/s) in sea
  water (1026.8 kg/m^3, 1477.3 m/s). Measured on the exact fluid-sphere series
  (tests/test_sensitivity.py): Q scales as 1 / Z, and the broadest interior resonances of a
  gas sphere (orders 0 and 1) have Q of 2.2 to 4.3 / Z, higher orders far more (a heavy
  interior, Z = 30: 1.6 to 5 Z). max(Z, 1/Z) is thus the low end: the broadest resonances'
  order of magnitude. Fish flesh (ratios 1.04, 1.04) has Q_contrast = 1.08.
- Absorption. A plane wave losing alpha dB per wavelength inside has the complex wavenumber
  k1 (1 + i delta), delta = alpha ln(10) / (40 pi), and a mode loses energy at the rate that
  gives Q_abs = 1 / (2 delta) = 27.29 / alpha (CONTEXT: `absorption_db_per_wavelength`).
- Both: 1 / Q = 1 / Q_contrast + 1 / Q_abs (the gas sphere's series with 1.364 dB per
  wavelength: Q = 19.9 measured, 19.9 estimated).
- Can it resonate? A region with Z < 1 (gas in water) sees its wall as rigid from inside
  ((1/rho) dp/dn is continuous and rho_1 is tiny, so dp/dn ~ 0 inside): it rings on
  Neumann-like modes, the lowest non-constant one of a convex region of diameter D at
  k1 >= pi / D (Payne-Weinberger), none while the interior wavelength exceeds 2 D. A region
  with Z > 1 sees a pressure-release wall: Dirichlet-like modes, the lowest of a region
  within a slab of width t at k1 >= pi / t, none while the wavelength exceeds 2 t. Width
  and diameter are those of the body's axis-aligned bounding box (the smallest side and the
  diagonal: at least the true ones, so the test errs towards warning); a body of unknown
  size is taken to resonate.

Threshold: Q > HYPERSENSITIVE_Q = 50. A resonance of quality Q is f / Q wide (half power).
The mesh moves interior resonances by the discretisation's dispersion, estimated (not
measured here) from the P1 dispersion error (k h)^2 / 24: 1.6% at 10 elements per interior
wavelength, 7% at 5. Above
Q = 50 (resonances narrower than 2%) a resonance's width is below that shift at the
default resolution, so the TS of one frequency near it changes by many dB from mesh to mesh
(11.8 dB in issue 26) and no refinement a user can afford converges it; at Q = 20 (an
absorption of 1.36 dB per wavelength) resonances are 5% wide and refinement converges.
The Minnaert (breathing) resonance of a small bubble is not an interior-wavelength
resonance and is not covered here: it is radiation damped (Q of order 10) and resolved by
any mesh of the bubble.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..geometry.resolution import (check_mesh_resolution, interior_resolution_warnings,
                                   mesh_extent)
from ..reference.absorption import loss_factor

# Q of a mode inside a fluid losing 1 dB per wavelength: 1 / (2 delta), delta = ln(10) / (40 pi)
Q_PER_DB = 20.0 * math.pi / math.log(10.0)  # 27.29
HYPERSENSITIVE_Q = 50.0
# No interior resonance while the interior wavelength exceeds this many diameters (Z < 1)
# or widths (Z > 1) of the region.
RESONANCE_WAVELENGTHS = 2.0


def absorption_q(absorption_db_per_wavelength: float) -> float:
    """Q of the interior modes from absorption alone, 1 / (2 delta) with delta the loss
    factor of reference/absorption.py (inf without absorption)."""
    delta = loss_factor(absorption_db_per_wavelength or 0.0)
    return math.inf if delta <= 0 else 1.0 / (2.0 * delta)


def contrast_q(impedance_ratio: float) -> float:
    """Q of the interior modes from the impedance contrast with the surroundings alone."""
    z = float(impedance_ratio)
    return max(z, 1.0 / z)


def interior_q(impedance_ratio: float, absorption_db_per_wavelength: float = 0.0) -> float:
    """1 / Q = 1 / Q_contrast + 1 / Q_abs."""
    return 1.0 / (1.0 / contrast_q(impedance_ratio)
                  + 1.0 / absorption_q(absorption_db_per_wavelength))


def can_resonate(interior_wavelength: float, impedance_ratio: float,
                 width: float | None, diameter: float | None) -> bool:
    """Whether a region of that width and diameter (None: unknown) has interior modes at
    that wavelength or longer (see the module's text)."""
    size = diameter if impedance_ratio < 1 else width
    if size is None:
        return True
    return interior_wavelength <= RESONANCE_WAVELENGTHS * size


@dataclass(frozen=True)
class Region:
    """A fluid region: where (config path), its density and sound speed, its absorption,
    and those of its surroundings; width and diameter of the body (m, None if unknown)."""
    where: str
    density: float
    sound_speed: float
    absorption_db_per_wavelength: float
    outer_density: float
    outer_sound_speed: float
    width: float | None = None
    diameter: float | None = None

    @property
    def impedance_ratio(self) -> float:
        return self.density * self.sound_speed / (self.outer_density * self.outer_sound_speed)

    @property
    def q(self) -> float:
        return interior_q(self.impedance_ratio, self.absorption_db_per_wavelength)

    def interior_wavelength(self, frequency_hz: float) -> float:
        return self.sound_speed / frequency_hz


def geometry_size(geometry, extent=None) -> tuple[float | None, float | None]:
    """(width, diameter) in metres of a body's bounding box (the smallest side and the
    diagonal) from its parameters (Geometry.box_sides); `extent` (3 sides, e.g. of a mesh
    read from its file) wins; (None, None) where unknown."""
    sides = [float(s) for s in extent] if extent is not None else (
        geometry.box_sides() if geometry is not None else None)
    if not sides:
        return None, None
    return min(sides), math.sqrt(sum(s * s for s in sides))


def case_regions(case, sizes=None) -> list[Region]:
    """The fluid regions of a case (case.Case), depth first over its bodies: each against
    the fluid that holds it (the medium for the outer body). `sizes` maps a body's config
    path (e.g. 'cases.fish', 'cases.fish.inside[0]') to a bounding-box extent (3 sides, m)
    known from a file or a mesh."""
    out: list[Region] = []
    for body in case.bodies:
        if not body.is_fluid:
            continue
        outer = (case.medium.density, case.medium.sound_speed) if body.parent < 0 else (
            case.bodies[body.parent].density, case.bodies[body.parent].sound_speed)
        width, diameter = geometry_size(body.geometry, (sizes or {}).get(body.where))
        out.append(Region(body.where, body.density, body.sound_speed,
                          body.boundary.absorption_db_per_wavelength, outer[0], outer[1],
                          width, diameter))
    return out


def hypersensitive_regions(case, sizes=None, frequencies_hz=None) -> list[tuple[Region, float]]:
    """(region, highest frequency at which it resonates) of every region with
    Q > HYPERSENSITIVE_Q that is large enough to resonate at one of `frequencies_hz` (default:
    the case's)."""
    freqs = sorted(float(f) for f in (case.frequencies_hz if frequencies_hz is None
                                      else frequencies_hz))
    out = []
    for region in case_regions(case, sizes):
        if region.q <= HYPERSENSITIVE_Q:
            continue
        ringing = [f for f in freqs if can_resonate(region.interior_wavelength(f),
                                                    region.impedance_ratio, region.width,
                                                    region.diameter)]
        if ringing:
            out.append((region, ringing[-1]))
    return out


def sensitivity_warnings(case, sizes=None, frequencies_hz=None) -> list[str]:
    """One line per hypersensitive region of a case (the same line at every frequency, so
    that a sweep's summary holds it once): the region, its Q, why, and the ways out
    (absorption, band averaging), at `frequencies_hz` (default: the case's). Regions are
    named by their config paths; those of a nameless case (given by hand) by their keys
    within it."""
    name = case.name
    out = []
    for region, _ in hypersensitive_regions(case, sizes, frequencies_hz):
        z = region.impedance_ratio
        size = "" if region.width is None else (
            f", bounding-box diagonal {region.diameter:.3g} m" if z < 1
            else f", bounding-box width {region.width:.3g} m")
        share = 100.0 / region.q
        where = region.where if name else region.where.removeprefix("case").lstrip(".")
        body = (f"case {name}: {where}" if name
                else f"the body {where}" if where else "the body")
        key = f"{where}.boundary" if where else "boundary"
        out.append(
            f"{body} (a fluid of {z:.3g} times the impedance around "
            f"it{size}) has an estimated interior Q of {region.q:.0f} and can ring at the "
            f"case's frequencies: near one of its interior resonances, each about {share:.2g}% "
            f"of its frequency wide, the single-frequency TS moves by 10 dB or more between "
            f"meshes or with a {share:.2g}% change of frequency; give it "
            f"{key}.absorption_db_per_wavelength (1.36 gives Q = 20) or "
            "report TS averaged over a band")
    return out


def solve_preflight(case, mesh, frequency_hz: float) -> list[str]:
    """What a solve job checks before it assembles anything: refuse a mesh far too coarse
    for `frequency_hz` (geometry.resolution.check_mesh_resolution raises MeshError) and
    return the warnings of a mesh coarse against an interior wavelength (fewer than 5
    elements per wavelength) and the hypersensitivity warnings of the case at that frequency
    (for a file body, sized by the mesh's bounding box)."""
    check_mesh_resolution(mesh, case, frequency_hz)
    sizes = None
    if getattr(case.geometry, "kind", None) == "file":
        sizes = {case.where: mesh_extent(mesh.vertices)}
    return (interior_resolution_warnings(mesh, case, frequency_hz)
            + sensitivity_warnings(case, sizes, [frequency_hz]))
