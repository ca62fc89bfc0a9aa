"""Is the mesh fine enough for the body? Warnings for meshes that are coarse against the
body's volume, its smallest radius of curvature (spheroid tips, the submarine's sail
leading edge and stern hub) or its thinnest part: such meshes give wrong target strengths
without any other sign (a slender spheroid meshed at 10 elements per wavelength alone
misses its end-on backscatter by 1.6 dB)."""
from __future__ import annotations

import math

import numpy as np

from ..surface import SurfaceMesh
from .sizing import COARSE_ELEMENTS_PER_TURN


def curvature_features(geometry: dict) -> list[dict]:
    """Points of smallest radius of curvature of a built-in body: name, point, radius."""
    kind = geometry.get("kind")
    x0 = np.asarray(geometry.get("center", [0.0, 0.0, 0.0]), float)
    if kind == "sphere":
        r = float(geometry["radius"])
        return [{"name": "sphere", "point": list(x0 + [0.0, 0.0, r]), "radius": r}]
    if kind == "spheroid":
        s = np.asarray(geometry["semi_axes"], float)
        i = int(np.argmax(s))  # tips of the longest axis, curved by the thinnest one
        tip = np.zeros(3)
        tip[i] = s[i]
        return [{"name": f"{end} tip", "point": list(x0 + sign * tip),
                 "radius": float(s.min() ** 2 / s[i])} for sign, end in ((1, "+"), (-1, "-"))]
    if kind == "submarine":
        from .submarine import curvature_features as submarine_features
        return submarine_features(geometry)
    if kind == "krm":  # the lofted surface's tightest curvature near head and tail
        from .krm import curvature_features as krm_features
        return krm_features(geometry)
    return []


def elements_per_turn(mesh: SurfaceMesh, point, radius: float) -> float:
    """2 pi radius over the mean length of the edges at the mesh vertex nearest to `point`:
    the mesh's elements per full turn of that radius of curvature there."""
    nearest = int(np.argmin(np.linalg.norm(mesh.vertices - np.asarray(point, float), axis=1)))
    t = mesh.triangles
    edges = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    edges = edges[(edges == nearest).any(axis=1)]
    lengths = np.linalg.norm(mesh.vertices[edges[:, 0]] - mesh.vertices[edges[:, 1]], axis=1)
    return 2 * math.pi * radius / lengths.mean()


def resolution_warnings(mesh: SurfaceMesh, geometry: dict, source: str,
                        volume_error: float | None) -> list[str]:
    """Warnings (text) where `mesh` is coarse against the body described by `geometry`."""
    out = []
    exact = mesh.meta.get("exact_volume")
    if exact and volume_error:
        err = 1 - mesh.enclosed_volume / exact
        if abs(err) > volume_error:
            out.append(f"{source}: meshed volume {mesh.enclosed_volume:.6g} m^3 is "
                       f"{100 * err:+.2f}% off the body's {exact:.6g} m^3 (tolerance "
                       f"{100 * volume_error:g}%): the mesh is coarse against the body; "
                       "low-frequency target strength follows the volume squared")
    for f in curvature_features(geometry):
        n = elements_per_turn(mesh, f["point"], f["radius"])
        if n < COARSE_ELEMENTS_PER_TURN:
            out.append(f"{source}: {n:.1f} elements per turn of the {f['radius']:.4g} m radius "
                       f"of curvature at the {f['name']} (fewer than {COARSE_ELEMENTS_PER_TURN}): "
                       "the mesh is coarse against the body there; results may be wrong "
                       "(set mesh.max_element_size or mesh.elements_per_wavelength higher)")
    return out
