"""Fully numerical Sauter-Schwab rules for touching triangle pairs (Galerkin BEM).

Sauter & Schwab, "Boundary Element Methods" (Springer 2011), section 5.2.1; Erichsen & Sauter,
CMAME 157 (1998). For a test triangle T_x and a trial triangle T_y that are identical, share an
edge, or share a vertex, the 4D integral over T_x x T_y of a kernel with an integrable 1/r
singularity at x = y is split into regions of the hypercube (xi, eta1, eta2, eta3) in (0, 1)^4;
on each region a Duffy-type map whose Jacobian cancels the singularity makes the integrand
analytic, and a tensor Gauss-Legendre rule with `order` points per variable integrates it with
an error that falls geometrically in `order`.

Conventions (the operator code relies on these):

* Reference triangle T_ref = {(u, v): u, v >= 0, u + v <= 1}. A triangle with vertices in the
  order (A0, A1, A2) is x(u, v) = A0 + u (A1 - A0) + v (A2 - A0).
* Kind codes: REGULAR = 0 (no common vertex), VERTEX = 1, EDGE = 2, COINCIDENT = 3;
  `singular_rule` also accepts the names "vertex", "edge", "coincident".
* Canonical local vertex order of a touching pair (A = test triangle, B = trial triangle):
    coincident: A0 = B0, A1 = B1, A2 = B2;
    edge:       A0 = B0, A1 = B1 (the shared edge, same orientation in both), A2 != B2;
    vertex:     A0 = B0 (the shared vertex).
  `classify_pairs(tri_a, tri_b)` returns per pair the kind and permutations perm_a, perm_b with
  canonical vertex c of A = original local vertex perm_a[c] (global index tri_a[perm_a[c]]);
  likewise for B. The permutations may be odd (for an edge of a consistently oriented mesh one
  of them always is), so take normals from the element itself, never from the canonical order.
  A P1 basis function on canonical vertex c of A is the element's local basis function perm_a[c];
  in canonical coordinates the barycentrics are (1 - u - v, u, v).
* `singular_rule(kind, order) -> (x_ref, y_ref, w)`: points (n, 2) on T_ref for A and for B in
  canonical order and weights (n,) that include every Jacobian of the maps, normalised to the
  reference pair: sum(w) = 1/4 = |T_ref|^2, and
      int_{T_x} int_{T_y} f(x, y) ds_y ds_x  ~=  (2 |T_x|) (2 |T_y|) sum_i w_i f(x_i, y_i)
  with x_i = x(x_ref[i]) on A, y_i = y(y_ref[i]) on B. Points: 6 order^4 (coincident),
  5 order^4 (edge), 2 order^4 (vertex). Every point lies strictly inside T_ref, and x_i != y_i.

Accuracy (relative error of int int exp(ikr)/r, k <= 2, triangles of diameter ~1; checked in
tests/bem/test_singular_rules.py): well-shaped pairs lose a factor
~6-15 per added Gauss point, e.g. order 5: vertex ~3e-7, edge ~3e-7, coincident 2.5e-5; order 7:
coincident 6e-7. Convergence slows when the pair is nearly singular in shape: a coincident
obtuse sliver (162 degrees) is still at 1e-3 at order 8, an edge pair folded to a 30 degree
dihedral angle at 1e-5 at order 5 (the Duffy maps are affine-invariant; J's condition enters).
"""
from __future__ import annotations

from functools import lru_cache

import numba as nb
import numpy as np

from ...errors import InputError, MeshError

REGULAR, VERTEX, EDGE, COINCIDENT = 0, 1, 2, 3
KIND_NAMES = ("regular", "vertex", "edge", "coincident")

__all__ = ["REGULAR", "VERTEX", "EDGE", "COINCIDENT", "KIND_NAMES", "singular_rule",
           "stacked_singular_rules", "per_kind_orders", "classify_pairs", "canonical_to_element"]


# --- the Sauter-Schwab regions ------------------------------------------------------------
# Written on the book's reference triangle {0 <= x2 <= x1 <= 1} (vertices (0,0), (1,0), (1,1)),
# where the common vertex is (0,0) and the common edge is x2 = 0 with x1 = y1 on it. Each
# function returns a list of regions (x1, x2, y1, y2, jacobian) on the Gauss grid.

def _coincident_regions(xi, e1, e2, e3):
    e12, e123 = e1 * e2, e1 * e2 * e3
    jac = xi**3 * e1**2 * e2
    halves = [  # three regions; the other three exchange x and y
        (xi, xi * (1 - e1 + e12), xi * (1 - e123), xi * (1 - e1)),
        (xi, xi * (e1 - e12 + e123), xi * (1 - e12), xi * (e1 - e12)),
        (xi * (1 - e123), xi * (e1 - e123), xi, xi * (e1 - e12)),
    ]
    return [(*r, jac) for x1, x2, y1, y2 in halves for r in ((x1, x2, y1, y2), (y1, y2, x1, x2))]


def _edge_regions(xi, e1, e2, e3):
    e12, e123 = e1 * e2, e1 * e2 * e3
    jac = xi**3 * e1**2
    return [
        (xi, xi * e1 * e3, xi * (1 - e12), xi * e1 * (1 - e2), jac),
        (xi, xi * e1, xi * (1 - e123), xi * e12 * (1 - e3), jac * e2),
        (xi * (1 - e12), xi * e1 * (1 - e2), xi, xi * e123, jac * e2),
        (xi * (1 - e123), xi * e12 * (1 - e3), xi, xi * e1, jac * e2),
        (xi * (1 - e123), xi * e1 * (1 - e2 * e3), xi, xi * e12, jac * e2),
    ]


def _vertex_regions(xi, e1, e2, e3):
    jac = xi**3 * e2
    x1, x2, y1, y2 = xi, xi * e1, xi * e2, xi * e2 * e3
    return [(x1, x2, y1, y2, jac), (y1, y2, x1, x2, jac)]


_REGIONS = {VERTEX: _vertex_regions, EDGE: _edge_regions, COINCIDENT: _coincident_regions}


def _kind_code(kind) -> int:
    if isinstance(kind, str) and kind in KIND_NAMES[1:]:
        return KIND_NAMES.index(kind)
    if isinstance(kind, (int, np.integer)) and not isinstance(kind, bool) and int(kind) in _REGIONS:
        return int(kind)
    raise InputError(f"singular rule kind must be one of 'vertex'/1, 'edge'/2, "
                      f"'coincident'/3, got kind={kind!r}")


def check_order(order, name="order") -> int:
    """A quadrature order as a plain int >= 1, else a InputError naming it."""
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)) or order < 1:
        raise InputError(f"quadrature {name} must be an integer >= 1, got {name}={order!r}")
    return int(order)


def singular_rule(kind, order) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sauter-Schwab rule (x_ref (n, 2), y_ref (n, 2), weights (n,)) for a touching pair.

    kind: "vertex"/VERTEX, "edge"/EDGE or "coincident"/COINCIDENT; order: Gauss-Legendre points
    per variable of the hypercube. Canonical vertex order and normalisation (sum(w) = 1/4,
    integral = (2|T_x|)(2|T_y|) sum w f) as in the module docstring. Fresh arrays every call.
    """
    rule = _singular_rule(_kind_code(kind), check_order(order))
    return tuple(a.copy() for a in rule)


@lru_cache(maxsize=None)
def _singular_rule(kind: int, order: int):
    g, gw = np.polynomial.legendre.leggauss(order)
    g, gw = (g + 1) / 2, gw / 2
    grid = np.meshgrid(g, g, g, g, indexing="ij")
    xi, e1, e2, e3 = (a.ravel() for a in grid)
    w4 = np.einsum("i,j,k,l->ijkl", gw, gw, gw, gw).ravel()
    regions = _REGIONS[kind](xi, e1, e2, e3)
    x1, x2, y1, y2, jac = (np.concatenate(c) for c in zip(*regions))
    # (x1, x2) on {0 <= x2 <= x1 <= 1} -> (u, v) = (x1 - x2, x2) on T_ref: unit Jacobian,
    # vertices (0,0), (1,0), (1,1) -> (0,0), (1,0), (0,1), i.e. canonical vertices 0, 1, 2.
    x_ref = np.stack([x1 - x2, x2], axis=1)
    y_ref = np.stack([y1 - y2, y2], axis=1)
    return x_ref, y_ref, jac * np.tile(w4, len(regions))


def stacked_singular_rules(order) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """All three rules in one set of arrays, indexed by kind code: (offsets (5,), x_ref, y_ref, w).

    order: one Gauss order for all kinds, or a sequence (vertex, edge, coincident) of three.
    The rule of kind c (VERTEX, EDGE, COINCIDENT) is rows offsets[c]:offsets[c + 1]; REGULAR
    (c = 0) is empty. Convenient for kernels that take `kind` from `classify_pairs` directly.
    """
    orders = per_kind_orders(order)
    rules = [_singular_rule(c, orders[c]) for c in (VERTEX, EDGE, COINCIDENT)]
    sizes = [0] + [len(r[2]) for r in rules]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return (offsets, *(np.concatenate([r[i] for r in rules]) for i in range(3)))


def per_kind_orders(order) -> dict:
    """{VERTEX: n, EDGE: n, COINCIDENT: n} from one order or a (vertex, edge, coincident) triple."""
    if isinstance(order, (tuple, list, np.ndarray)):
        if len(order) != 3:
            raise InputError("quadrature singular must be an integer or three integers "
                              f"(vertex, edge, coincident), got singular={order!r}")
        kinds = (VERTEX, EDGE, COINCIDENT)
        return {kind: check_order(o, "singular") for kind, o in zip(kinds, order)}
    return dict.fromkeys((VERTEX, EDGE, COINCIDENT), check_order(order, "singular"))


# --- pair classification ------------------------------------------------------------------

def classify_pairs(tri_a, tri_b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kind and canonical vertex permutations of triangle pairs.

    tri_a, tri_b: (n, 3) global vertex indices of the test and trial triangle of each pair.
    Returns kind (n,) int64 in {REGULAR, VERTEX, EDGE, COINCIDENT} (number of shared vertices)
    and perm_a, perm_b (n, 3) int64 such that tri_a[i, perm_a[i]] and tri_b[i, perm_b[i]] are in
    the canonical order of the module docstring. perm_a is always a rotation (even) of the
    element's own order (identity for regular and coincident pairs); perm_b is a rotation for
    regular and vertex pairs and follows A's order on the shared vertices otherwise.
    """
    a = np.asarray(tri_a)
    b = np.asarray(tri_b)
    for name, t in (("tri_a", a), ("tri_b", b)):
        if t.ndim != 2 or t.shape[1] != 3 or not np.issubdtype(t.dtype, np.integer):
            raise MeshError(f"{name} must be an (n, 3) integer array of vertex indices, "
                            f"got {name} with shape {t.shape} and dtype {t.dtype}")
        bad = (t[:, 0] == t[:, 1]) | (t[:, 1] == t[:, 2]) | (t[:, 0] == t[:, 2])
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise MeshError(f"{name} has a degenerate triangle (repeated vertex) at row {i}: "
                            f"{t[i]}")
    if a.shape != b.shape:
        raise MeshError(f"tri_a and tri_b must have the same shape, got {a.shape} and {b.shape}")
    return _classify(np.ascontiguousarray(a, np.int64), np.ascontiguousarray(b, np.int64))


@nb.njit(parallel=True, cache=True)
def _classify(a, b):
    """classify_pairs on validated (n, 3) int64 arrays, a pair per iteration (the millions of
    touching pairs of a large mesh, on every MPI rank of a solve)."""
    n = a.shape[0]
    kind = np.zeros(n, np.int64)
    perm_a = np.empty((n, 3), np.int64)
    perm_b = np.empty((n, 3), np.int64)
    for p in nb.prange(n):
        shared = np.zeros(3, np.bool_)  # A's vertices that B has
        for i in range(3):
            for j in range(3):
                if a[p, i] == b[p, j]:
                    shared[i] = True
        count = shared[0] + shared[1] + shared[2]
        kind[p] = count
        # A: the shared vertex first (vertex), the unshared one last (edge), else as it is
        first = 0
        if count == VERTEX:
            first = 0 if shared[0] else (1 if shared[1] else 2)
        elif count == EDGE:
            first = ((0 if not shared[0] else (1 if not shared[1] else 2)) + 1) % 3
        for c in range(3):
            perm_a[p, c] = (first + c) % 3
            perm_b[p, c] = c
        if count == VERTEX:  # B: rotated so that the shared vertex comes first
            j0 = 0
            while b[p, j0] != a[p, perm_a[p, 0]]:
                j0 += 1
            for c in range(3):
                perm_b[p, c] = (j0 + c) % 3
        elif count >= EDGE:  # B's match of A's canonical vertex c at position c
            for c in range(count):
                j = 0
                while b[p, j] != a[p, perm_a[p, c]]:
                    j += 1
                perm_b[p, c] = j
            if count == EDGE:  # B's unshared vertex last
                perm_b[p, 2] = 3 - perm_b[p, 0] - perm_b[p, 1]
    return kind, perm_a, perm_b


def canonical_to_element(points, perm) -> np.ndarray:
    """Reference points given in a canonical vertex order, in the element's own reference frame.

    points (q, 2) on T_ref with respect to the vertex order perm (so that canonical vertex c is
    local vertex perm[c]); perm (3,) or (n, 3). Returns (q, 2) or (n, q, 2): the same physical
    points as (u, v) with respect to local vertices (0, 1, 2).
    """
    p = np.asarray(points, dtype=float)
    perm = np.asarray(perm)
    bary = np.stack([1 - p[:, 0] - p[:, 1], p[:, 0], p[:, 1]], axis=-1)  # canonical barycentrics
    inv = np.argsort(perm, axis=-1)  # local vertex l is canonical vertex inv[l]
    local = bary[:, inv[..., 1:]]  # (q, 2) or (q, n, 2): local barycentrics 1 and 2 = (u, v)
    return local if perm.ndim == 1 else np.moveaxis(local, 1, 0)
