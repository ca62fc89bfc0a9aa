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
`wavescat.bem.singular_rules` (re-exported here: `singular_rule`, `stacked_singular_rules`,
`classify_pairs`, `canonical_to_element`, the kind codes); their conventions are documented
there. `QuadratureOrders` bundles the orders an operator uses.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.special import roots_jacobi

from ..defaults import QUADRATURE
from ..errors import ConfigError
from .singular_rules import (  # noqa: F401 - re-exported: one import for the operator code
    COINCIDENT,
    EDGE,
    KIND_NAMES,
    REGULAR,
    VERTEX,
    canonical_to_element,
    check_order,
    classify_pairs,
    per_kind_orders,
    singular_rule,
    stacked_singular_rules,
)

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
            raise ConfigError("quadrature near_factor must be a finite number >= 0, "
                              f"got near_factor={f!r}")

    def singular_order(self, kind) -> int:
        """Gauss order of the singular rule of kind VERTEX, EDGE or COINCIDENT."""
        return per_kind_orders(self.singular)[kind]


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


# Orbit generators per order: (centre weight, ((w, a), ...) for the 3-point orbits of
# barycentric (a, a, 1 - 2a), ((w, a, b), ...) for the 6-point orbits of (a, b, 1 - a - b));
# w is the weight of each point of the orbit, total 1/2.
_SYMMETRIC_ORBITS = {
    1: (0.5, (), ()),
    2: (0.0, (
        (0.16666666666666666, 0.16666666666666666),
    ), (
    )),
    3: (0.0, (
        (0.0959889303992247, 0.4455199002326454),
        (0.07067773626744199, 0.11330994935877003),
    ), (
    )),
    4: (0.0, (
        (0.11169079483900574, 0.4459484909159649),
        (0.054975871827660935, 0.09157621350977077),
    ), (
    )),
    5: (0.11250000000000002, (
        (0.06296959027241357, 0.10128650732345636),
        (0.06619707639425308, 0.4701420641051151),
    ), (
    )),
    6: (0.0, (
        (0.058393137863189906, 0.24928674517091012),
        (0.02542245318510341, 0.06308901449150217),
    ), (
        (0.04142553780918668, 0.6365024991213986, 0.3103524510337846),
    )),
    7: (0.0, (
        (0.050771773666162215, 0.2305789823058589),
        (0.026069200406442353, 0.06433418502069052),
        (0.020954659237290986, 0.41116860044246656),
    ), (
        (0.03443551667838555, 0.6442232245684162, 0.043260765416640236),
    )),
    8: (0.07215780383889356, (
        (0.04754581713364235, 0.4592925882927231),
        (0.05160868526735911, 0.1705693077517602),
        (0.01622924881159904, 0.050547228317030964),
    ), (
        (0.013615157087217507, 0.7284923929554042, 0.008394777409957643),
    )),
    9: (0.048567898141399356, (
        (0.01566735011356957, 0.4896825191987376),
        (0.01278883782934902, 0.04472951339445273),
        (0.03891377050238715, 0.4370895914929366),
        (0.0398238694636051, 0.1882035356190327),
    ), (
        (0.021641769688644685, 0.741198598784498, 0.03683841205473628),
    )),
    10: (0.03994725237061987, (
        (0.004111909345232101, 0.023308867510000237),
        (0.03556190111618867, 0.4250862106020906),
    ), (
        (0.015443328442281997, 0.8210720699856293, 0.14329537042686716),
        (0.022715296148085, 0.6283074002134925, 0.22376697357697298),
        (0.018679928117152633, 0.029946031954170838, 0.6113138261813976),
    )),
    11: (0.04202043174883404, (
        (0.005661083643349691, 0.02967723846264949),
        (0.007460555534655482, 0.49695710659887754),
        (0.03468493516426596, 0.21213050088854055),
        (0.019604677441483632, 0.10758367984503026),
        (0.03283566283968335, 0.4379019711768585),
    ), (
        (0.006109010532152245, 0.010878471958459479, 0.8350682797326919),
        (0.020097460197989695, 0.6547550830293513, 0.04675744244156195),
    )),
    12: (0.0, (
        (0.0030831305257795097, 0.021317350453210378),
        (0.031429112108942565, 0.2712103850121159),
        (0.01739805646535447, 0.12757614554158594),
        (0.01286553322022767, 0.4882173897738049),
        (0.021846272269019196, 0.4397243922944603),
    ), (
        (0.008658115554329446, 0.8580140335440727, 0.11625191590759712),
        (0.01117838660115172, 0.022838332222256983, 0.6958360867878035),
        (0.020185778883190477, 0.11534349453469807, 0.2757132696855142),
    )),
    13: (0.02639770519778635, (
        (0.003984023788473173, 0.024799035837267946),
        (0.015627386600989945, 0.4688354960674479),
        (0.023773133703024266, 0.2292278783808811),
        (0.0156006866712501, 0.11454215050784962),
        (0.02358765912014186, 0.4147090886309517),
        (0.005638681719550081, 0.49503292610378513),
    ), (
        (0.018406041316554947, 0.0944811598857155, 0.6364624266866395),
        (0.00776988953621548, 0.8514336880931967, 0.12629634798642275),
        (0.008651999145883793, 0.2916802414229906, 0.01797926375929293),
    )),
}

MAX_SYMMETRIC_ORDER = max(_SYMMETRIC_ORBITS)
