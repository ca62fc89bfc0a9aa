"""The exact far field of a case whose bodies are a sphere or concentric spheres: one
sphere's series is its boundary condition's (`sphere_series`, one module of this package per
boundary kind); concentric spheres are layered_sphere.py's."""
from __future__ import annotations

from functools import partial
from types import SimpleNamespace

from ..errors import InputError
from . import (fluid_sphere, impedance_sphere, layered_sphere, pressure_release_sphere,
               rigid_sphere)
from .absorption import complex_sound_speed_ratio


def _series(module, **params) -> SimpleNamespace:
    """`far_field(k, a, d, xhat, center)`, `monostatic_far_field(k, a, ds, center)` and
    `scattered_field(k, a, d, points, center)` of a sphere series module with a boundary
    condition's parameters bound."""
    return SimpleNamespace(far_field=partial(module.far_field, **params),
                           monostatic_far_field=partial(module.monostatic_far_field, **params),
                           scattered_field=partial(module.scattered_field, **params))


def _fluid(boundary) -> SimpleNamespace:
    """The fluid sphere's series; an absorption makes h complex (absorption.py)."""
    h = boundary.sound_speed_ratio
    if boundary.absorption_db_per_wavelength:
        h = complex_sound_speed_ratio(h, boundary.absorption_db_per_wavelength)
    return _series(fluid_sphere, density_ratio=boundary.density_ratio, sound_speed_ratio=h)


# boundary kind (bem/formulations' registry) -> its sphere's series with the Boundary's parameters
SERIES = {"rigid": lambda boundary: _series(rigid_sphere),
          "pressure_release": lambda boundary: _series(pressure_release_sphere),
          "impedance": lambda boundary: _series(impedance_sphere,
                                                admittance=boundary.admittance),
          "fluid": _fluid}


def sphere_series(boundary) -> SimpleNamespace:
    """The exact fields of a sphere with this boundary condition (a boundary.Boundary):
    `far_field(k, a, d, xhat, center)`, `monostatic_far_field(k, a, ds, center)` and
    `scattered_field(k, a, d, points, center)`."""
    return SERIES[boundary.kind](boundary)


def concentric_chain(case) -> list | None:
    """The bodies of a case (case.Case), outermost first, where they are concentric spheres
    each holding at most one other (a sphere, or shells around a core); None otherwise."""
    chain = list(case.bodies)
    if not chain or any(getattr(b.geometry, "kind", None) != "sphere" for b in chain):
        return None
    if any(b.parent != i - 1 for i, b in enumerate(chain)):  # each inside the one before
        return None
    centers = {tuple(map(float, b.geometry.center)) for b in chain}
    radii = [float(b.geometry.radius) for b in chain]
    if len(centers) != 1 or any(r1 >= r0 for r0, r1 in zip(radii, radii[1:])):
        return None
    return chain


def has_series(case) -> bool:
    """Whether `case_series` has the exact answer of this case."""
    return concentric_chain(case) is not None


def case_series(case) -> SimpleNamespace:
    """`far_field(k, d, xhat)` and `monostatic_far_field(k, ds)` of a sphere case or of
    concentric spheres (layered_sphere.py), with the case's radii and centre bound."""
    chain = concentric_chain(case)
    if chain is None:
        raise InputError(f"{case.where}.geometry: the exact series needs a sphere, or "
                         "concentric spheres each holding at most one other")
    center = chain[0].geometry.center
    if len(chain) == 1:
        s = sphere_series(case.boundary)
        a = chain[0].geometry.radius
        return SimpleNamespace(
            far_field=lambda k, d, xhat: s.far_field(k, a, d, xhat, center),
            monostatic_far_field=lambda k, ds: s.monostatic_far_field(k, a, ds, center))
    layers, core = layered_sphere.layers_from_boundaries(
        [b.boundary for b in chain], [f"{b.where}.boundary" for b in chain])
    radii = [b.geometry.radius for b in chain]
    return SimpleNamespace(
        far_field=lambda k, d, xhat: layered_sphere.far_field(k, radii, layers, core, d, xhat,
                                                              center),
        monostatic_far_field=lambda k, ds: layered_sphere.monostatic_far_field(
            k, radii, layers, core, ds, center))
