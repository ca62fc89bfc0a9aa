"""Are the surfaces of a nested case nested as the config says? Each body strictly inside
its parent and outside its siblings, no two surfaces crossing; and how close they come.

- Inside or outside: the generalised winding number of each vertex of one surface with
  respect to the other (the sum of the triangles' solid angles over 4 pi: 1 inside a closed
  outward surface, 0 outside), numpy in chunks.
- Crossing: an edge of one surface through a triangle of the other (Moller-Trumbore),
  tested both ways on the edges that come within their own length of the other surface.
- Gap: the smallest distance between the two surfaces, triangle to triangle: two triangles
  that do not cross are nearest at a vertex of one against the other (exact point-triangle
  distances on the triangles a k-d tree of centroids leaves in reach) or at an edge of each
  against the other's (segment-segment distances on the edges within reach). Edge pairs are
  searched within the vertex gap, and at most a WARN_GAP_ELEMENTS of an element: the gap is
  exact wherever it decides between refusal, warning and nothing.
- Closeness: surfaces closer than REFUSE_GAP_ELEMENTS of an element are refused, closer than
  WARN_GAP_ELEMENTS warned about, each naming both bodies, the gap and the way out.

Related pairs (parent and child, siblings) bound every other pair: a path from a body to any
surface but its own relatives crosses a relative first. So the smallest gap of the case is
the smallest over those pairs.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.spatial import cKDTree

from ..errors import MeshError
from ..surface import SurfaceMesh

CHUNK_PAIRS = 500_000           # point-triangle pairs per numpy chunk (~40 MB an array)
MAX_WINDING_PAIRS = 2_000_000  # beyond this, every k-th vertex (the crossing test is exact:
                                # without a crossing a surface lies wholly on one side)
SHOW = 3
# A gap between two surfaces against the coarser surface's mean edge: the BEM integrates each
# element against the other surface's with a rule for well-separated elements; below half an
# element the pair is nearly singular and the answer is wrong without any other sign. On the
# benchmark's weak shell at 38 kHz (bench_series_cases.py) gaps of 0.63, 0.2 and 0.1 of an
# element cost 0.0024, 0.022 and 0.175 dB against the exact series: warned below 0.6, so the
# benchmark shells (0.63 to 0.83 of an element, within 0.03 dB) run without a warning.
REFUSE_GAP_ELEMENTS = 0.5
WARN_GAP_ELEMENTS = 0.6


def winding_numbers(points: np.ndarray, mesh: SurfaceMesh) -> np.ndarray:
    """Generalised winding number of each point with respect to the closed mesh (about 1
    inside, 0 outside, 1/2 on it), by Van Oosterom and Strackee's triangle solid angle."""
    points = np.asarray(points, float).reshape(-1, 3)
    c = mesh.corners
    out = np.empty(len(points))
    step = max(1, CHUNK_PAIRS // max(len(c), 1))
    for s in range(0, len(points), step):
        p = points[s:s + step, None, None, :]
        r = c[None] - p                                   # (k, m, 3, 3)
        a, b, d = r[..., 0, :], r[..., 1, :], r[..., 2, :]
        la, lb, ld = (np.linalg.norm(x, axis=-1) for x in (a, b, d))
        num = np.einsum("...i,...i->...", a, np.cross(b, d))
        den = (la * lb * ld + np.einsum("...i,...i->...", a, b) * ld
               + np.einsum("...i,...i->...", a, d) * lb + np.einsum("...i,...i->...", b, d) * la)
        out[s:s + step] = np.arctan2(num, den).sum(axis=1) / (2 * math.pi)
    return out


def _point_triangle_distance(p: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Distance from points p (k, 3) to triangles tri (k, 3, 3), pairwise."""
    a, b, c = tri[:, 0], tri[:, 1], tri[:, 2]
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    h = np.einsum("ij,ij->i", p - a, n)
    q = p - h[:, None] * n                                # projection onto the plane
    inside = np.ones(len(p), bool)
    best = np.full(len(p), np.inf)
    for u, v in ((a, b), (b, c), (c, a)):
        inside &= np.einsum("ij,ij->i", np.cross(v - u, q - u), n) >= 0
        e = v - u
        t = np.clip(np.einsum("ij,ij->i", p - u, e) / np.maximum(
            np.einsum("ij,ij->i", e, e), 1e-300), 0.0, 1.0)
        best = np.minimum(best, np.linalg.norm(p - (u + t[:, None] * e), axis=1))
    return np.where(inside, np.abs(h), best)


class Reach:
    """Distances from points to one surface, through a k-d tree of its centroids: a
    triangle with centroid c is no nearer to p than |p - c| - radius (its largest
    centroid-to-corner distance)."""

    def __init__(self, mesh: SurfaceMesh):
        self.mesh = mesh
        self.tree = cKDTree(mesh.centroids)
        self.radius = float(np.linalg.norm(mesh.corners - mesh.centroids[:, None], axis=2).max())

    def lower_bounds(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(a lower bound of each point's distance to the surface, its nearest centroid)."""
        d, i = self.tree.query(points)
        return np.maximum(d - self.radius, 0.0), i

    def within(self, points: np.ndarray, cap: float) -> np.ndarray:
        """Each point's distance to the surface where it is below `cap`, else inf."""
        out = np.full(len(points), np.inf)
        lists = self.tree.query_ball_point(points, cap + self.radius)
        counts = np.fromiter((len(x) for x in lists), np.int64, len(lists))
        if counts.sum():
            tri = np.concatenate([np.asarray(x, np.int64) for x in lists if len(x)])
            pt = np.repeat(np.arange(len(points)), counts)
            for c in range(0, len(tri), CHUNK_PAIRS):
                d = _point_triangle_distance(points[pt[c:c + CHUNK_PAIRS]],
                                             self.mesh.corners[tri[c:c + CHUNK_PAIRS]])
                np.minimum.at(out, pt[c:c + CHUNK_PAIRS], d)
        out[out >= cap] = np.inf
        return out

    def smallest(self, points: np.ndarray) -> tuple[float, int]:
        """(the smallest distance of any of `points` to the surface, that point's index).
        Points go nearest first (by lower bound), each against the triangles within the
        best distance so far plus the radius, until no lower bound beats the best."""
        lb, nearest = self.lower_bounds(points)
        upper = _point_triangle_distance(points, self.mesh.corners[nearest])
        where = int(np.argmin(upper))
        best = float(upper[where])
        order = np.argsort(lb, kind="stable")
        for s in range(0, len(order), 64):
            idx = order[s:s + 64]
            idx = idx[lb[idx] < best]
            if not len(idx):
                break
            lists = self.tree.query_ball_point(points[idx], best + self.radius)
            counts = np.fromiter((len(x) for x in lists), np.int64, len(lists))
            if not counts.sum():
                continue
            tri = np.concatenate([np.asarray(x, np.int64) for x in lists if len(x)])
            pt = np.repeat(idx, counts)
            for c in range(0, len(tri), CHUNK_PAIRS):
                d = _point_triangle_distance(points[pt[c:c + CHUNK_PAIRS]],
                                             self.mesh.corners[tri[c:c + CHUNK_PAIRS]])
                k = int(np.argmin(d))
                if d[k] < best:
                    best, where = float(d[k]), int(pt[c + k])
        return best, where


def segment_distances(p0, p1, q0, q1) -> np.ndarray:
    """Distance between segments p0-p1 and q0-q1 (k, 3 each, none of zero length), pairwise:
    the closest points' parameters clamped to the segments (Ericson, Real-Time Collision
    Detection, 5.1.9)."""
    d1, d2, r = p1 - p0, q1 - q0, p0 - q0
    a, e = np.einsum("ij,ij->i", d1, d1), np.einsum("ij,ij->i", d2, d2)
    b, c, f = (np.einsum("ij,ij->i", d1, d2), np.einsum("ij,ij->i", d1, r),
               np.einsum("ij,ij->i", d2, r))
    denom = a * e - b * b
    parallel = denom <= 1e-12 * a * e
    s = np.where(parallel, 0.0, np.clip((b * f - c * e) / np.where(parallel, 1.0, denom), 0, 1))
    t = (b * s + f) / e
    s = np.where(t < 0, np.clip(-c / a, 0, 1), np.where(t > 1, np.clip((b - c) / a, 0, 1), s))
    t = np.clip(t, 0, 1)
    return np.linalg.norm(p0 + s[:, None] * d1 - q0 - t[:, None] * d2, axis=1)


def edge_gap(a: SurfaceMesh, b: SurfaceMesh, cap: float) -> tuple[float, np.ndarray | None]:
    """(the smallest distance between an edge of `a` and one of `b` where it is below `cap`,
    the midpoint of the two nearest points) or (inf, None)."""
    ea, eb = _unique_edges(a), _unique_edges(b)
    ua, va, ub, vb = (m.vertices[e[:, k]] for m, e in ((a, ea), (b, eb)) for k in (0, 1))
    half_a = 0.5 * np.linalg.norm(va - ua, axis=1)
    half_b = 0.5 * np.linalg.norm(vb - ub, axis=1)
    tree = cKDTree(0.5 * (ub + vb))
    best, where = math.inf, None
    for s in range(0, len(ea), 4096):
        idx = np.arange(s, min(s + 4096, len(ea)))
        lists = tree.query_ball_point(0.5 * (ua[idx] + va[idx]), half_a[idx] + half_b.max() + cap)
        counts = np.fromiter((len(x) for x in lists), np.int64, len(lists))
        if not counts.sum():
            continue
        i = np.repeat(idx, counts)
        j = np.concatenate([np.asarray(x, np.int64) for x in lists if len(x)])
        for c in range(0, len(i), CHUNK_PAIRS):
            ic, jc = i[c:c + CHUNK_PAIRS], j[c:c + CHUNK_PAIRS]
            d = segment_distances(ua[ic], va[ic], ub[jc], vb[jc])
            k = int(np.argmin(d))
            if d[k] < min(best, cap):
                best = float(d[k])
                where = 0.25 * (ua[ic[k]] + va[ic[k]] + ub[jc[k]] + vb[jc[k]])
    return best, where


def _unique_edges(mesh: SurfaceMesh) -> np.ndarray:
    t = mesh.triangles
    return np.unique(np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1),
                     axis=0)


def crossing_points(a: SurfaceMesh, b: SurfaceMesh, reach_b: Reach) -> np.ndarray:
    """Points where an edge of `a` passes through a triangle of `b` (closed tests: touching
    counts), (k, 3)."""
    edges = _unique_edges(a)
    u, v = a.vertices[edges[:, 0]], a.vertices[edges[:, 1]]
    length = np.linalg.norm(v - u, axis=1)
    lb_u, _ = reach_b.lower_bounds(u)
    lb_v, _ = reach_b.lower_bounds(v)
    near = np.flatnonzero((lb_u <= length) & (lb_v <= length))  # a crossing is within reach
    found = []
    for s in range(0, len(near), 4096):
        idx = near[s:s + 4096]
        mid = 0.5 * (u[idx] + v[idx])
        lists = reach_b.tree.query_ball_point(mid, 0.5 * length[idx] + reach_b.radius)
        counts = np.fromiter((len(x) for x in lists), np.int64, len(lists))
        if not counts.sum():
            continue
        tri = b.corners[np.concatenate([np.asarray(x, np.int64) for x in lists if len(x)])]
        e = np.repeat(idx, counts)
        p0, d = u[e], v[e] - u[e]
        e1, e2 = tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]
        pvec = np.cross(d, e2)
        det = np.einsum("ij,ij->i", e1, pvec)
        ok = np.abs(det) > 1e-14 * np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1) \
            * np.linalg.norm(d, axis=1)
        inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)
        tvec = p0 - tri[:, 0]
        bu = np.einsum("ij,ij->i", tvec, pvec) * inv
        qvec = np.cross(tvec, e1)
        bv = np.einsum("ij,ij->i", d, qvec) * inv
        t = np.einsum("ij,ij->i", e2, qvec) * inv
        hit = ok & (bu >= 0) & (bv >= 0) & (bu + bv <= 1) & (t >= 0) & (t <= 1)
        if hit.any():
            found.append(p0[hit] + t[hit, None] * d[hit])
    return np.concatenate(found) if found else np.zeros((0, 3))


def _at(points: np.ndarray) -> str:
    pts = "; ".join("(" + ", ".join(f"{x:.4g}" for x in p) + ")" for p in points[:SHOW])
    return f"at {pts}" + (f" and {len(points) - SHOW} more" if len(points) > SHOW else "")


def _sample(mesh: SurfaceMesh, other: SurfaceMesh) -> np.ndarray:
    """The vertices of `mesh` whose winding number is computed: all, or every k-th where
    that would take more than MAX_WINDING_PAIRS point-triangle pairs."""
    step = max(1, math.ceil(mesh.n_vertices * other.n_triangles / MAX_WINDING_PAIRS))
    return mesh.vertices[::step]


def _closeness(names, mover: str, case: str, gap: float, edge: float, at) -> tuple[str, str]:
    """(the words of two surfaces closer than WARN_GAP_ELEMENTS of an element, the way out)."""
    what = (f"{names[0]} and {names[1]} come within {gap:.3g} m of each other "
            f"{_at(np.asarray([at]))}: {gap / edge:.3g} of an element (the coarser surface's "
            f"mean edge, {edge:.3g} m)")
    way = (f"move or shrink the body ({mover}.geometry) to leave a gap of at least one element, "
           f"{edge:.3g} m, or refine the mesh to elements no longer than the gap "
           f"({case}.mesh.max_element_size: {gap:.2g}, about {(edge / gap) ** 2:.3g} times the "
           "unknowns)")
    return what, way


def check_nesting(mesh: SurfaceMesh, bodies, element_sizes=None) -> list[dict]:
    """Check that surface i of `mesh` (the union of the bodies' surfaces, surface-id order)
    lies strictly inside its parent's and outside its siblings', that no two cross and that
    no two come within REFUSE_GAP_ELEMENTS of an element; MeshError naming both bodies by
    config path (`Body.where`) and their smallest distance otherwise. Returns the gaps of
    the related pairs: {"surfaces": [i, j], "where": [...], "relation": "parent"/"sibling",
    "gap": m, "gap_over_element": gap over the coarser surface's mean edge length, "at": the
    closest point, and "warning": text where the gap is under WARN_GAP_ELEMENTS}."""
    surfaces = [mesh.surface(i) for i in range(mesh.n_surfaces)]
    if len(surfaces) != len(bodies):
        raise MeshError(f"{len(surfaces)} surfaces for {len(bodies)} bodies")
    reach = {}

    def get_reach(i):
        if i not in reach:
            reach[i] = Reach(surfaces[i])
        return reach[i]

    pairs = [(b.parent, b.index, "parent") for b in bodies if b.parent >= 0]
    pairs += [(a.index, b.index, "sibling") for a in bodies for b in bodies
              if a.parent == b.parent and a.parent >= 0 and a.index < b.index]
    out = []
    for i, j, relation in pairs:
        a, b = surfaces[i], surfaces[j]
        da, wa = get_reach(j).smallest(a.vertices)
        db, wb = get_reach(i).smallest(b.vertices)
        gap, closest = (da, a.vertices[wa]) if da <= db else (db, b.vertices[wb])
        # against the coarser surface's elements: its element pairs with the other surface
        # are the ones whose near-singular quadrature a small gap strains
        edge = max(np.mean(a.edge_lengths), np.mean(b.edge_lengths))
        ee, ee_at = edge_gap(a, b, min(gap, WARN_GAP_ELEMENTS * edge))
        if ee < gap:
            gap, closest = ee, ee_at
        names = f"{bodies[j].where} (surface {j})", f"{bodies[i].where} (surface {i})"
        gap_text = f"smallest distance between them {gap:.4g} m ({gap / edge:.3g} elements)"
        crossing = crossing_points(b, a, get_reach(i))
        if not len(crossing):
            crossing = crossing_points(a, b, get_reach(j))
        if len(crossing):
            raise MeshError(f"{names[0]} and {names[1]} cross each other {_at(crossing)}: "
                            + ("a body inside another must lie strictly inside it"
                               if relation == "parent" else "bodies side by side must not "
                               "overlap") + "; move or shrink one of them")
        wn = winding_numbers(_sample(b, a), a)     # b's vertices against a
        if relation == "parent":
            bad = np.flatnonzero(wn < 0.5)
            if len(bad):
                raise MeshError(f"{names[0]} is not inside {names[1]}: {len(bad)} of its "
                                f"vertices lie outside it {_at(_sample(b, a)[bad])}; "
                                f"{gap_text}")
        else:
            wn_a = winding_numbers(_sample(a, b), b)
            if (wn >= 0.5).any() or (wn_a >= 0.5).any():
                first, second = (names[0], names[1]) if (wn >= 0.5).any() else names[::-1]
                raise MeshError(f"{first} lies inside {second}, its sibling: bodies side by "
                                "side must not overlap (to nest one in the other, put it "
                                f"under the other's `inside`); {gap_text}")
        record = {"surfaces": [i, j], "where": [bodies[i].where, bodies[j].where],
                  "relation": relation, "gap": gap, "gap_over_element": float(gap / edge),
                  "at": [float(x) for x in closest]}
        if gap < WARN_GAP_ELEMENTS * edge:
            what, way = _closeness(names, bodies[j].where, bodies[0].where, gap, edge,
                                   closest)
            if gap < REFUSE_GAP_ELEMENTS * edge:
                raise MeshError(f"{what}, less than {REFUSE_GAP_ELEMENTS:g}: the BEM cannot "
                                f"resolve so narrow a gap (its answer would be wrong without "
                                f"another sign); {way}")
            record["warning"] = (f"{what}, less than {WARN_GAP_ELEMENTS:g}: the narrow gap "
                                 f"costs accuracy; {way}")
        out.append(record)
    return out
