"""Fish shapes in the KRM format (Clay & Horne 1994; the NOAA KRM model; echoSMs): a body
and a swim bladder, each given at stations along the fish as x, width w, upper z and
lower z. Geometry kind `krm`; one `part` (body or swimbladder) is one closed surface.

Files (values in metres, times `scale`):
- `.toml`, echoSMs' shape collection: `[[shape]]` tables with arrays `x_b`, `w_b`, `z_bU`,
  `z_bL` (body) and `x_sb`, `w_sb`, `z_sbU`, `z_sbL` (swim bladder) and a `name`; `shape`
  picks one table where the file holds several.
- `.csv` / `.txt`, a table with a header row naming those columns (commas or white space;
  KRMr's body names `x_fb`, `w_fb`, `z_fbU`, `z_fbL` are read too). Columns of a part may be
  shorter than the others (empty fields); lines starting with `#` are comments.

Coordinates are kept as stored: x along the fish, with the head at the first station (the
smallest x; x = 0 at the snout in the NOAA files), the tail towards +x; z dorsal up; y to the
fish's side. Then the body is shifted by `center`.

The surface: at each station an ellipse of half-width w / 2 (along y) and half-height
(z_U - z_L) / 2 (along z) centred at z = (z_U + z_L) / 2, the stations made smooth and
lofted into one rational B-spline surface (exact ellipses around, cubic along x) that
closes at each end in a rounded tip at the end station's x. The stations are averaged over
windows of about `SPACING` of the length first (KRM outlines come quantised to pixels); the
B-spline keeps to its control net (no overshoot). Sections are kept from being flatter than
MAX_ASPECT or thinner than MIN_HALF_AXIS of the part. The surface is cut into three faces
(two tips, the tube) for gmsh; its volume, from OpenCASCADE, goes to
`mesh.meta["exact_volume"]`, the stations' own (elliptic frusta) to
`mesh.meta["krm_frusta_volume"]`.
"""
from __future__ import annotations

import logging
import math
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..errors import InputError, MeshError
from ..files import parsed_once
from ..surface import SurfaceMesh
from .checks import check_surface
from .gmsh_model import generate_surface_mesh, gmsh_session, occ_volume_area, surface_from_model
from .params import positive
from .shape import Geometry
from .sizing import MIN_SIZE_OF_THINNEST, MeshOptions, curvature_sizing

log = logging.getLogger(__name__)

PARTS = ("body", "swimbladder")
# Column names of each part, (x, width, upper z, lower z); the body also as KRMr names it.
COLUMNS = {"body": [("x_b", "w_b", "z_bU", "z_bL"), ("x_fb", "w_fb", "z_fbU", "z_fbL")],
           "swimbladder": [("x_sb", "w_sb", "z_sbU", "z_sbL")]}
MIN_STATIONS = 3
# Control rows of the lofted surface: about one per SPACING of the length (at least the
# stations' own spacing); the end rows' half-axes are at least TIP_ROUNDING of the next row's.
SPACING = 1.0 / 60.0
TIP_ROUNDING = 0.5
MAX_ASPECT = 5.0
MIN_HALF_AXIS = 0.02
# Ellipse points checked for containment of the swim bladder in the body.
CONTAINMENT_POINTS = 72


@dataclass
class Outline:
    """One part of a KRM shape: stations along x (m)."""
    x: np.ndarray
    w: np.ndarray
    z_upper: np.ndarray
    z_lower: np.ndarray
    source: str   # "file: part" for messages
    names: tuple  # the file's column names, for messages

    @property
    def a(self) -> np.ndarray:  # half-width (y)
        return self.w / 2

    @property
    def b(self) -> np.ndarray:  # half-height (z)
        return (self.z_upper - self.z_lower) / 2

    @property
    def zc(self) -> np.ndarray:
        return (self.z_upper + self.z_lower) / 2

    @property
    def length(self) -> float:
        return float(self.x[-1] - self.x[0])

    def frusta_volume(self) -> float:
        """Volume of elliptic frusta between the stations (ellipse area pi a b varying
        linearly in each semi-axis: the integral of pi a(x) b(x) over each interval)."""
        a, b, dx = self.a, self.b, np.diff(self.x)
        a0, a1, b0, b1 = a[:-1], a[1:], b[:-1], b[1:]
        return float(np.sum(math.pi * dx * (a0 * b0 + a1 * b1 + (a0 * b1 + a1 * b0) / 2) / 3))


def _fail(path, message: str):
    raise InputError(f"{path}: {message}")


def _numbers(path, name: str, values) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        _fail(path, f"{name} must be a list of numbers")
    if arr.ndim != 1:
        _fail(path, f"{name} must be a list of numbers")
    bad = np.flatnonzero(~np.isfinite(arr))
    if len(bad):
        _fail(path, f"{name}[{bad[0]}] = {arr[bad[0]]} is not a finite number")
    return arr


def _load_toml(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def _read_toml(path: Path, shape: str | None) -> dict:
    try:  # once per version of the file: planning reads each outline for every rule
        data = parsed_once(path, _load_toml)
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        _fail(path, f"cannot read it as TOML: {exc}")
    tables = data.get("shape")
    if isinstance(tables, dict):
        tables = [tables]
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        _fail(path, "holds no [[shape]] tables (echoSMs KRM shape format)")
    names = [str(t.get("name", "")) for t in tables]
    if shape is None:
        if len(tables) > 1:
            _fail(path, f"holds {len(tables)} shapes ({', '.join(names)}): "
                        "choose one with geometry.shape")
        return tables[0]
    if str(shape) not in names:
        _fail(path, f"holds no shape named {shape!r} (it has {', '.join(names)})")
    return tables[names.index(str(shape))]


def _read_table(path: Path) -> dict:
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        _fail(path, f"cannot read it: {exc}")
    rows = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        _fail(path, "is empty (a header row naming the columns comes first)")
    comma = "," in rows[0]

    def split(line):
        return [f.strip() for f in line.split(",")] if comma else line.split()

    header = split(rows[0])
    columns: dict[str, list] = {h: [] for h in header}
    for n, line in enumerate(rows[1:], start=2):
        fields = split(line)
        if len(fields) > len(header):
            _fail(path, f"data row {n - 1} has {len(fields)} fields, the header {len(header)}")
        for h, f in zip(header, fields):
            if f == "":
                continue
            try:
                columns[h].append(float(f))
            except ValueError:
                _fail(path, f"column {h}: {f!r} in data row {n - 1} is not a number")
    return columns


def read_outline(path, part: str, shape: str | None = None, scale: float = 1.0) -> Outline:
    """The stations of `part` (body or swimbladder) from a KRM shape file, checked."""
    path = Path(path)
    if part not in PARTS:
        raise InputError(f"part = {part!r} ({path}): must be one of {', '.join(PARTS)}")
    if not path.is_file():
        raise InputError(f"path = {str(path)!r}: no such file (relative to {Path.cwd()})")
    data = _read_toml(path, shape) if path.suffix.lower() == ".toml" else _read_table(path)
    for names in COLUMNS[part]:
        if all(n in data for n in names):
            break
    else:
        wanted = " or ".join(", ".join(n) for n in COLUMNS[part])
        _fail(path, f"holds no {part} (needs the columns {wanted})")
    x, w, zu, zl = (_numbers(path, n, data[n]) * scale for n in names)
    lengths = {n: len(v) for n, v in zip(names, (x, w, zu, zl))}
    if len(set(lengths.values())) != 1:
        _fail(path, f"{part}: the columns differ in length ("
                    + ", ".join(f"{n} {k}" for n, k in lengths.items()) + ")")
    outline = Outline(x, w, zu, zl, f"{path}: {part}", names)
    check_outline(outline)
    return outline


def check_outline(o: Outline) -> None:
    """Stations in increasing x, widths and heights >= 0, > 0 except at the two ends."""
    xn, wn, un, ln = o.names
    n = len(o.x)
    if n < MIN_STATIONS:
        raise InputError(f"{o.source} has {n} station{'s' * (n != 1)}; "
                          f"at least {MIN_STATIONS} are needed")
    step = np.diff(o.x)
    if np.any(step <= 0):
        i = int(np.flatnonzero(step <= 0)[0]) + 1
        raise InputError(f"{o.source}: stations out of order: {xn}[{i}] = {o.x[i]:.6g} "
                          f"follows {xn}[{i - 1}] = {o.x[i - 1]:.6g} (x must increase)")
    for i in range(n):
        where = f"{o.source}: station {i} (x = {o.x[i]:.6g} m)"
        if o.w[i] < 0:
            raise InputError(f"{where}: width {wn} = {o.w[i]:.6g} is negative")
        if o.z_upper[i] < o.z_lower[i]:
            raise InputError(f"{where}: upper {un} = {o.z_upper[i]:.6g} is below lower "
                              f"{ln} = {o.z_lower[i]:.6g}")
        if 0 < i < n - 1 and (o.w[i] == 0 or o.z_upper[i] == o.z_lower[i]):
            raise InputError(f"{where}: zero {'width' if o.w[i] == 0 else 'height'} "
                              "inside the outline (only the end stations may be points)")


def check_inside(inner: Outline, outer: Outline) -> None:
    """Each station's ellipse of `inner` lies within `outer`'s ellipse at the same x
    (`outer` interpolated linearly between its stations); an error names the first
    station that does not."""
    lo, hi = outer.x[0], outer.x[-1]
    t = np.linspace(0, 2 * math.pi, CONTAINMENT_POINTS, endpoint=False)
    ct, st = np.cos(t), np.sin(t)
    for i, x in enumerate(inner.x):
        where = f"{inner.source} station {i} (x = {x:.6g} m)"
        if not lo <= x <= hi:
            raise InputError(f"{where} lies beyond the body's stations "
                              f"({lo:.6g} to {hi:.6g} m): the swim bladder is not inside the body")
        a, b, zc = (np.interp(x, outer.x, v) for v in (outer.a, outer.b, outer.zc))
        y, z = inner.a[i] * ct, inner.zc[i] + inner.b[i] * st
        if a <= 0 or b <= 0:
            inside = (inner.a[i] == 0) & (inner.b[i] == 0) & (inner.zc[i] == zc)
            reach = 0.0 if inside else math.inf
        else:
            reach = float(np.sqrt((y / a) ** 2 + ((z - zc) / b) ** 2).max())
        if reach > 1 + 1e-9:
            raise InputError(
                f"{where}: the swim bladder's ellipse (half-width {inner.a[i]:.4g}, "
                f"z {inner.z_lower[i]:.4g} to {inner.z_upper[i]:.4g} m) is not inside the "
                f"body's (half-width {a:.4g}, z {zc - b:.4g} to {zc + b:.4g} m) there")


def station_clearance(inner: Outline, outer: Outline, shift) -> tuple[float, float]:
    """(the smallest clearance (m) of `inner`'s station ellipses, moved by `shift` (x, y, z),
    within `outer`'s at the same x, that station's x): along the ray from the outer ellipse's
    centre, so at least the distance between the two sections (0 where one touches or pokes
    out, or lies beyond the outer stations). The lofted surfaces are smoothed: an estimate
    before meshing, which measures the surfaces themselves (geometry.nesting)."""
    dx, dy, dz = (float(v) for v in shift)
    t = np.linspace(0, 2 * math.pi, CONTAINMENT_POINTS, endpoint=False)
    best, where = math.inf, float(inner.x[0] + dx)
    for i, x in enumerate(inner.x + dx):
        if not outer.x[0] <= x <= outer.x[-1]:
            return 0.0, float(x)
        a, b, zc = (np.interp(x, outer.x, v) for v in (outer.a, outer.b, outer.zc))
        y = inner.a[i] * np.cos(t) + dy
        z = inner.zc[i] + dz + inner.b[i] * np.sin(t) - zc
        rho = np.sqrt((y / max(a, 1e-300)) ** 2 + (z / max(b, 1e-300)) ** 2)
        r = np.hypot(y, z)
        gap = np.where(rho > 0, r * (1 / np.maximum(rho, 1e-300) - 1), min(a, b))
        c = max(float(gap.min()), 0.0)
        if c < best:
            best, where = c, float(x)
    return best, where


def read_shape(geometry: KrmShape, path: Path | None = None) -> Outline:
    """The outline a `krm` geometry names (read from `path`, default its own); the swim
    bladder checked against the body."""
    path = geometry.path if path is None else path
    outline = read_outline(path, geometry.part, geometry.shape, geometry.scale)
    if geometry.part == "swimbladder":
        check_inside(outline, read_outline(path, "body", geometry.shape, geometry.scale))
    return outline


def ellipse_perimeter(a, b):
    """Ramanujan's second approximation (exact for circles, within 0.04% at a / b = 10)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    h = ((a - b) / np.maximum(a + b, 1e-300)) ** 2
    return math.pi * (a + b) * (1 + 3 * h / (10 + np.sqrt(4 - 3 * h)))


def shape_estimates(geometry: KrmShape) -> tuple[float, float, float] | None:
    """(area, volume, integral of the mean curvature over the surface) of a `krm` part from
    its stations, for resource estimates before meshing; None where the file cannot be
    read (the mesher reports why). A slender body's int H dA is about pi x length (each
    cross-section turns by 2 pi; H is half its curvature)."""
    try:
        o = read_shape(geometry)
    except Exception:  # noqa: BLE001 - an estimate only
        return None
    perimeter = ellipse_perimeter(o.a, o.b)
    r = (o.a + o.b) / 2
    slant = np.hypot(np.diff(o.x), np.diff(r))
    area = float(np.sum((perimeter[:-1] + perimeter[1:]) / 2 * slant))
    return area, o.frusta_volume(), math.pi * o.length


def _window_mean(o: Outline, xs: np.ndarray, width: float) -> tuple[np.ndarray, ...]:
    """Half-axes and centre height averaged over [x - width/2, x + width/2] (trapezoids of
    the linear interpolant between stations), at each of `xs`."""
    out = []
    fine = np.union1d(o.x, np.concatenate([xs - width / 2, xs + width / 2]))
    fine = fine[(fine >= o.x[0]) & (fine <= o.x[-1])]
    for v in (o.a, o.b, o.zc):
        f = np.interp(fine, o.x, v)
        cum = np.concatenate([[0.0], np.cumsum(np.diff(fine) * (f[1:] + f[:-1]) / 2)])
        lo = np.clip(xs - width / 2, o.x[0], o.x[-1])
        hi = np.clip(xs + width / 2, o.x[0], o.x[-1])
        mean = (np.interp(hi, fine, cum) - np.interp(lo, fine, cum)) / np.maximum(hi - lo, 1e-300)
        out.append(mean)
    return tuple(out)


def control_rows(o: Outline) -> list[tuple[float, float, float, float]]:
    """(x, half-width, half-height, centre z) of each control row of the lofted surface:
    a point at each end, a rounding row at the same x, smoothed stations between. No
    section is flatter than MAX_ASPECT or thinner than MIN_HALF_AXIS of the part's largest
    half-axis (a ribbon-thin tail, as some traced outlines have, would ask for elements of
    micrometres at its edges)."""
    n_rows = max(4, min(int(round(1 / SPACING)), len(o.x) - 1))
    xs = np.linspace(o.x[0], o.x[-1], n_rows + 1)
    a, b, zc = _window_mean(o, xs, o.length / n_rows)
    # The end stations as given (a pointed end stays pointed).
    for j in (0, -1):
        a[j], b[j], zc[j] = o.a[j], o.b[j], o.zc[j]
    rows = []
    for j in (0, -1):
        k = 1 if j == 0 else -2
        ra, rb = max(a[j], TIP_ROUNDING * a[k]), max(b[j], TIP_ROUNDING * b[k])
        rows.append([(xs[j], 0.0, 0.0, zc[j]), (xs[j], ra, rb, zc[j])])
    head, tail = rows
    rows = head + list(zip(xs[1:-1], a[1:-1], b[1:-1], zc[1:-1])) + tail[::-1]
    floor = MIN_HALF_AXIS * max(float(o.a.max()), float(o.b.max()))
    out = []
    for x, ra, rb, z in rows:
        if ra > 0 or rb > 0:  # not the tip points
            ra, rb = max(ra, rb / MAX_ASPECT, floor), max(rb, ra / MAX_ASPECT, floor)
        out.append((float(x), float(ra), float(rb), float(z)))
    return out


# An ellipse as a rational quadratic B-spline: 9 control points on the bounding box (the
# first again last), weights 1 and 1/sqrt(2).
_RING = [(1, 0), (1, 1), (0, 1), (-1, 1), (-1, 0), (-1, -1), (0, -1), (1, -1), (1, 0)]
_RING_WEIGHTS = [1.0, math.sqrt(0.5)] * 4 + [1.0]


DEGREE = 3  # along the fish
# The surface is cut into three faces at the knots CAP_SPANS spans from either end: the two
# rounded tips (their parameter plane collapses at the tip) and the tube between. On one
# face gmsh's Frontal-Delaunay fails near the tips on some shapes, and its fallback,
# MeshAdapt on the whole fish, takes minutes.
CAP_SPANS = 2
# Frontal-Delaunay now and then leaves a folded triangle at a tip (about one size in ten on
# a coarse test fish): such a mesh is made again, elements 3% smaller each time.
MESH_ATTEMPTS = 4


def _insert_knot(points: np.ndarray, knots: np.ndarray, t: float):
    """Boehm's knot insertion along axis 0 of `points` (a B-spline of DEGREE)."""
    p = DEGREE
    k = int(np.searchsorted(knots, t, side="right")) - 1
    new = np.empty((len(points) + 1,) + points.shape[1:])
    new[:k - p + 1] = points[:k - p + 1]
    new[k + 1:] = points[k:]
    for i in range(k - p + 1, k + 1):
        alpha = (t - knots[i]) / (knots[i + p] - knots[i])
        new[i] = (1 - alpha) * points[i - 1] + alpha * points[i]
    return new, np.insert(knots, k + 1, t)


def _split(points: np.ndarray, knots: np.ndarray, t: float):
    """The B-spline cut at parameter t into two clamped pieces (points, knots) each."""
    while np.count_nonzero(np.isclose(knots, t, rtol=0, atol=1e-12)) < DEGREE:
        points, knots = _insert_knot(points, knots, t)
    r = int(np.flatnonzero(np.isclose(knots, t, rtol=0, atol=1e-12))[0])
    left = (points[:r], np.concatenate([knots[:r + DEGREE], [t]]))
    right = (points[r - 1:], np.concatenate([[t], knots[r:]]))
    return left, right


def _add_face(occ, net: np.ndarray, knots: np.ndarray) -> int:
    """One face from a control net (rows along the fish, ring points around)."""
    values, counts = np.unique(np.round((knots - knots[0]) / (knots[-1] - knots[0]), 12),
                               return_counts=True)
    tags = [occ.addPoint(*p) for row in net for p in row]
    face = occ.addBSplineSurface(
        tags, len(_RING), degreeU=2, degreeV=DEGREE, weights=_RING_WEIGHTS * len(net),
        knotsU=[0, 0.25, 0.5, 0.75, 1], multiplicitiesU=[3, 2, 2, 2, 3],
        knotsV=values.tolist(), multiplicitiesV=counts.tolist())
    occ.remove([(0, t) for t in tags])  # the control points only defined the surface
    return face


def add_lofted_solid(gmsh, rows, x0) -> int:
    """The closed B-spline surface through `rows` (shifted by x0) as an OCC volume (its
    tag), its faces the two tips and the tube between."""
    occ = gmsh.model.occ
    ring = np.array(_RING, float)
    net = np.array([[(x + x0[0], a * cy + x0[1], zc + b * cz + x0[2]) for cy, cz in ring]
                    for x, a, b, zc in rows])
    n = len(rows)  # cubic along the fish, clamped at both ends, uniform knots
    knots = np.concatenate([[0.0] * DEGREE, np.linspace(0.0, 1.0, n - DEGREE + 1),
                            [1.0] * DEGREE])
    spans = n - DEGREE
    if spans >= 2 * CAP_SPANS + 1:
        head, rest = _split(net, knots, CAP_SPANS / spans)
        tube, tail = _split(*rest, 1 - CAP_SPANS / spans)
        tips = [_add_face(occ, *head), _add_face(occ, *tail)]
        tubes = [_add_face(occ, *tube)]
    else:
        tips, tubes = [_add_face(occ, net, knots)], []
    loop = occ.addSurfaceLoop(tips + tubes, sewing=True)
    volume = occ.addVolume([loop])
    # Sewing may build the volume from copies of the faces: drop the originals left over.
    occ.synchronize()
    used = {abs(t) for _, t in gmsh.model.getBoundary([(3, volume)], oriented=False)}
    spare = [(2, t) for _, t in gmsh.model.getEntities(2) if t not in used]
    if spare:
        occ.remove(spare, recursive=True)
    return volume


def curvature_features(geometry: KrmShape) -> list[dict]:
    """The point of smallest radius of curvature on the front and on the back half of the
    lofted surface (near the rounded tips, as a rule), from OpenCASCADE's principal
    curvatures on a grid of each face's parameters: name, point, radius."""
    outline = read_shape(geometry)
    x0 = np.asarray(geometry.center, float)
    around = np.linspace(0.0, 1.0, 24, endpoint=False)
    along = np.linspace(0.0, 1.0, 61)
    uv = np.array([(u, v) for v in along for u in around]).ravel().tolist()
    points, k = [], []
    with gmsh_session() as gmsh:
        add_lofted_solid(gmsh, control_rows(outline), x0)
        gmsh.model.occ.synchronize()
        for _, tag in gmsh.model.getEntities(2):
            k1, k2, *_ = gmsh.model.getPrincipalCurvatures(tag, uv)
            k.append(np.maximum(np.abs(k1), np.abs(k2)))
            points.append(np.reshape(gmsh.model.getValue(2, tag, uv), (-1, 3)))
    points, k = np.concatenate(points), np.concatenate(k)
    middle = x0[0] + (outline.x[0] + outline.x[-1]) / 2
    out = []
    for name, half in (("head end", points[:, 0] <= middle), ("tail end", points[:, 0] > middle)):
        i = int(np.flatnonzero(half)[np.argmax(k[half])])
        out.append({"name": name, "point": [float(p) for p in points[i]],
                    "radius": float(1 / max(k[i], 1e-300))})
    return out


@dataclass(frozen=True, kw_only=True)
class KrmShape(Geometry):
    """One outline (`part`: body or swimbladder) of a KRM shape file at `path` (the
    [[shape]] table `shape` of a file holding several), coordinates times `scale`."""

    kind: ClassVar[str] = "krm"
    path: str
    part: str = "body"
    shape: str | None = None
    scale: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        self._set("path", str(self.path))
        if self.part not in PARTS:
            raise InputError(f"part = {self.part!r}: must be one of {', '.join(PARTS)}")
        self._set("scale", positive("scale", self.scale))

    def build(self, options: MeshOptions) -> SurfaceMesh:
        return krm(self, options)

    def files(self) -> list[str]:
        return [self.path]

    def check_files(self, base_dir: Path) -> None:
        """The shape file is there and reads: the part's stations in order, the swim
        bladder inside the body (the mesher's checks, before any job starts)."""
        path = Path(self.path)
        full = path if path.is_absolute() else base_dir / path
        if not full.is_file():
            raise InputError(f"path = {self.path!r}: file not found (relative paths are "
                             f"taken from {base_dir})")
        read_shape(self, full)

    def outline(self) -> Outline:
        """The part's stations (m, times `scale`, before `center`)."""
        return read_outline(self.path, self.part, self.shape, self.scale)

    def area(self) -> float | None:
        estimates = shape_estimates(self)
        return estimates[0] if estimates else None

    def volume_and_curvature(self) -> tuple[float, float] | None:
        estimates = shape_estimates(self)
        return estimates[1:] if estimates else None

    def curvature_features(self) -> list[dict]:
        """The lofted surface's tightest curvature near head and tail."""
        return curvature_features(self)


def krm(geometry: KrmShape, options: MeshOptions) -> SurfaceMesh:
    outline = read_shape(geometry)
    x0 = np.asarray(geometry.center, float)
    source = f"krm {geometry.part} ({geometry.path})"
    with gmsh_session(options.verbose) as gmsh:
        add_lofted_solid(gmsh, control_rows(outline), x0)
        gmsh.model.occ.synchronize()
        volume, area = occ_volume_area(gmsh)
        # As mesh_occ_model: elements larger than the body's thinnest extent can crash gmsh.
        box = gmsh.model.getBoundingBox(-1, -1)
        thinnest = min(b - a for a, b in zip(box[:3], box[3:]))
        # floor: a share of the thickest cross-section's smaller half-axis (the spheroid's)
        floor = MIN_SIZE_OF_THINNEST * float(np.max(np.minimum(outline.a, outline.b)))
        options = curvature_sizing(replace(options, h=min(options.h, thinnest / 2)), volume,
                                   area, floor)
        # Frontal-Delaunay: MeshAdapt takes 20-40 times longer on the B-spline surface
        # (and failed as often at the tips, on the test fish).
        for attempt in range(MESH_ATTEMPTS):
            generate_surface_mesh(gmsh, options, adapt_curved=False)
            mesh = surface_from_model(gmsh, source)
            try:
                check_surface(mesh, source)
                break
            except MeshError as exc:
                if attempt == MESH_ATTEMPTS - 1:
                    raise
                log.info("%s: %s; meshing again with elements 3%% smaller", source, exc)
                gmsh.model.mesh.clear()
                options = replace(options, h=0.97 * options.h)
    mesh.meta["exact_volume"] = volume
    mesh.meta["krm_frusta_volume"] = outline.frusta_volume()
    return mesh
