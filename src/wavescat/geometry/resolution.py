"""Is the mesh fine enough for the body? Warnings for meshes that are coarse against the
body's volume, its smallest radius of curvature (spheroid tips, the submarine's sail
leading edge and stern hub) or its thinnest part: such meshes give wrong target strengths
without any other sign (a slender spheroid meshed at 10 elements per wavelength alone
misses its end-on backscatter by 1.6 dB)."""
from __future__ import annotations

import math

import numpy as np

from ..defaults import MEDIUM
from ..errors import MeshError
from ..surface import SurfaceMesh
from .krm import curvature_features as krm_features
from .sizing import COARSE_ELEMENTS_PER_TURN
from .submarine import curvature_features as submarine_features


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
        return submarine_features(geometry)
    if kind == "krm":  # the lofted surface's tightest curvature near head and tail
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
                        allow_coarse: bool = False, case_where: str | None = None) -> str | None:
    """One line refusing a mesh whose mean edge gives fewer than
    REFUSE_ELEMENTS_PER_WAVELENGTH elements per wavelength, or None where it is fine.

    wavelengths: {what: wavelength in m}, e.g. {"the water's at 38000 Hz": 0.0389,
    "the interior's at 38000 Hz": 0.0091}: every wavelength the surface separates (for nested
    bodies, per surface: the water's or the enclosing fluid's and the body's own); the
    shortest counts. source names the file or the built-in body, where the case's config
    path (e.g. cases.capsule), geometry its geometry block (for the way out), extent the
    sides of the mesh's bounding box (m); case_where the case's path where `where` is a
    nested body's (the mesh keys are the case's)."""
    if allow_coarse or not wavelengths:
        return None
    what, wavelength = min(wavelengths.items(), key=lambda kv: kv[1])
    epw = wavelength / float(mean_edge)
    if epw >= REFUSE_ELEMENTS_PER_WAVELENGTH:
        return None
    geometry = geometry or {}
    prefix = f"{where}." if where else ""
    case_where = where if case_where is None else case_where
    mesh_prefix = f"{case_where}." if case_where else ""
    head = (f"{where + ': ' if where else ''}{source} is {_sides(extent)} with a mean edge of "
            f"{mean_edge:.3g} m: {epw:.2g} elements per wavelength of {wavelength:.3g} m ({what}), "
            f"fewer than {REFUSE_ELEMENTS_PER_WAVELENGTH:g}, far too coarse to solve")
    ways = []
    stored = (geometry.get("kind") == "file"
              and str(geometry.get("path", "")).lower().endswith((".stl", ".msh")))
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
        ways.append(f"{'otherwise ' if ways else ''}raise "
                    f"{mesh_prefix}mesh.elements_per_wavelength or lower "
                    f"{mesh_prefix}mesh.max_element_size")
    ways.append(f"or set {mesh_prefix}mesh.allow_coarse: true to solve it anyway")
    return head + "; " + "; ".join(ways)


def _sound_speed(boundary: dict, c_medium: float) -> float | None:
    """A fluid boundary block's sound speed (ratios are the medium's); None otherwise."""
    if (boundary or {}).get("kind") != "fluid":
        return None
    c1 = boundary.get("sound_speed")
    if c1 is None and boundary.get("sound_speed_ratio") is not None:
        c1 = boundary["sound_speed_ratio"] * c_medium
    return float(c1) if c1 else None


def surface_wavelengths(case: dict, medium: dict, frequency_hz: float,
                        where: str = "") -> list[tuple[str, dict, dict]]:
    """Per surface of a case, depth first over its body tree (`inside`, the surface-id order
    of CONTEXT.md): (config path, geometry block, {what: wavelength}) with every wavelength
    the surface separates at `frequency_hz`: the fluid outside it (the water, or the fluid
    body that holds it) and, for a fluid body, its interior."""
    c = float({**MEDIUM, **(medium or {})}["sound_speed"])
    f = float(frequency_hz)
    out = []

    def walk(body: dict, path: str, outside: str, c_out: float) -> None:
        waves = {f"{outside} at {f:g} Hz": c_out / f}
        c1 = _sound_speed(body.get("boundary") or {}, c)
        if c1:
            waves[f"the body's interior at {f:g} Hz"] = c1 / f
        out.append((path, body.get("geometry") or {}, waves))
        for i, inner in enumerate(body.get("inside") or []):
            walk(inner, f"{path}.inside[{i}]", f"the fluid's of {path}", c1 or c)

    walk(case, where or "case", "the water's", c)
    return out


def case_wavelengths(case: dict, medium: dict, frequency_hz: float) -> dict:
    """{what: wavelength} that a one-surface case's surface separates at `frequency_hz`: the
    medium's, and a fluid body's interior one (surface_wavelengths gives them per surface
    of a nested case)."""
    return surface_wavelengths({k: v for k, v in case.items() if k != "inside"}, medium,
                               frequency_hz)[0][2]


def check_mesh_resolution(mesh: SurfaceMesh, case: dict, medium: dict, frequency_hz: float,
                          where: str = "") -> None:
    """Raise MeshError (one line, coarse_mesh_refusal) where `mesh` is far too coarse for
    the case at `frequency_hz`, unless the case sets mesh.allow_coarse. A mesh of several
    surfaces (`n_surfaces`, `surface(i)`: nested bodies) is checked surface by surface, each
    against the wavelengths it separates (surface_wavelengths)."""
    if (case.get("mesh") or {}).get("allow_coarse"):
        return
    count = int(getattr(mesh, "n_surfaces", 1) or 1)
    # surface i of the mesh is body i of the tree (a one-surface mesh: the outer body's)
    surfaces = surface_wavelengths(case, medium, frequency_hz, where)[:count]
    for i, (path, geometry, waves) in enumerate(surfaces):
        part = mesh if count == 1 else mesh.surface(i)
        source = (str(geometry.get("path")) if geometry.get("path")
                  else f"the {geometry.get('kind', 'body')} mesh")
        msg = coarse_mesh_refusal(
            float(part.edge_lengths.mean()), mesh_extent(part.vertices), waves, source=source,
            where=path if (where or count > 1) else "", geometry=geometry,
            case_where=where)
        if msg:
            raise MeshError(msg)


# Below this many elements per wavelength a case is solved with a warning (the threshold of
# solve/driver.py's warning on the water's wavelength, applied here to the others).
WARN_ELEMENTS_PER_WAVELENGTH = 5.0


def interior_resolution_warnings(mesh, case: dict, medium: dict, frequency_hz: float,
                                 where: str = "") -> list[str]:
    """Warnings where a surface's mean edge gives fewer than WARN_ELEMENTS_PER_WAVELENGTH
    elements per wavelength of a fluid it separates other than the water (a fluid body's
    interior, or the body that holds it; the solve driver warns on the water's)."""
    count = int(getattr(mesh, "n_surfaces", 1) or 1)
    out = []
    for i, (path, _, waves) in enumerate(
            surface_wavelengths(case, medium, frequency_hz, where)[:count]):
        part = mesh if count == 1 else mesh.surface(i)
        edge = float(part.edge_lengths.mean())
        for what, wavelength in waves.items():
            epw = wavelength / edge
            if what.startswith("the water's") or epw >= WARN_ELEMENTS_PER_WAVELENGTH:
                continue
            out.append(f"{path + ': ' if where or count > 1 else ''}mesh coarser than "
                       f"{WARN_ELEMENTS_PER_WAVELENGTH:g} elements per wavelength of {what}: "
                       f"{epw:.2f} (mean edge {edge:.4g} m, wavelength {wavelength:.4g} m); "
                       "results may be inaccurate (raise mesh.elements_per_wavelength)")
    return out
