"""A body's shape: one class per geometry kind, its keys the class's fields (registered in
geometry/kinds.py). A kind builds its surface mesh and answers, from its parameters alone,
what the estimates before meshing need (area, volume and total curvature, tightly curved
features, bounding box).

Values are checked when an object is made (InputError naming the parameter); the config
layer says which key of which case a value came from.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..surface import SurfaceMesh
from .params import vector3
from .sizing import MeshOptions


@dataclass(frozen=True, kw_only=True)
class Geometry:
    """The shape of one body; `center` shifts it (every kind)."""

    kind: ClassVar[str] = ""
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def __post_init__(self):
        self._set("center", vector3("center", self.center))

    def _set(self, name: str, value) -> None:
        object.__setattr__(self, name, value)

    @classmethod
    def keys(cls) -> frozenset[str]:
        """The keys of this kind's config block besides `kind` and `center`."""
        return frozenset(f.name for f in dataclasses.fields(cls) if f.name != "center")

    @classmethod
    def required(cls) -> frozenset[str]:
        """The keys that have no default."""
        return frozenset(f.name for f in dataclasses.fields(cls)
                         if f.default is dataclasses.MISSING
                         and f.default_factory is dataclasses.MISSING)

    @classmethod
    def from_block(cls, block: dict) -> Geometry:
        """From a config block of this kind (its keys checked by the config layer)."""
        return cls(**{k: v for k, v in block.items() if k != "kind"})

    def build(self, options: MeshOptions) -> SurfaceMesh:
        """The surface mesh at `options` (element size, geometry sizing), outward."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """What messages call this body's mesh."""
        return f"{self.kind} mesh"

    # -- estimates from the parameters alone (None or nothing where unknown) ---------------
    def area(self) -> float | None:
        """Surface area (m^2)."""
        return None

    def volume_and_curvature(self) -> tuple[float, float] | None:
        """(volume, integral of the mean curvature over the surface) of a curved body (the
        geometry sizing's unknown count); None for flat or unknown bodies. Convex bodies
        have int H dA = 2 pi x mean width."""
        return None

    def curvature_features(self) -> list[dict]:
        """Points of smallest radius of curvature: name, point, radius (coarse-mesh
        warnings)."""
        return []

    def bounding_box(self) -> tuple[list[float], list[float]] | None:
        """(lower, upper) corners of the axis-aligned bounding box, where the parameters
        give it exactly."""
        return None

    def box_sides(self) -> list[float] | None:
        """The sides of a box around the body in its own axes: the smallest is its
        thickness, the diagonal its diameter (at least the true ones)."""
        box = self.bounding_box()
        return None if box is None else [hi - lo for lo, hi in zip(*box)]

    def vertex_count(self) -> int | None:
        """Vertices of a stored mesh used as it is (None: meshed at the element size)."""
        return None

    def closed_bodies(self) -> int | None:
        """Disjoint closed surfaces of a stored mesh, known before meshing (None: unknown)."""
        return None

    def stored_mesh(self) -> SurfaceMesh | None:
        """A stored mesh read quickly before any job starts (None: made by the mesh job)."""
        return None

    def files(self) -> list[str]:
        """The files the body is read from (inputs of its mesh job)."""
        return []

    def check_files(self, base_dir: Path) -> None:
        """Before any job starts: the files exist and read (InputError)."""
