"""The exact sphere series of a case's boundary condition (`boundary:` block, docs/conventions.md)."""
from __future__ import annotations

from functools import partial
from types import SimpleNamespace

from ..errors import ConfigError
from . import absorption, fluid_sphere, impedance_sphere, pressure_release_sphere, rigid_sphere


def series_for(boundary: dict | None = None, where: str = "boundary",
               medium: dict | None = None) -> SimpleNamespace:
    """`far_field(k, a, d, xhat, center)` and `monostatic_far_field(k, a, ds, center)` of the
    sphere with boundary condition `boundary` (None: rigid); `medium` (density, sound_speed)
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
                           monostatic_far_field=partial(module.monostatic_far_field, **params))
