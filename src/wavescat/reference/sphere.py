"""The exact far field of a case whose bodies are a sphere or concentric spheres: one
sphere's series is its boundary condition's (each formulation of bem/formulations/ carries
its own, `sphere_series`); concentric spheres are layered_sphere.py's."""
from __future__ import annotations

from types import SimpleNamespace

from ..bem.formulations import formulation_for
from ..errors import InputError
from . import layered_sphere


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
        s = formulation_for(case.boundary).sphere_series()
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
