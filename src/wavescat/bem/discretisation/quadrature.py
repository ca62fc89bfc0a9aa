"""Quadrature on flat triangles for Galerkin BEM.

Reference triangle: T_ref = {(u, v): u, v >= 0, u + v <= 1}, area 1/2. A physical triangle with
vertices (A0, A1, A2) is x(u, v) = A0 + u (A1 - A0) + v (A2 - A0); its area is |T| = |J| / 2 with
J = (A1 - A0) x (A2 - A0). Hence  int_T f ds = 2 |T| sum_i w_i f(x(p_i)).

Regular (disjoint) element pairs: `triangle_rule(order)` returns a fully symmetric rule
(points invariant under the 6 permutations of the barycentric coordinates, all points inside,
all weights positive) exact for polynomials of total degree <= order; weights sum to 1/2.
Orders 1..MAX_SYMMETRIC_ORDER are tabulated (orbit structures of Dunavant (1985) for the
well-behaved orders and of Xiao-Gimbutas (2010) where Dunavant has negative weights or
outside points: 3 -> 6 points, 7 -> 15, 11 -> 28); the tabulated numbers were obtained by solving
the moment equations of the orthogonal (Dubiner) basis to machine precision, and the tests check
exactness on every monomial. Higher orders fall back to a collapsed (Duffy) Gauss-Jacobi tensor
rule (not symmetric, ((order + 2) // 2)^2 points).

Touching pairs (coincident, common edge, common vertex) use the Sauter-Schwab rules of
`wavescat.bem.discretisation.singular_rules` (re-exported here: `singular_rule`,
`stacked_singular_rules`, `classify_pairs`, `canonical_to_element`, the kind codes); their
conventions are documented there. `QuadratureOrders` bundles the orders an operator uses.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numba as nb
import numpy as np
from scipy.special import roots_jacobi

from ...defaults import QUADRATURE
from ...errors import InputError
from .singular_rules import (COINCIDENT, EDGE, KIND_NAMES, REGULAR, VERTEX, canonical_to_element,
                             check_order, classify_pairs, per_kind_orders, singular_rule,
                             stacked_singular_rules)

__all__ = [
    "QuadratureOrders", "triangle_rule", "MAX_SYMMETRIC_ORDER",
    "singular_rule", "stacked_singular_rules", "per_kind_orders", "classify_pairs",
    "canonical_to_element",
    "REGULAR", "VERTEX", "EDGE", "COINCIDENT", "KIND_NAMES",
]


@dataclass(frozen=True)
class QuadratureOrders:
    """Quadrature orders of a Galerkin operator.

    regular:  polynomial degree of the symmetric triangle rule used on both triangles of a
              disjoint pair (`triangle_rule(regular)`).
    singular: Gauss-Legendre points per variable of the 4D Sauter-Schwab rules for touching
              pairs: one integer, or (vertex, edge, coincident) (`stacked_singular_rules`).
    near:     polynomial degree used instead of `regular` for disjoint pairs that are close:
              distance between the centroids < near_factor * the larger triangle diameter.

    Defaults: the workflow's `solver.quadrature` (wavescat.defaults), measured in
    tests/bem/test_singular_rules.py:
    regular 4 (6 points, Bempp's default: ~1e-5 at a centroid distance of 2 diameters, 1e-6
    at 3), near 10 (25 points: 2e-6 at 1 diameter, 1e-10 at 2) below 2 diameters;
    singular (5, 5, 7): relative errors of the pair integrals of exp(ikr)/r for k h <= 2 on
    well-shaped triangles about 3e-7 (vertex), 3e-7 (edge), 1e-6 (coincident; 6e-6 for a
    1:3 triangle), at 2 * 5^4, 5 * 5^4 and 6 * 7^4 points. Obtuse slivers converge much more
    slowly (a 162-degree sliver: 1e-3 at order 7).
    """

    regular: int = QUADRATURE["regular"]
    singular: int | tuple[int, int, int] = (tuple(QUADRATURE["singular"])  # lists are mutable
                                             if isinstance(QUADRATURE["singular"], list)
                                             else QUADRATURE["singular"])
    near: int = QUADRATURE["near"]
    near_factor: float = 2.0

    def __post_init__(self):
        for name in ("regular", "near"):
            object.__setattr__(self, name, check_order(getattr(self, name), name))
        if isinstance(self.singular, (tuple, list, np.ndarray)):
            orders = per_kind_orders(self.singular)
            singular = tuple(orders[c] for c in (VERTEX, EDGE, COINCIDENT))
            object.__setattr__(self, "singular", singular)
        else:
            object.__setattr__(self, "singular", check_order(self.singular, "singular"))
        f = self.near_factor
        if not (isinstance(f, (int, float, np.floating, np.integer)) and np.isfinite(f) and f >= 0):
            raise InputError("quadrature near_factor must be a finite number >= 0, "
                              f"got near_factor={f!r}")

    def singular_order(self, kind) -> int:
        """Gauss order of the singular rule of kind VERTEX, EDGE or COINCIDENT."""
        return per_kind_orders(self.singular)[kind]


def mapped_rule(mesh, points, weights) -> tuple[np.ndarray, np.ndarray]:
    """A rule on the reference triangle (points (nq, 2) as (s, t), weights) on every element
    of `mesh`: points (m, nq, 3) = c0 + s (c1 - c0) + t (c2 - c0) of the element's corners,
    weights (m, nq) = the element's area times the rule's weights normalised to sum to 1.
    The one mapping every integral over the elements uses (operators, potentials, H-matrix
    clouds, the plane waves' data), so their points agree to the bit."""
    ref = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 2)
    w = np.asarray(weights, dtype=np.float64)
    pts = _map_points(np.ascontiguousarray(mesh.corners, dtype=np.float64), ref)
    return pts, mesh.areas[:, None] * (w / w.sum())[None, :]


@nb.njit(parallel=True, cache=True)
def _map_points(corners, ref):
    """c0 + s (c1 - c0) + t (c2 - c0) in that order of operations (the arithmetic of
    clouds._fill_cloud); on threads: numpy's temporaries made this seconds per rule at 2 kHz on
    the submarine, on every rank."""
    m, nq = corners.shape[0], ref.shape[0]
    pts = np.empty((m, nq, 3))
    for e in nb.prange(m):
        for q in range(nq):
            for x in range(3):
                c0 = corners[e, 0, x]
                pts[e, q, x] = (c0 + ref[q, 0] * (corners[e, 1, x] - c0)
                                + ref[q, 1] * (corners[e, 2, x] - c0))
    return pts


def triangle_rule(order) -> tuple[np.ndarray, np.ndarray]:
    """(points (n, 2), weights (n,)) on T_ref, exact for u^a v^b with a + b <= order.

    Weights sum to 1/2 (the area of T_ref). Fresh arrays on every call (the rule is cached).
    """
    points, weights = _triangle_rule(check_order(order))
    return points.copy(), weights.copy()


@lru_cache(maxsize=None)
def _triangle_rule(order: int):
    if order <= MAX_SYMMETRIC_ORDER:
        return _expand_orbits(*_SYMMETRIC_ORBITS[order])
    return _collapsed_gauss_jacobi(order)


def _expand_orbits(centre_weight, orbits3, orbits6):
    """Points and weights of a symmetric rule from its orbit generators (barycentric)."""
    bary, weights = [], []
    if centre_weight:
        bary.append((1 / 3, 1 / 3, 1 / 3))
        weights.append(centre_weight)
    for w, a in orbits3:
        b = 1.0 - 2.0 * a
        bary += [(a, a, b), (a, b, a), (b, a, a)]
        weights += [w] * 3
    for w, a, b in orbits6:
        c = 1.0 - a - b
        bary += [(a, b, c), (b, a, c), (a, c, b), (c, a, b), (b, c, a), (c, b, a)]
        weights += [w] * 6
    bary = np.asarray(bary)
    return np.ascontiguousarray(bary[:, 1:]), np.asarray(weights)


def _collapsed_gauss_jacobi(order: int):
    """Duffy-collapsed tensor rule: u = s, v = (1 - s) t, ds dt weight (1 - s) by Gauss-Jacobi."""
    n = order // 2 + 1  # 2n - 1 >= order
    xs, ws = roots_jacobi(n, 1.0, 0.0)  # weight (1 - x) on [-1, 1]
    s, ws = (xs + 1) / 2, ws / 4  # weight (1 - s) on [0, 1]: factor 2 (1-x) * 1/2 dx
    xt, wt = np.polynomial.legendre.leggauss(n)
    t, wt = (xt + 1) / 2, wt / 2
    S, Tt = np.meshgrid(s, t, indexing="ij")
    points = np.stack([S.ravel(), ((1 - S) * Tt).ravel()], axis=1)
    return points, np.outer(ws, wt).ravel()


def _load_orbits() -> dict:
    """Orbit generators per order (package data symmetric_triangle_rules.json): (centre weight,
    ((w, a), ...) for the 3-point orbits of barycentric (a, a, 1 - 2a), ((w, a, b), ...) for the
    6-point orbits of (a, b, 1 - a - b)); w is the weight of each point of the orbit, total 1/2."""
    with open(Path(__file__).with_name("symmetric_triangle_rules.json")) as fh:
        orders = json.load(fh)["orders"]
    return {int(k): (o["centre"], tuple(map(tuple, o["three"])), tuple(map(tuple, o["six"])))
            for k, o in orders.items()}


_SYMMETRIC_ORBITS = _load_orbits()
MAX_SYMMETRIC_ORDER = max(_SYMMETRIC_ORBITS)
