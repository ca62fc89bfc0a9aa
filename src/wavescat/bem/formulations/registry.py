"""The boundary kinds: a kind's formulation class, and a config block read into a Boundary."""
from __future__ import annotations

import json

from ... import defaults
from ...errors import InputError
from ...problem.boundary import Boundary
from ...problem.medium import Medium
from .fluid import FluidMuller
from .impedance import ImpedanceBurtonMiller
from .pressure_release import PressureReleaseBurtonMiller
from .rigid import SoundHardBurtonMiller


FORMULATIONS = {cls.kind: cls for cls in (SoundHardBurtonMiller, PressureReleaseBurtonMiller,
                                           FluidMuller, ImpedanceBurtonMiller)}


def boundary_from(block: dict | None = None, medium: Medium | None = None) -> Boundary:
    """The Boundary of a `boundary` block (None or {}: the schema's default kind); `medium`
    (default: the schema's) turns a fluid's absolute density and sound speed into
    contrasts. InputError naming the key of what is wrong (the config layer adds where)."""
    block = {**defaults.BOUNDARY, **(block or {})}
    kind = block["kind"]
    if kind not in FORMULATIONS:
        raise InputError(f"kind = {kind!r}: must be one of {', '.join(FORMULATIONS)}")
    cls = FORMULATIONS[kind]
    foreign = sorted(set(block) - {"kind"} - cls.keys)
    if foreign:
        raise InputError(f"{foreign[0]} = {block[foreign[0]]!r}: not a key of boundary kind "
                         f"{kind!r}")
    return Boundary(kind, **cls.parameters(block, medium or Medium()),
                    given=json.dumps(block, sort_keys=True))


INNER_KINDS = tuple(kind for kind, cls in FORMULATIONS.items() if cls.inner)


def formulation_for(boundary: Boundary):
    """The formulation of a surface's boundary condition."""
    return FORMULATIONS[boundary.kind](boundary)
