"""A generic submarine after the BeTSSi benchmark submarine (parametric, OpenCASCADE).

Axes: hull axis along x with the bow at +x and the stern at -x; the sail points to +z.
The origin (before the `center` shift) is the middle of the hull length, on the axis.

Parts, all fused by an OpenCASCADE boolean union into one closed body:
- hull: a solid of revolution about x: elliptic bow (semi-axes `bow_length` along x and
  the hull radius), cylindrical parallel middle body, and a conical or tangent-ogive stern
  ending in a flat disc (hub) of `stern_tip_diameter` (no pointed apex: gmsh meshes it badly);
- sail on top of the middle body: planform with an elliptic (rounded) leading edge, parallel
  sides and a tapered trailing part, extruded `sail_height` above the hull top;
- two depth rudders on the sail (sail planes, as on the BeTSSi model), one each side;
- four stern rudders in a cross (+z, -z, +y, -y).
Rudders are trapezoidal plates of constant thickness: straight trailing edge, swept
leading edge. The defaults give the BeTSSi size: 62 m long, 7 m diameter, 42 m parallel
middle body, 7 m bow, 13 m stern, sail 13 m long and 3.5 m high.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import ClassVar

from ..errors import InputError
from ..surface import SurfaceMesh
from .gmsh_model import box_size_field, gmsh_session, mesh_occ_model, size_field
from .params import positive
from .shape import Geometry
from .sizing import MeshOptions, sag_size


@dataclass(frozen=True, kw_only=True)
class Submarine(Geometry):
    """The BeTSSi-like submarine (the module's text): its dimensions in metres, every one
    with a default (a `{kind: submarine}` block is the BeTSSi size)."""

    kind: ClassVar[str] = "submarine"
    hull_length: float = 62.0
    hull_diameter: float = 7.0
    middle_body_length: float = 42.0
    bow_length: float = 7.0
    stern_shape: str = "cone"
    stern_tip_diameter: float = 0.6
    sail_length: float = 13.0
    sail_width: float = 2.0
    sail_height: float = 3.5
    sail_distance_from_bow: float = 14.0
    sail_nose_length: float = 3.0
    sail_tail_length: float = 3.0
    sail_rudder_root_chord: float = 2.5
    sail_rudder_tip_chord: float = 1.75
    sail_rudder_span: float = 2.5
    sail_rudder_thickness: float = 0.3
    sail_rudder_height: float = 2.2
    sail_rudder_distance_from_sail_leading_edge: float = 1.5
    stern_rudder_root_chord: float = 4.0
    stern_rudder_tip_chord: float = 2.5
    stern_rudder_span: float = 3.5
    stern_rudder_thickness: float = 0.4
    stern_rudder_distance_from_stern: float = 1.0

    def __post_init__(self):
        super().__post_init__()
        if self.stern_shape not in ("cone", "ogive"):
            raise InputError(f"stern_shape = {self.stern_shape!r}: must be cone or ogive")
        for key, value in self.dimensions().items():
            if key != "stern_shape":
                self._set(key, positive(key, value))
        _check_fits(self.dimensions())

    def dimensions(self) -> dict:
        """Every parameter but `center` by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name != "center"}

    def build(self, options: MeshOptions) -> SurfaceMesh:
        with gmsh_session(options.verbose) as gmsh:
            build_submarine(gmsh.model.occ, self)
            return mesh_occ_model(gmsh, options, "submarine", _size_fields(self, options))

    def area(self) -> float:
        """The hull of revolution about 85% of its enclosing cylinder, plus sail and rudders
        (about 15%)."""
        return 1.15 * 0.85 * math.pi * self.hull_diameter * self.hull_length

    def volume_and_curvature(self) -> tuple[float, float]:
        """The hull's, as 85% of its enclosing cylinder's."""
        r = self.hull_diameter / 2
        return 0.85 * math.pi * r**2 * self.hull_length, 0.85 * math.pi * self.hull_length

    def curvature_features(self) -> list[dict]:
        return curvature_features(self)

    def box_sides(self) -> list[float]:
        """The sail about doubles the height."""
        return [self.hull_diameter, 2 * self.hull_diameter, self.hull_length]

    def hull_volume(self) -> float:
        """Volume of the hull alone (bow, middle body, stern), exact for the given profile."""
        return hull_volume(self.dimensions())



def _check_fits(p: dict) -> None:
    def need(ok: bool, key: str, why: str):
        if not ok:
            raise InputError(f"{key} = {p[key]!r}: {why}")

    R = p["hull_diameter"] / 2
    stern = p["hull_length"] - p["middle_body_length"] - p["bow_length"]
    need(stern > 0, "middle_body_length", "bow_length + middle_body_length must be < hull_length")
    need(p["stern_tip_diameter"] < p["hull_diameter"], "stern_tip_diameter",
         "must be < hull_diameter")
    need(p["sail_nose_length"] + p["sail_tail_length"] < p["sail_length"], "sail_length",
         "must exceed sail_nose_length + sail_tail_length")
    need(p["sail_width"] < p["hull_diameter"], "sail_width", "must be < hull_diameter")
    need(p["bow_length"] <= p["sail_distance_from_bow"]
         and p["sail_distance_from_bow"] + p["sail_length"] <= p["bow_length"] + p["middle_body_length"],
         "sail_distance_from_bow", "the sail must stand on the parallel middle body")
    need(p["sail_rudder_height"] + p["sail_rudder_thickness"] / 2 < p["sail_height"],
         "sail_rudder_height", "the depth rudders must sit below the top of the sail")
    need(p["sail_rudder_distance_from_sail_leading_edge"] + p["sail_rudder_root_chord"]
         <= p["sail_length"] - p["sail_tail_length"],
         "sail_rudder_distance_from_sail_leading_edge",
         "the depth rudder root must lie along the parallel sides of the sail")
    need(p["sail_rudder_tip_chord"] <= p["sail_rudder_root_chord"], "sail_rudder_tip_chord",
         "must be <= sail_rudder_root_chord")
    need(p["stern_rudder_tip_chord"] <= p["stern_rudder_root_chord"], "stern_rudder_tip_chord",
         "must be <= stern_rudder_root_chord")
    need(p["stern_rudder_distance_from_stern"] + p["stern_rudder_root_chord"] <= stern,
         "stern_rudder_root_chord", f"the stern rudders must lie on the stern ({stern:g} m long)")
    r_le = _stern_radius(p, p["stern_rudder_distance_from_stern"] + p["stern_rudder_root_chord"])
    need(p["stern_rudder_span"] > r_le, "stern_rudder_span",
         f"must exceed the stern radius at the rudder's leading edge ({r_le:.3g} m)")
    r_te = _stern_radius(p, p["stern_rudder_distance_from_stern"])
    need(p["stern_rudder_thickness"] < 2 * r_te, "stern_rudder_thickness",
         f"must be < the stern diameter at the rudder's trailing edge ({2 * r_te:.3g} m)")
    need(R > 0, "hull_diameter", "must be > 0")


def _ogive_radius(R: float, r_tip: float, length: float) -> float:
    """Radius of the circular arc tangent to the hull at the stern start through the tip."""
    return (length**2 + (R - r_tip) ** 2) / (2 * (R - r_tip))


def _stern_radius(p: dict, s: float) -> float:
    """Hull radius at distance s forward of the stern tip."""
    R, r_t = p["hull_diameter"] / 2, p["stern_tip_diameter"] / 2
    Ls = p["hull_length"] - p["middle_body_length"] - p["bow_length"]
    if p["stern_shape"] == "cone":
        return r_t + (R - r_t) * s / Ls
    rho = _ogive_radius(R, r_t, Ls)
    return R - rho + math.sqrt(rho**2 - (Ls - s) ** 2)


def hull_volume(p: dict) -> float:
    """Volume of the hull alone of the dimensions `p` (Submarine.dimensions)."""
    R, r_t = p["hull_diameter"] / 2, p["stern_tip_diameter"] / 2
    Ls = p["hull_length"] - p["middle_body_length"] - p["bow_length"]
    v = 2 / 3 * math.pi * p["bow_length"] * R**2 + math.pi * R**2 * p["middle_body_length"]
    if p["stern_shape"] == "cone":
        return v + math.pi / 3 * Ls * (R**2 + R * r_t + r_t**2)
    n = 2001  # Simpson's rule on the smooth ogive profile
    s = [Ls * i / (n - 1) for i in range(n)]
    w = [1 if i in (0, n - 1) else (4 if i % 2 else 2) for i in range(n)]
    return v + math.pi * Ls / (3 * (n - 1)) * sum(wi * _stern_radius(p, si) ** 2
                                                 for si, wi in zip(s, w))


def _arc(occ, start, centre, end):
    """Quarter arc of an ellipse (or circle) from `start` to `end` about `centre`."""
    pts = [occ.addPoint(*q) for q in (start, centre, end)]
    r_start = math.dist(start, centre)
    r_end = math.dist(end, centre)
    if math.isclose(r_start, r_end, rel_tol=1e-12):
        return occ.addCircleArc(pts[0], pts[1], pts[2])
    major = pts[0] if r_start > r_end else pts[2]
    return occ.addEllipseArc(pts[0], pts[1], major, pts[2])


def _polyline(occ, points, closed=False):
    tags = [occ.addPoint(*q) for q in points]
    n = len(tags) if closed else len(tags) - 1
    return [occ.addLine(tags[i], tags[(i + 1) % len(tags)]) for i in range(n)]


def _hull(occ, p: dict) -> int:
    R, r_t = p["hull_diameter"] / 2, p["stern_tip_diameter"] / 2
    L, a = p["hull_length"], p["bow_length"]
    x_bow, x_stern = L / 2, -L / 2
    x_mid_fwd = x_bow - a
    x_mid_aft = x_mid_fwd - p["middle_body_length"]
    curves = [_arc(occ, (x_bow, 0, 0), (x_mid_fwd, 0, 0), (x_mid_fwd, 0, R))]
    curves += _polyline(occ, [(x_mid_fwd, 0, R), (x_mid_aft, 0, R)])
    if p["stern_shape"] == "cone":
        curves += _polyline(occ, [(x_mid_aft, 0, R), (x_stern, 0, r_t)])
    else:
        rho = _ogive_radius(R, r_t, x_mid_aft - x_stern)
        pts = [occ.addPoint(*q) for q in ((x_mid_aft, 0, R), (x_mid_aft, 0, R - rho),
                                          (x_stern, 0, r_t))]
        curves.append(occ.addCircleArc(*pts))
    if r_t > 0:  # flat end disc, revolved from its radius
        curves += _polyline(occ, [(x_stern, 0, r_t), (x_stern, 0, 0)])
    # Revolve the outer profile only: a revolved axis segment would leave a degenerate face.
    out = occ.revolve([(1, c) for c in curves], 0, 0, 0, 1, 0, 0, 2 * math.pi)
    shell = occ.addSurfaceLoop([tag for dim, tag in out if dim == 2], sewing=True)
    return occ.addVolume([shell])


def _sail(occ, p: dict) -> int:
    R = p["hull_diameter"] / 2
    x_le = p["hull_length"] / 2 - p["sail_distance_from_bow"]
    x_te = x_le - p["sail_length"]
    half, nose, tail = p["sail_width"] / 2, p["sail_nose_length"], p["sail_tail_length"]
    z0 = R / 2  # the sail's foot is buried in the hull; the union trims it
    xc = x_le - nose
    curves = [_arc(occ, (xc, -half, z0), (xc, 0, z0), (x_le, 0, z0)),
              _arc(occ, (x_le, 0, z0), (xc, 0, z0), (xc, half, z0))]
    curves += _polyline(occ, [(xc, half, z0), (x_te + tail, half, z0), (x_te, 0, z0),
                              (x_te + tail, -half, z0), (xc, -half, z0)])
    face = occ.addPlaneSurface([occ.addCurveLoop(curves)])
    out = occ.extrude([(2, face)], 0, 0, R + p["sail_height"] - z0)
    return next(tag for dim, tag in out if dim == 3)


def _fin(occ, x_te: float, root: float, tip: float, span: float, thickness: float) -> int:
    """Trapezoidal plate in the x-z plane from z = 0 to `span`, centred on y = 0."""
    y = -thickness / 2
    curves = _polyline(occ, [(x_te, y, 0), (x_te + root, y, 0), (x_te + tip, y, span),
                             (x_te, y, span)], closed=True)
    face = occ.addPlaneSurface([occ.addCurveLoop(curves)])
    out = occ.extrude([(2, face)], 0, thickness, 0)
    return next(tag for dim, tag in out if dim == 3)


def _rudders(occ, p: dict) -> list[int]:
    R = p["hull_diameter"] / 2
    # Stern rudders: one fin from the axis upwards, copied round the axis in 90 deg steps.
    x_te = -p["hull_length"] / 2 + p["stern_rudder_distance_from_stern"]
    first = _fin(occ, x_te, p["stern_rudder_root_chord"], p["stern_rudder_tip_chord"],
                 p["stern_rudder_span"], p["stern_rudder_thickness"])
    fins = [first]
    for k in (1, 2, 3):
        copy = occ.copy([(3, first)])
        occ.rotate(copy, 0, 0, 0, 1, 0, 0, k * math.pi / 2)
        fins.append(copy[0][1])
    # Depth rudders on the sail: fins from the sail's mid-plane out to each side.
    x_le = p["hull_length"] / 2 - p["sail_distance_from_bow"]
    x_te = x_le - p["sail_rudder_distance_from_sail_leading_edge"] - p["sail_rudder_root_chord"]
    z = R + p["sail_rudder_height"]
    span = p["sail_width"] / 2 + p["sail_rudder_span"]
    for angle in (-math.pi / 2, math.pi / 2):  # span towards +y, then -y
        fin = _fin(occ, x_te, p["sail_rudder_root_chord"], p["sail_rudder_tip_chord"], span,
                   p["sail_rudder_thickness"])
        occ.rotate([(3, fin)], 0, 0, 0, 1, 0, 0, angle)
        occ.translate([(3, fin)], 0, 0, z)
        fins.append(fin)
    return fins


def build_submarine(occ, sub: Submarine) -> int:
    """Add the fused submarine to the OCC model; return its volume tag."""
    p = sub.dimensions()
    hull = _hull(occ, p)
    parts = [_sail(occ, p)] + _rudders(occ, p)
    out, _ = occ.fuse([(3, hull)], [(3, t) for t in parts])
    vols = [tag for dim, tag in out if dim == 3]
    if len(vols) != 1:
        raise InputError(f"the submarine parts fuse into {len(vols)} bodies, not one; check "
                         "that sail and rudders touch the hull")
    x0 = sub.center
    occ.translate([(3, vols[0])], *x0)
    return vols[0]


def curvature_features(sub: Submarine) -> list[dict]:
    """The tightly curved parts: name, a point on each, its smallest radius of curvature
    `radius`, and the box (lo, hi) where that curvature lasts: the sail's rounded leading
    edge and the stern hub (the hull is sized from its own radius)."""
    p = sub.dimensions()
    x0 = sub.center
    R, half = p["hull_diameter"] / 2, p["sail_width"] / 2
    x_le = p["hull_length"] / 2 - p["sail_distance_from_bow"]
    x_end, r_t = -p["hull_length"] / 2, p["stern_tip_diameter"] / 2
    nose = half**2 / p["sail_nose_length"]
    out = [{"name": "sail leading edge", "point": [x_le, 0.0, R + p["sail_height"] / 2],
            "radius": nose, "lo": [x_le - 3 * nose, -half, R - 0.2],
            "hi": [x_le + 0.1, half, R + p["sail_height"] + 0.1]},
           {"name": "stern hub", "point": [x_end, 0.0, r_t], "radius": r_t,
            "lo": [x_end - 0.1, -3 * r_t, -3 * r_t], "hi": [x_end + 3 * r_t, 3 * r_t, 3 * r_t]}]
    for f in out:
        for key in ("point", "lo", "hi"):
            f[key] = [v + c for v, c in zip(f[key], x0)]
    return out


# Small parts of a large body: fewer elements per turn than spheroid tips, still well above
# the coarse-mesh warning (COARSE_ELEMENTS_PER_TURN).
FEATURE_ELEMENTS_PER_TURN = 12


def _size_fields(sub: Submarine, options: MeshOptions):
    """Hull: the chord-sag size of the parallel middle body (mean curvature 1 / (2 R)),
    everywhere; the sail's leading edge and the stern hub: FEATURE_ELEMENTS_PER_TURN elements per
    turn of their radius of curvature, graded to the hull size over a few radii."""
    R = sub.hull_diameter / 2

    def sizes(gmsh, volume, area):
        refine = options.geometry_refinement
        h_hull = min(options.h, refine * sag_size(options.sag(volume, area), 1 / (2 * R)))
        tags = [size_field(gmsh, f"{h_hull:.12f}")]
        for f in curvature_features(sub):
            size = min(h_hull, min(refine, 1.0) * 2 * math.pi * f["radius"] / FEATURE_ELEMENTS_PER_TURN)
            tags.append(box_size_field(gmsh, f["lo"], f["hi"], size, h_hull,
                                       thickness=3 * f["radius"]))
        return tags

    return sizes


DEFAULTS = Submarine().dimensions()  # the BeTSSi-like size, by key
