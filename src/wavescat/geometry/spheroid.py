"""Ellipsoid with `semi_axes` [a, b, c] along x, y, z about `center` (a scaled OCC sphere).

Geometry sizing follows the exact curvature of the ellipsoid: the chord-sag size from the
mean curvature H (volume tolerance) and at most 2 pi / ELEMENTS_PER_TURN of the smallest
local radius of curvature 1 / k_max (the tips of slender spheroids), both as gmsh formulas.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..surface import SurfaceMesh
from .gmsh_model import gmsh_session, mesh_occ_model, size_field
from .params import vector3
from .shape import Geometry
from .sizing import ELEMENTS_PER_TURN, MIN_SIZE_OF_THINNEST, MeshOptions


def _num(v: float) -> str:
    """A number as gmsh's formula parser reads it (no exponent notation)."""
    return f"({float(v):.24f})"


def curvature_formulas(semi_axes, x0) -> tuple[str, str]:
    """gmsh formulas of the mean curvature H and the largest principal curvature k_max of
    the ellipsoid through the point (x, y, z) on it (H = (k1 + k2) / 2, K = k1 k2)."""
    a, b, c = (float(s) for s in semi_axes)
    X, Y, Z = (f"({q}-{_num(v)})" for q, v in zip("xyz", x0))
    g2 = f"({X}^2/{_num(a**4)}+{Y}^2/{_num(b**4)}+{Z}^2/{_num(c**4)})"
    abc2 = (a * b * c) ** 2
    H = f"(({_num(a*a + b*b + c*c)}-{X}^2-{Y}^2-{Z}^2)/({_num(2 * abc2)}*{g2}^1.5))"
    K = f"(1/({_num(abc2)}*{g2}^2))"
    return H, f"({H}+sqrt(max({H}^2-{K},0)))"


@dataclass(frozen=True, kw_only=True)
class Spheroid(Geometry):
    """An ellipsoid with `semi_axes` (a, b, c) along x, y, z about `center`."""

    kind: ClassVar[str] = "spheroid"
    semi_axes: tuple[float, float, float]

    def __post_init__(self):
        super().__post_init__()
        self._set("semi_axes", vector3("semi_axes", self.semi_axes, positive_entries=True))

    def build(self, options: MeshOptions) -> SurfaceMesh:
        return spheroid(self.semi_axes, self.center, options)

    def area(self) -> float:
        """Knud Thomsen's approximation, within about 1%."""
        a, b, c = self.semi_axes
        p = 1.6075
        return 4.0 * math.pi * (((a * b) ** p + (a * c) ** p + (b * c) ** p) / 3.0) ** (1.0 / p)

    def volume_and_curvature(self) -> tuple[float, float]:
        """The total curvature of the sphere of the mean semi-axis."""
        a, b, c = self.semi_axes
        return 4.0 / 3.0 * math.pi * a * b * c, 4.0 * math.pi * (a + b + c) / 3.0

    def curvature_features(self) -> list[dict]:
        """The tips of the longest axis, curved by the thinnest one."""
        s = np.asarray(self.semi_axes, float)
        i = int(np.argmax(s))
        tip = np.zeros(3)
        tip[i] = s[i]
        x0 = np.asarray(self.center, float)
        return [{"name": f"{end} tip", "point": list(x0 + sign * tip),
                 "radius": float(s.min() ** 2 / s[i])} for sign, end in ((1, "+"), (-1, "-"))]

    def bounding_box(self) -> tuple[list[float], list[float]]:
        return ([c - a for c, a in zip(self.center, self.semi_axes)],
                [c + a for c, a in zip(self.center, self.semi_axes)])


def spheroid(semi_axes, x0, options: MeshOptions) -> SurfaceMesh:
    a, b, c = semi_axes

    def sizes(gmsh, volume, area):
        H, k_max = curvature_formulas((a, b, c), x0)
        sag, turn = options.sag(volume, area), 6.283185307179586 / ELEMENTS_PER_TURN
        r = options.geometry_refinement
        turn *= min(r, 1.0)  # a second, coarser try keeps the tips as they are
        # Floor: a needle tip would otherwise ask for ever smaller elements.
        floor = MIN_SIZE_OF_THINNEST * min(a, b, c)
        return [size_field(gmsh, f"max({_num(floor)},min({_num(r)}*sqrt({_num(8 * sag)}/{H}),"
                                 f"{_num(turn)}/{k_max}))")]

    with gmsh_session(options.verbose) as gmsh:
        occ = gmsh.model.occ
        ball = occ.addSphere(*x0, 1.0)
        occ.dilate([(3, ball)], *x0, a, b, c)
        mesh = mesh_occ_model(gmsh, options, "spheroid", sizes)
    # OpenCASCADE integrates the dilated sphere's spline 0.04% off; the vertices lie on the
    # ellipsoid itself, whose volume is known.
    mesh.meta["exact_volume"] = 4.0 / 3.0 * math.pi * a * b * c
    return mesh
