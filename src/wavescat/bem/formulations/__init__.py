"""Boundary-integral formulations, one module per boundary condition of the scatterer.

A case names its boundary condition with `boundary.kind` (docs/conventions.md; the
schema's default `rigid`); `boundary_from(block)` reads the block into a Boundary (the
kind and its parameters, problem/boundary.py) and `formulation_for(boundary)` returns
the formulation that solves it (registry.py). A formulation says which keys its block takes,
which unknown it solves for, on which function space, with which boundary operators, and
how to turn the assembled operators and the incident field into a preconditioned system
(`matvec`, `rhs`), the far field and the near-field potential of the unknown, and what
the solution records carry. The driver (solve/driver.py) and the probes
(commands/probes.py) hold no physics of their own: a new boundary condition is a new
module here registered in registry.FORMULATIONS (its keys in the config schema, its
sphere's exact series in reference/sphere.py).

  rigid.py             SoundHardBurtonMiller, whose pieces the others inherit
  pressure_release.py  PressureReleaseBurtonMiller
  impedance.py         ImpedanceBurtonMiller
  fluid.py             FluidMuller
  nested_bodies.py     NestedTransmission (bodies inside a fluid body)

Conventions (docs/conventions.md): time dependence exp(-i w t), incident plane waves
exp(ik d.x) of unit amplitude, outward normal n, G(x, y) = exp(ik|x-y|)/(4 pi |x-y|).
"""
from __future__ import annotations

import json

from ...errors import InputError, WavescatError
from ...geometry.bodies import Body
from ...problem.boundary import Boundary
from .fluid import FluidMuller
from .impedance import ImpedanceBurtonMiller
from .nested_bodies import NestedTransmission, sub_space
from .pressure_release import PressureReleaseBurtonMiller
from .registry import FORMULATIONS, INNER_KINDS, boundary_from, formulation_for
from .rigid import SoundHardBurtonMiller

__all__ = ["Boundary", "FORMULATIONS", "INNER_KINDS", "FluidMuller", "ImpedanceBurtonMiller",
           "NestedTransmission", "PressureReleaseBurtonMiller", "SoundHardBurtonMiller",
           "boundary_from", "formulation_for", "formulation_for_case", "formulation_of_record",
           "sub_space"]


def formulation_for_case(case):
    """The formulation of a case (case.Case): its body's, or the nested system where it
    holds bodies inside."""
    if len(case.bodies) > 1:
        return NestedTransmission(case.bodies)
    return formulation_for(case.boundary)


def formulation_of_record(solution: dict):
    """The formulation that wrote a solution (records.read_solution); files without a
    `boundary` attribute are rigid-body solutions (they predate the other kinds)."""
    where = solution.get("path", "solution")
    try:
        if solution.get("bodies"):  # nested: the tree as the records hold it
            bodies = json.loads(solution["bodies"])
            return NestedTransmission([
                Body(i, b["parent"], 0, None, boundary_from(b["boundary"]), b["where"])
                for i, b in enumerate(bodies)])
        form = formulation_for(boundary_from(json.loads(solution.get("boundary",
                                                                     '{"kind": "rigid"}'))))
    except InputError as exc:
        raise WavescatError(f"{where}: boundary {exc}") from None
    if solution.get("formulation", form.name) != form.name:
        raise WavescatError(f"{where}: formulation {solution['formulation']!r} does not match "
                            f"boundary kind {form.kind!r} ({form.name})")
    return form
