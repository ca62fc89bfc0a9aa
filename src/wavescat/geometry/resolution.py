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


# -- refusal: meshes far coarser than their wavelengths ---------------------------------------
# Below two elements per wavelength (mean edge against the shortest wavelength the surface
# separates) a P1 mesh cannot carry the wave at all: the interpolant aliases, and the
# solve's answer is not inaccurate but meaningless (the millimetre file read as
# metres: 0.01 elements per wavelength, TS +44..+77 dB, GMRES one iteration per unknown).
# Such a case is refused before it solves; from 2 to MIN_ELEMENTS_PER_WAVELENGTH (5,
# solve/driver.py) it is solved with a warning. `mesh.allow_coarse: true` solves it anyway.
REFUSE_ELEMENTS_PER_WAVELENGTH = 2.0
# Units a stored geometry file may be in, named where the body's size says so.
FILE_UNITS = (("millimetres", 0.001), ("centimetres", 0.01), ("inches", 0.0254))


def mesh_extent(vertices) -> np.ndarray:
    """The sides (m) of the axis-aligned bounding box of `vertices`."""
    v = np.asarray(vertices, float)
    return v.max(axis=0) - v.min(axis=0)


def _sides(extent) -> str:
    return " x ".join(f"{s:.3g}" for s in extent) + " m"


def coarse_mesh_refusal(mean_edge: float, extent, wavelengths: dict, *, source: str,
                        where: str = "", geometry: dict | None = None,
                        allow_coarse: bool = False) -> str | None:
    """One line refusing a mesh whose mean edge gives fewer than
    REFUSE_ELEMENTS_PER_WAVELENGTH elements per wavelength, or None where it is fine.

    wavelengths: {what: wavelength in m}, e.g. {"the water's at 38000 Hz": 0.0389,
    "the interior's at 38000 Hz": 0.0091}: every wavelength the surface separates (for nested
    bodies, per surface: the water's or the enclosing fluid's and the body's own); the
    shortest counts. source names the file or the built-in body, where the case's config
    path (e.g. cases.capsule), geometry its geometry block (for the way out), extent the
    sides of the mesh's bounding box (m)."""
    if allow_coarse or not wavelengths:
        return None
    what, wavelength = min(wavelengths.items(), key=lambda kv: kv[1])
    epw = wavelength / float(mean_edge)
    if epw >= REFUSE_ELEMENTS_PER_WAVELENGTH:
        return None
    geometry = geometry or {}
    prefix = f"{where}." if where else ""
    head = (f"{where + ': ' if where else ''}{source} is {_sides(extent)} with a mean edge of "
            f"{mean_edge:.3g} m: {epw:.2g} elements per wavelength of {wavelength:.3g} m ({what}), "
            f"fewer than {REFUSE_ELEMENTS_PER_WAVELENGTH:g}, far too coarse to solve")
    ways = []
    stored = geometry.get("kind") == "file" and str(geometry.get("path", "")).lower().endswith((".stl", ".msh"))
    longest = float(np.max(extent))
    if stored and float(geometry.get("scale", 1.0)) == 1.0 and longest >= 1.0:
        # a body a metre or more long whose stored mesh would be fine in a smaller unit
        for unit, factor in FILE_UNITS:
            if epw / factor < REFUSE_ELEMENTS_PER_WAVELENGTH:
                continue
            ways.append(f"if the file is in {unit}, set {prefix}geometry.scale: {factor:g} "
                        f"(the body is then {longest * factor:.3g} m long)")
            break
    if stored:
        ways.append("otherwise remesh the file finer (a stored .stl/.msh mesh is used as it "
                    "is; a .step or .geo file is meshed at mesh.elements_per_wavelength)")
    else:
        ways.append(f"{'otherwise ' if ways else ''}raise {prefix}mesh.elements_per_wavelength "
                    f"or lower {prefix}mesh.max_element_size")
    ways.append(f"or set {prefix}mesh.allow_coarse: true to solve it anyway")
    return head + "; " + "; ".join(ways)


def case_wavelengths(case: dict, medium: dict, frequency_hz: float) -> dict:
    """{what: wavelength} that a one-surface case's surface separates at `frequency_hz`: the
    medium's, and a fluid body's interior one (a nested case's surfaces each separate two
    fluids: build the dict per surface for coarse_mesh_refusal)."""
    from ..defaults import MEDIUM  # noqa: PLC0415

    c = float({**MEDIUM, **(medium or {})}["sound_speed"])
    out = {f"the water's at {frequency_hz:g} Hz": c / frequency_hz}
    boundary = case.get("boundary") or {}
    if boundary.get("kind") == "fluid":
        c1 = boundary.get("sound_speed")
        if c1 is None and boundary.get("sound_speed_ratio") is not None:
            c1 = boundary["sound_speed_ratio"] * c
        if c1:
            out[f"the body's interior at {frequency_hz:g} Hz"] = float(c1) / frequency_hz
    return out


def check_mesh_resolution(mesh: SurfaceMesh, case: dict, medium: dict, frequency_hz: float,
                          where: str = "") -> None:
    """Raise MeshError (one line, coarse_mesh_refusal) where `mesh` is far too coarse for
    the case at `frequency_hz`, unless the case sets mesh.allow_coarse."""
    from ..errors import MeshError  # noqa: PLC0415

    geometry = case.get("geometry") or {}
    source = (str(geometry.get("path")) if geometry.get("kind") == "file"
              else f"the {geometry.get('kind', 'body')} mesh")
    msg = coarse_mesh_refusal(
        float(mesh.edge_lengths.mean()), mesh_extent(mesh.vertices),
        case_wavelengths(case, medium, frequency_hz), source=source, where=where,
        geometry=geometry, allow_coarse=bool((case.get("mesh") or {}).get("allow_coarse")))
    if msg:
        raise MeshError(msg)
