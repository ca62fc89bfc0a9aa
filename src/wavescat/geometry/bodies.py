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
`medium`, never to the enclosing body. Inner bodies are of the kinds whose formulation may
be a core (bem.formulations.INNER_KINDS: fluid, rigid, pressure_release). The config layer
reads the tree into Body objects (configuration/case.py); this module holds what is known of them.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Body:
    """One body of a case (one closed surface of its mesh).

    index: its surface id; parent: the enclosing body's index (-1 for the outer body);
    depth: 0 for the outer body, 1 for a body in it, ...; geometry (geometry.shape.Geometry),
    boundary (bem.formulations.Boundary); where: its config path, which messages name it by
    ("cases.fish", "cases.fish.inside[0]", ...). sound_speed, density: the fluid inside it
    (m/s, kg/m^3, ratios times the medium's), None for a body of another kind."""
    index: int
    parent: int
    depth: int
    geometry: object
    boundary: object
    where: str
    sound_speed: float | None = None
    density: float | None = None

    @property
    def kind(self) -> str:
        return self.boundary.kind

    @property
    def is_fluid(self) -> bool:
        return self.kind == "fluid"


def children(bodies: list[Body], index: int) -> list[Body]:
    """The bodies directly inside body `index`."""
    return [b for b in bodies if b.parent == index]
