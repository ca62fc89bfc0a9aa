"""The exact sphere series of a case's boundary condition (`boundary:` block, docs/conventions.md)."""
from __future__ import annotations

from functools import partial
from types import SimpleNamespace

from ..errors import ConfigError
from . import absorption, fluid_sphere, impedance_sphere, pressure_release_sphere, rigid_sphere


def series_for(boundary: dict | None = None, where: str = "boundary",
               medium: dict | None = None) -> SimpleNamespace:
    """`far_field(k, a, d, xhat, center)`, `monostatic_far_field(k, a, ds, center)` and
    `scattered_field(k, a, d, points, center)` of the sphere with boundary condition
    `boundary` (None: rigid); `medium` (density, sound_speed)
    turns a fluid body's absolute density and sound speed into contrasts; a fluid's
    `absorption_db_per_wavelength` makes its sound-speed ratio complex (absorption.py)."""
    boundary = dict(boundary or {})
    kind = boundary.get("kind", "rigid")
    if kind == "rigid":
        module, params = rigid_sphere, {}
    elif kind == "pressure_release":
        module, params = pressure_release_sphere, {}
    elif kind == "impedance":
        if "admittance" not in boundary:
            raise ConfigError(f"{where}.admittance: required for boundary kind 'impedance'")
        module, params = impedance_sphere, {"admittance": boundary["admittance"]}
    elif kind == "fluid":
        g, h = fluid_sphere.fluid_contrasts(boundary, medium, where)
        alpha = boundary.get("absorption_db_per_wavelength") or 0.0
        if alpha:
            try:
                h = absorption.complex_sound_speed_ratio(h, alpha)
            except ConfigError as error:
                raise ConfigError(f"{where}.{error}") from None
        module, params = fluid_sphere, {"density_ratio": g, "sound_speed_ratio": h}
    else:
        raise ConfigError(f"{where}.kind = {kind!r}: no exact sphere series for this boundary "
                          "condition yet")
    return SimpleNamespace(far_field=partial(module.far_field, **params),
                           monostatic_far_field=partial(module.monostatic_far_field, **params),
                           scattered_field=partial(module.scattered_field, **params))


def concentric_chain(case: dict) -> list[dict] | None:
    """The bodies of a case, outermost first, where they are concentric spheres each holding
    at most one other (a sphere, or shells around a core); None otherwise."""
    chain, body = [], case
    while body is not None:
        geometry = body.get("geometry") or {}
        if geometry.get("kind") != "sphere":
            return None
        chain.append(body)
        inside = body.get("inside") or []
        if len(inside) > 1:
            return None
        body = inside[0] if inside else None
    centers = {tuple(map(float, b["geometry"].get("center", (0.0, 0.0, 0.0)))) for b in chain}
    radii = [float(b["geometry"]["radius"]) for b in chain]
    if len(centers) != 1 or any(r1 >= r0 for r0, r1 in zip(radii, radii[1:])):
        return None
    return chain


def has_series(case: dict) -> bool:
    """Whether `case_series` has the exact answer of this case."""
    return concentric_chain(case) is not None


def case_series(case: dict, medium: dict | None = None, where: str = "case") -> SimpleNamespace:
    """`far_field(k, d, xhat)` and `monostatic_far_field(k, ds)` of a sphere case or of
    concentric spheres (layered_sphere.py), with the case's radii and centre bound."""
    from . import layered_sphere  # noqa: PLC0415

    chain = concentric_chain(case)
    if chain is None:
        raise ConfigError(f"{where}.geometry: the exact series needs a sphere, or concentric "
                          "spheres each holding at most one other")
    center = chain[0]["geometry"].get("center", (0.0, 0.0, 0.0))
    if len(chain) == 1:
        s = series_for(case.get("boundary"), f"{where}.boundary", medium)
        a = chain[0]["geometry"]["radius"]
        return SimpleNamespace(
            far_field=lambda k, d, xhat: s.far_field(k, a, d, xhat, center),
            monostatic_far_field=lambda k, ds: s.monostatic_far_field(k, a, ds, center))
    names = [where] + [f"{where}" + ".inside[0]" * i for i in range(1, len(chain))]
    layers, core = layered_sphere.layers_from_boundaries(
        [b.get("boundary") for b in chain], medium, [f"{n}.boundary" for n in names])
    radii = [b["geometry"]["radius"] for b in chain]
    return SimpleNamespace(
        far_field=lambda k, d, xhat: layered_sphere.far_field(k, radii, layers, core, d, xhat,
                                                              center),
        monostatic_far_field=lambda k, ds: layered_sphere.monostatic_far_field(
            k, radii, layers, core, ds, center))
