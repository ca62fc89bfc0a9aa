"""Is the mesh fine enough for the body? Warnings for meshes that are coarse against the
body's volume, its smallest radius of curvature (spheroid tips, the submarine's sail
leading edge and stern hub) or its thinnest part: such meshes give wrong target strengths
without any other sign (a slender spheroid meshed at 10 elements per wavelength alone
misses its end-on backscatter by 1.6 dB)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import MeshError
from ..surface import SurfaceMesh
from .sizing import COARSE_ELEMENTS_PER_TURN
from .volume import volume_deviation


def elements_per_turn(mesh: SurfaceMesh, point, radius: float) -> float:
    """2 pi radius over the mean length of the edges at the mesh vertex nearest to `point`:
    the mesh's elements per full turn of that radius of curvature there."""
    nearest = int(np.argmin(np.linalg.norm(mesh.vertices - np.asarray(point, float), axis=1)))
    t = mesh.triangles
    edges = np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]])
    edges = edges[(edges == nearest).any(axis=1)]
    lengths = np.linalg.norm(mesh.vertices[edges[:, 0]] - mesh.vertices[edges[:, 1]], axis=1)
    return 2 * math.pi * radius / lengths.mean()


def resolution_warnings(mesh: SurfaceMesh, geometry, source: str,
                        volume_error: float | None) -> list[str]:
    """Warnings (text) where `mesh` is coarse against the body `geometry` (a Geometry:
    its volume and its tightly curved features)."""
    out = []
    exact = mesh.meta.get("exact_volume")
    if exact and volume_error:
        err = volume_deviation(mesh)
        if abs(err) > volume_error:
            out.append(f"{source}: meshed volume {mesh.enclosed_volume:.6g} m^3 is "
                       f"{100 * err:+.2f}% off the body's {exact:.6g} m^3 ("
                       f"{'smaller' if err < 0 else 'larger'} than the body; tolerance "
                       f"{100 * volume_error:g}%): the mesh is coarse against the body; "
                       "low-frequency target strength follows the volume squared")
    for f in geometry.curvature_features():
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
                        where: str = "", geometry=None,
                        allow_coarse: bool = False, case_where: str | None = None) -> str | None:
    """One line refusing a mesh whose mean edge gives fewer than
    REFUSE_ELEMENTS_PER_WAVELENGTH elements per wavelength, or None where it is fine.

    wavelengths: {what: wavelength in m}, e.g. {"the water's at 38000 Hz": 0.0389,
    "the interior's at 38000 Hz": 0.0091}: every wavelength the surface separates (for nested
    bodies, per surface: the water's or the enclosing fluid's and the body's own); the
    shortest counts. source names the file or the built-in body, where the case's config
    path (e.g. cases.capsule), geometry its geometry block (for the way out), extent the
    sides of the mesh's bounding box (m); case_where the case's path where `where` is a
    nested body's (the mesh keys are the case's). These are the messages a user reads, so
    they name the keys to change."""
    if allow_coarse or not wavelengths:
        return None
    what, wavelength = min(wavelengths.items(), key=lambda kv: kv[1])
    epw = wavelength / float(mean_edge)
    if epw >= REFUSE_ELEMENTS_PER_WAVELENGTH:
        return None
    prefix = f"{where}." if where else ""
    case_where = where if case_where is None else case_where
    mesh_prefix = f"{case_where}." if case_where else ""
    head = (f"{where + ': ' if where else ''}{source} is {_sides(extent)} with a mean edge of "
            f"{mean_edge:.3g} m: {epw:.2g} elements per wavelength of {wavelength:.3g} m ({what}), "
            f"fewer than {REFUSE_ELEMENTS_PER_WAVELENGTH:g}, far too coarse to solve")
    ways = []
    stored = (getattr(geometry, "kind", None) == "file"
              and str(geometry.path).lower().endswith((".stl", ".msh")))
    longest = float(np.max(extent))
    if stored and geometry.scale == 1.0 and longest >= 1.0:
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


def surface_wavelengths(case, frequency_hz: float) -> list[tuple[str, object, dict]]:
    """Per surface of a case (case.Case: its bodies, in surface order): (config path,
    Geometry, {what: wavelength}) with every wavelength the surface separates at
    `frequency_hz`: the fluid outside it (the water, or the fluid body that holds it) and,
    for a fluid body, its interior."""
    c = case.medium.sound_speed
    f = float(frequency_hz)
    out = []
    for body in case.bodies:
        if body.parent < 0:
            outside, c_out = "the water's", c
        else:
            outer = case.bodies[body.parent]
            outside, c_out = f"the fluid's of {outer.where}", outer.sound_speed or c
        waves = {f"{outside} at {f:g} Hz": c_out / f}
        if body.sound_speed:
            waves[f"the body's interior at {f:g} Hz"] = body.sound_speed / f
        out.append((body.where, body.geometry, waves))
    return out


def case_wavelengths(case, frequency_hz: float) -> dict:
    """{what: wavelength} that a case's outer surface separates at `frequency_hz`: the
    medium's, and a fluid body's interior one (surface_wavelengths gives them per surface
    of a nested case)."""
    return surface_wavelengths(case, frequency_hz)[0][2]


def _named(case) -> str:
    """The case's config path where it has a name (the messages of a nameless case given
    by hand name no path)."""
    return case.where if case.name else ""


def check_mesh_resolution(mesh: SurfaceMesh, case, frequency_hz: float) -> None:
    """Raise MeshError (one line, coarse_mesh_refusal) where `mesh` is far too coarse for
    the case at `frequency_hz`, unless the case sets mesh.allow_coarse. A mesh of several
    surfaces (`n_surfaces`, `surface(i)`: nested bodies) is checked surface by surface, each
    against the wavelengths it separates (surface_wavelengths)."""
    if case.mesh.allow_coarse:
        return
    where = _named(case)
    count = int(getattr(mesh, "n_surfaces", 1) or 1)
    # surface i of the mesh is body i of the tree (a one-surface mesh: the outer body's)
    surfaces = surface_wavelengths(case, frequency_hz)[:count]
    for i, (path, geometry, waves) in enumerate(surfaces):
        part = mesh if count == 1 else mesh.surface(i)
        source = (str(geometry.path) if getattr(geometry, "path", None)
                  else f"the {geometry.kind if geometry else 'body'} mesh")
        msg = coarse_mesh_refusal(
            float(part.edge_lengths.mean()), mesh_extent(part.vertices), waves, source=source,
            where=path if (where or count > 1) else "", geometry=geometry,
            case_where=where)
        if msg:
            raise MeshError(msg)


# Below this many elements per wavelength a case is solved with a warning (the threshold of
# solve/driver.py's warning on the water's wavelength, applied here to the others).
WARN_ELEMENTS_PER_WAVELENGTH = 5.0


def interior_resolution_warnings(mesh, case, frequency_hz: float) -> list[str]:
    """Warnings where a surface's mean edge gives fewer than WARN_ELEMENTS_PER_WAVELENGTH
    elements per wavelength of a fluid it separates other than the water (a fluid body's
    interior, or the body that holds it; the solve driver warns on the water's)."""
    where = _named(case)
    count = int(getattr(mesh, "n_surfaces", 1) or 1)
    out = []
    for i, (path, _, waves) in enumerate(surface_wavelengths(case, frequency_hz)[:count]):
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
