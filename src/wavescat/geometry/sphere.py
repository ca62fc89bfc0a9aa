"""Sphere of `radius` about `center`, meshed by gmsh.

Built from eight octant patches bounded by great-circle arcs (gmsh's built-in kernel, as
Bempp builds its spheres) rather than an OpenCASCADE sphere: the OCC sphere's seam and poles
leave distorted triangles there, which cost about 15% more far-field error at the same
number of DOFs (bench/bench_solve.py). The octants mesh well with Frontal-Delaunay (edges
below 1.3 h). The curvature of a sphere is 1/r everywhere, so curvature refinement is the
element size 2 pi r / n itself (gmsh's curvature sizing stalls on filled patches), and the
geometry sizing is the chord-sag size of mean curvature 1 / r.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np

from ..surface import SurfaceMesh
from .gmsh_model import generate_surface_mesh, gmsh_session, surface_from_model
from .params import positive
from .shape import Geometry
from .sizing import MeshOptions, sag_size

_AXES = np.array([(1, 0, 0), (0, 1, 0), (-1, 0, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1)], float)


@dataclass(frozen=True, kw_only=True)
class Sphere(Geometry):
    """A sphere of `radius` about `center`."""

    kind: ClassVar[str] = "sphere"
    radius: float

    def __post_init__(self):
        super().__post_init__()
        self._set("radius", positive("radius", self.radius))

    def build(self, options: MeshOptions) -> SurfaceMesh:
        return sphere(self.radius, self.center, options)

    def area(self) -> float:
        return 4.0 * math.pi * self.radius**2

    def volume_and_curvature(self) -> tuple[float, float]:
        return 4.0 / 3.0 * math.pi * self.radius**3, 4.0 * math.pi * self.radius

    def curvature_features(self) -> list[dict]:
        top = [c + d for c, d in zip(self.center, (0.0, 0.0, self.radius))]
        return [{"name": "sphere", "point": top, "radius": self.radius}]

    def bounding_box(self) -> tuple[list[float], list[float]]:
        return ([c - self.radius for c in self.center], [c + self.radius for c in self.center])


def sphere(r: float, center, options: MeshOptions) -> SurfaceMesh:
    x0 = np.asarray(center, float)
    n = options.curvature_refinement
    if n:
        h = max(min(options.h, 2 * math.pi * r / n), options.h * options.min_size_factor)
        options = replace(options, h=h, curvature_refinement=0)
    volume = 4 / 3 * math.pi * r**3
    sag = options.sag(volume, 4 * math.pi * r**2)
    if sag:
        options = replace(options, h=min(options.h, options.geometry_refinement
                                         * sag_size(sag, 1 / r)))
    with gmsh_session(options.verbose) as gmsh:
        geo = gmsh.model.geo
        middle = geo.addPoint(*x0)
        points = [geo.addPoint(*(x0 + r * a)) for a in _AXES]
        arcs = {}

        def arc(i, j):
            if (i, j) not in arcs:
                arcs[(i, j)] = geo.addCircleArc(points[i], middle, points[j])
            return arcs[(i, j)]

        for i in range(4):  # equator arc (i, i+1) closed over each pole
            j = (i + 1) % 4
            for pole in (4, 5):
                loop = geo.addCurveLoop([arc(i, j), arc(j, pole), arc(i, pole)], reorient=True)
                geo.addSurfaceFilling([loop])
        geo.synchronize()
        generate_surface_mesh(gmsh, options, adapt_curved=False)
        mesh = surface_from_model(gmsh, "sphere")
    mesh.meta["exact_volume"] = volume
    return mesh
