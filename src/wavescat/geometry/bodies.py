"""The bodies of a case: the outer body (`geometry`, `boundary`) and the bodies nested in it
(`inside`, recursive), in surface-id order.

```yaml
cases:
  fish:
    geometry: {kind: spheroid, semi_axes: [0.02, 0.02, 0.12]}
    boundary: {kind: fluid, density_ratio: 1.04, sound_speed_ratio: 1.04}
    inside:                           # only under a fluid boundary
      - geometry: {kind: spheroid, semi_axes: [0.005, 0.005, 0.035]}
        boundary: {kind: fluid, density: 1.24, sound_speed: 345}
        inside: []                    # recursive; fluid bodies only
```
Surfaces are numbered depth-first: 0 is the outer body, then its first `inside` body, that
body's insides, then the next sibling, ... (the order of the mesh's `surface_ids`). Ratios
(density_ratio, sound_speed_ratio) in any boundary block are relative to the case's
`medium`, never to the enclosing body. Inner bodies are fluid, rigid or pressure_release.
Importing this module loads nothing heavy (no gmsh, no scipy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..defaults import BOUNDARY, MEDIUM
from ..errors import ConfigError

INNER_BOUNDARY_KINDS = ("fluid", "rigid", "pressure_release")  # of a body inside another
BODY_KEYS = {"description", "geometry", "boundary", "inside"}


@dataclass(frozen=True)
class Body:
    """One body of a case (one closed surface of its mesh).

    index: its surface id; parent: the enclosing body's index (-1 for the outer body);
    depth: 0 for the outer body, 1 for a body in it, ...; geometry, boundary: its blocks as
    given (boundary with `kind` filled in: no block means rigid); where: its config path for
    messages ("cases.fish", "cases.fish.inside[0]", ...). sound_speed, density: the fluid
    inside it (m/s, kg/m^3, ratios times the medium's), None for a rigid or
    pressure-release body (and density None for an impedance one)."""
    index: int
    parent: int
    depth: int
    geometry: dict
    boundary: dict
    where: str
    sound_speed: float | None = None
    density: float | None = None

    @property
    def kind(self) -> str:
        return self.boundary["kind"]

    @property
    def is_fluid(self) -> bool:
        return self.kind == "fluid"


def _material(boundary: dict, medium: dict, key: str, where: str) -> float | None:
    """A fluid body's `key` (density or sound_speed): absolute, or the ratio times the
    medium's; ConfigError unless exactly one of the two is given and > 0."""
    given = [k for k in (f"{key}_ratio", key) if boundary.get(k) is not None]
    if len(given) != 1:
        what = "both are given" if given else "neither is given"
        raise ConfigError(f"{where}.boundary.{key}_ratio / {where}.boundary.{key}: boundary "
                          f"kind 'fluid' needs exactly one of them ({what})")
    value = boundary[given[0]]
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = float("nan")
    if not (v > 0 and math.isfinite(v)):
        raise ConfigError(f"{where}.boundary.{given[0]} = {value!r}: must be a number > 0")
    if given[0] == key:
        return v
    base = (medium or {}).get(key)
    if base is None:
        base = MEDIUM[key]
    return v * float(base)


def fluid_sound_speed(boundary: dict | None, medium: dict, where: str = "case") -> float | None:
    """The phase speed (m/s) of the fluid inside a body with this boundary block (None
    unless it is a fluid body); absorption does not enter it."""
    boundary = boundary or {}
    if boundary.get("kind") != "fluid":
        return None
    return _material(boundary, medium, "sound_speed", where)


def body_tree(case: dict, medium: dict, where: str = "case") -> list[Body]:
    """The bodies of `case` in surface-id order (depth-first over `inside`); `where` names the
    case in messages (e.g. "cases.fish"). ConfigError, naming the key, where a body has
    `inside` under a boundary that is not fluid, an inner body lacks geometry or boundary or
    has a kind other than fluid, rigid or pressure_release."""
    bodies: list[Body] = []

    def visit(node: dict, parent: int, depth: int, path: str) -> None:
        if not isinstance(node, dict):
            raise ConfigError(f"{path} = {node!r}: must be a body (geometry, boundary, inside)")
        if depth:
            foreign = sorted(set(node) - BODY_KEYS)
            if foreign:
                raise ConfigError(f"{path}.{foreign[0]}: not a key of a body inside another "
                                  f"(allowed: {', '.join(sorted(BODY_KEYS))})")
            for key in ("geometry", "boundary"):
                if not isinstance(node.get(key), dict):
                    raise ConfigError(f"{path}: a body inside another needs `{key}` (a mapping)")
        geometry = node.get("geometry")
        if not isinstance(geometry, dict):
            raise ConfigError(f"{path}.geometry: missing (a mapping with `kind`)")
        given = node.get("boundary")
        if given is not None and not isinstance(given, dict):
            raise ConfigError(f"{path}.boundary = {given!r}: must be a mapping")
        boundary = {**BOUNDARY, **(given or {})}
        kind = boundary["kind"]
        if depth and kind not in INNER_BOUNDARY_KINDS:
            raise ConfigError(f"{path}.boundary.kind = {kind!r}: a body inside another must be "
                              f"one of {', '.join(INNER_BOUNDARY_KINDS)}")
        fluid = kind == "fluid"
        index = len(bodies)
        bodies.append(Body(index, parent, depth, geometry, boundary, path,
                           _material(boundary, medium, "sound_speed", path) if fluid else None,
                           _material(boundary, medium, "density", path) if fluid else None))
        inside = node.get("inside")
        if inside is None:
            return
        if not isinstance(inside, list):
            raise ConfigError(f"{path}.inside = {inside!r}: must be a list of bodies")
        if inside and not fluid:
            article = "an" if kind[:1] in "aeiou" else "a"
            raise ConfigError(f"{path}.inside: bodies inside {article} {kind.replace('_', '-')} "
                              "body are not possible (no field enters it); only a fluid body "
                              "(boundary.kind: fluid) can hold others")
        for i, child in enumerate(inside):
            visit(child, index, depth + 1, f"{path}.inside[{i}]")

    visit(case, -1, 0, where)
    return bodies


def is_nested(case: dict) -> bool:
    """Whether the case has bodies inside its body."""
    return bool(case.get("inside"))


def children(bodies: list[Body], index: int) -> list[Body]:
    """The bodies directly inside body `index`."""
    return [b for b in bodies if b.parent == index]


def bounding_box(geometry: dict):
    """(lower, upper) corners of a sphere's, spheroid's or box's axis-aligned bounding box
    from its parameters; None for the other kinds (their extent needs the mesh or file)."""
    kind = geometry.get("kind")
    center = [float(c) for c in geometry.get("center", (0.0, 0.0, 0.0))]
    if kind == "sphere":
        half = [float(geometry["radius"])] * 3
    elif kind == "spheroid":
        half = [float(a) for a in geometry["semi_axes"]]
    elif kind == "box":
        half = [0.5 * float(s) for s in geometry["size"]]
    else:
        return None
    return [c - h for c, h in zip(center, half)], [c + h for c, h in zip(center, half)]


def check_boxes(bodies: list[Body]) -> None:
    """ConfigError where a body's bounding box is not strictly inside its parent's (both
    known from their parameters): it cannot be inside it. The mesher checks the surfaces
    themselves; this catches the plain mistakes before any job starts."""
    for body in bodies[1:]:
        inner, outer = bounding_box(body.geometry), bounding_box(bodies[body.parent].geometry)
        if inner is None or outer is None:
            continue
        if any(lo <= plo for lo, plo in zip(inner[0], outer[0])) or any(
                hi >= phi for hi, phi in zip(inner[1], outer[1])):
            raise ConfigError(f"{body.where}.geometry: its bounding box {inner[0]}..{inner[1]} "
                              f"m is not inside that of {bodies[body.parent].where} "
                              f"{outer[0]}..{outer[1]} m: a body inside another must lie "
                              "strictly within it (check radius, semi_axes, size, center)")
