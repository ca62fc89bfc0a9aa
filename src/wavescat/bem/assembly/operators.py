"""Galerkin matrices of the Laplace/Helmholtz boundary integral operators.

A[i, j] = <test_i, Op trial_j> (real L2 pairing, docs/conventions.md) for Op in
single_layer V, double_layer K, adjoint_double_layer K', hypersingular W, with
G(x, y) = exp(ik|x-y|)/(4 pi |x-y|) and the outward normal n:
    V: G    K: dG/dn_y    K': dG/dn_x    W = -d/dn_x K, assembled by integration by parts
    <W u, v> = int int G(x,y) [curl u(y) . curl v(x) - k^2 (n_x . n_y) u(y) v(x)]
(positive semi-definite for Laplace). On a closed surface K 1 = -1/2.

Element pairs that share no vertex use tensor Gauss rules on both triangles; pairs that
touch (coincident, edge, vertex) use the Sauter-Schwab rules of quadrature.py. Everything
is built on one service, `EntryEvaluator`: local element matrices of element pairs,
blocks rows x cols of the global matrix, and the dense matrix.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ...backend import real_dtype, resolve
from ...errors import WavescatError
from ...memory import check_dense_allocation
from ...progress import stage
from ..discretisation import quadrature as rules
from ..discretisation.pairs import mesh_cached, near_kept, near_pairs, touching_kept, touching_pairs  # noqa: F401
from ..discretisation.spaces import FunctionSpace, same_mesh
from ..kernels import cpu as kernels_cpu
from ..kernels.green import OPERATORS, Operator  # noqa: F401 - OPERATORS re-exported
from .integrators import integrator

SINGULAR_KINDS = ("coincident", "edge", "vertex")


def _check_spaces(name, trial, test):
    Operator.named(name)
    for label, s in (("trial", trial), ("test", test)):
        if not isinstance(s, FunctionSpace):
            raise WavescatError(
                f"{label} = {type(s).__name__}: a wavescat.bem.discretisation.spaces space is needed"
            )
    if not same_mesh(trial, test):
        raise WavescatError("trial and test spaces live on different meshes "
                            f"({trial.mesh.n_triangles} and {test.mesh.n_triangles} triangles)")
    if name == "hypersingular" and (trial.kind != "P1" or test.kind != "P1"):
        raise WavescatError(f"hypersingular needs P1 trial and test spaces, got trial={trial.kind}, "
                            f"test={test.kind}")


def _wavenumber(k) -> complex:
    kc = complex(k)
    if not np.isfinite(kc.real) or not np.isfinite(kc.imag) or kc.imag < 0:
        raise WavescatError(f"wavenumber k = {k!r}: must be finite with Im k >= 0")
    return kc


@dataclass(frozen=True, eq=False)
class ElementData:
    """Per-element arrays a kernel reads: quadrature points/weights of the regular rule,
    normals, basis values at the rule's points, surface curls, corners, vertex indices."""

    pts: np.ndarray  # (m, nq, 3)
    wts: np.ndarray  # (m, nq): rule weight * element area
    nrm: np.ndarray  # (m, 3)
    phi: np.ndarray  # (nq, nloc)
    curl: np.ndarray  # (m, nloc, 3)
    corners: np.ndarray  # (m, 3, 3)
    areas: np.ndarray  # (m,)
    tri: np.ndarray  # (m, 3) mesh vertex indices (decides which pairs touch)
    dofs: np.ndarray  # (m, nloc)
    centroids: np.ndarray  # (m, 3)
    diameters: np.ndarray  # (m,) longest edge


def element_data(space: FunctionSpace, ref_points, ref_weights) -> ElementData:
    mesh = space.mesh
    pts, wts = rules.mapped_rule(mesh, ref_points, ref_weights)
    return ElementData(np.ascontiguousarray(pts), np.ascontiguousarray(wts), mesh.normals,
                       space.basis_values(np.asarray(ref_points, dtype=np.float64)),
                       np.ascontiguousarray(space.surface_curls), mesh.corners, mesh.areas,
                       mesh.triangles, space.element_dofs, mesh.centroids,
                       mesh.edge_lengths.max(axis=1))


def shared_element_data(space: FunctionSpace, order: int) -> ElementData:
    """element_data of `space` for the triangle rule of `order`, made once per mesh (every
    operator on the mesh reads it; about a second each at 1 kHz on the submarine). Read only:
    kernels take it as it is."""
    return mesh_cached(space.mesh, ("elements", space.kind, int(order)),
                       lambda: element_data(space, *rules.triangle_rule(order)))


@dataclass(frozen=True)
class SingularRules:
    """The Sauter-Schwab rules stacked: rule of kind code c (quadrature.VERTEX, EDGE,
    COINCIDENT) is points offsets[c]:offsets[c+1]; weights scaled so that a pair integral is
    |T_a| |T_b| sum w f (a smooth integrand over two unit-area triangles sums to 1).
    ref_a, ref_b: (2, n), the reference coordinates (s, t) in rows (contiguous vector loads in
    the CPU kernel)."""

    offsets: np.ndarray
    ref_a: np.ndarray
    ref_b: np.ndarray
    weights: np.ndarray


def singular_rules(order: int) -> SingularRules:
    offsets, xa, xb, w = rules.stacked_singular_rules(order)
    return SingularRules(np.asarray(offsets, np.int64), np.ascontiguousarray(np.asarray(xa, float).T),
                         np.ascontiguousarray(np.asarray(xb, float).T), 4.0 * np.asarray(w, float))


class EntryEvaluator:
    """Galerkin entries of one operator on (trial, test) as a service: element-pair local
    matrices, blocks rows x cols, and the dense matrix, on the CPU (Numba) or GPU (CuPy).

    Pairs are treated by kind: touching (singular rules), near (centroid distance below
    quadrature.near_factor times the larger diameter: triangle rule of order `near`) and
    regular (triangle rule of order `regular`)."""

    def __init__(self, name, trial, test, k, backend=None, precision="double", quadrature=None):
        _check_spaces(name, trial, test)
        self.name = name
        self.op = Operator.named(name)
        self.trial, self.test = trial, test
        self.k = _wavenumber(k)
        self.backend = resolve(backend)
        self.precision = precision
        self.real_dtype = real_dtype(precision)
        self.is_real = self.k == 0
        self.dtype = np.dtype(self.real_dtype) if self.is_real else np.result_type(self.real_dtype, 1j)
        self.orders = quadrature if quadrature is not None else rules.QuadratureOrders()
        self.near_factor = float(self.orders.near_factor)
        self.rule_points = len(rules.triangle_rule(self.orders.regular)[1])
        self.data_a = shared_element_data(test, self.orders.regular)
        self.data_b = shared_element_data(trial, self.orders.regular)
        self.near_a = shared_element_data(test, self.orders.near)
        self.near_b = shared_element_data(trial, self.orders.near)
        self.rules = singular_rules(self.orders.singular)
        self.kernels = integrator(self)

    # --- shapes -----------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return self.test.n_dofs, self.trial.n_dofs

    # --- element pairs ----------------------------------------------------------------
    def classify(self, pa, pb):
        """(rule kind, vertex permutation of a, of b) of touching pairs (quadrature.classify_pairs)."""
        return rules.classify_pairs(self.data_a.tri[pa], self.data_b.tri[pb])

    def _singular(self, pa, pb):
        return self.kernels.singular(pa, pb, *self.classify(pa, pb))

    def special_pairs(self, keep=None):
        """(pa, pb, re, im) of the touching pairs (singular rules) and of the near pairs (near
        rule), every ordered pair, or those `keep(pa, pb)` (a mask) selects: added to the
        regular pairs of the dense matrix."""
        mesh = self.test.mesh
        pa, pb, *kinds = touching_kept(mesh, keep)
        out = [(pa, pb, *self.kernels.singular(pa, pb, *kinds))]
        pa, pb = near_kept(mesh, self.near_factor, keep)
        out.append((pa, pb, *self.kernels.regular(pa, pb, near=True)))
        return out

    def _combine(self, re, im):
        if self.is_real:
            return re.astype(self.dtype, copy=False)
        out = self.backend.xp.empty(re.shape, dtype=self.dtype)
        out.real = re
        out.imag = im
        return out

    def pair_kinds(self, pa, pb):
        """(touching, near) boolean masks of element pairs."""
        a, b = self.data_a, self.data_b
        touch = (a.tri[pa][:, :, None] == b.tri[pb][:, None, :]).any(axis=(1, 2))
        dist2 = ((a.centroids[pa] - b.centroids[pb]) ** 2).sum(axis=1)
        radius = self.near_factor * np.maximum(a.diameters[pa], b.diameters[pb])
        return touch, (dist2 < radius**2) & ~touch

    def _pairs(self, pa, pb, regular_only=False):
        """(re, im) local matrices of element pairs on the backend."""
        re, im = self.kernels.regular(pa, pb)
        if regular_only:
            return re, im
        touch, near = self.pair_kinds(pa, pb)
        for mask, fn in ((touch, self._singular),
                         (near, lambda x, y: self.kernels.regular(x, y, near=True))):
            if mask.any():
                idx = np.flatnonzero(mask)
                sre, sim = fn(pa[idx], pb[idx])
                idx = self.kernels.on_device(idx)
                re[idx] = sre
                im[idx] = sim
        return re, im

    def element_pairs(self, test_elements, trial_elements, regular_only=False):
        """Local matrices (npairs, nloc_test, nloc_trial) of the pairs (test_elements[p],
        trial_elements[p]); touching and near pairs get their rules unless regular_only."""
        pa = np.ascontiguousarray(self.backend.asnumpy(test_elements), dtype=np.int64).ravel()
        pb = np.ascontiguousarray(self.backend.asnumpy(trial_elements), dtype=np.int64).ravel()
        if pa.shape != pb.shape:
            raise WavescatError(f"element_pairs: {len(pa)} test elements but {len(pb)} trial elements")
        return self._combine(*self._pairs(pa, pb, regular_only))

    # --- blocks and the dense matrix --------------------------------------------------
    def block(self, rows, cols):
        """Entries A[rows][:, cols] (backend array), singular pairs included."""
        rows = np.asarray(self.backend.asnumpy(rows), dtype=np.int64).ravel()
        cols = np.asarray(self.backend.asnumpy(cols), dtype=np.int64).ravel()
        el_a = np.unique(self.test.dof_to_elements[rows].indices)
        el_b = np.unique(self.trial.dof_to_elements[cols].indices)
        pa = np.repeat(el_a, len(el_b))
        pb = np.tile(el_b, len(el_a))
        re, im = self._pairs(pa, pb)
        row_pos = np.full(self.test.n_dofs, -1, np.int64)
        row_pos[rows] = np.arange(len(rows))
        col_pos = np.full(self.trial.n_dofs, -1, np.int64)
        col_pos[cols] = np.arange(len(cols))
        return self.kernels.block(pa, pb, re, im, row_pos, col_pos, (len(rows), len(cols)))

    @cached_property
    def colors(self):
        """Test elements in groups that share no test dof (rows of one group are race-free)."""
        color = kernels_cpu.greedy_coloring(self.test.element_dofs, self.test.n_dofs)
        order = np.argsort(color, kind="stable")
        bounds = np.searchsorted(color[order], np.arange(color.max() + 2))
        return [order[bounds[c]:bounds[c + 1]] for c in range(len(bounds) - 1)]

    def dense(self):
        """The full matrix (n_test, n_trial) on the backend."""
        # refuse before allocating a matrix the device cannot hold (a clear error, not a
        # failure deep inside NumPy or CuPy)
        check_dense_allocation(*self.shape, self.kernels.dense_bytes(), self.backend, "operator")
        with stage(f"dense assembly of {self.name} ({self.shape[0]} x {self.shape[1]})"):
            return self._dense()

    def _dense(self):
        return self.kernels.dense()


def assemble(name, trial, test, k, backend=None, precision="double", quadrature=None):
    """Dense Galerkin matrix A[i, j] = <test_i, Op trial_j> (see module docstring)."""
    return EntryEvaluator(name, trial, test, k, backend, precision, quadrature).dense()


_REF_MASS = {("P0", "P0"): np.array([[1.0]]),
             ("P1", "P0"): np.full((3, 1), 1.0 / 3.0),  # (test, trial)
             ("P0", "P1"): np.full((1, 3), 1.0 / 3.0),
             ("P1", "P1"): (np.ones((3, 3)) + np.eye(3)) / 12.0}


def mass_matrix(trial: FunctionSpace, test: FunctionSpace) -> sp.csr_matrix:
    """Sparse identity (Gram) matrix M[i, j] = int test_i trial_j ds, exact on flat triangles."""
    if not same_mesh(trial, test):
        raise WavescatError("mass_matrix: trial and test spaces live on different meshes")
    ref = _REF_MASS[(test.kind, trial.kind)]
    areas = test.mesh.areas
    vals = areas[:, None, None] * ref[None]
    rows = np.broadcast_to(test.element_dofs[:, :, None], vals.shape)
    cols = np.broadcast_to(trial.element_dofs[:, None, :], vals.shape)
    return sp.csr_matrix((vals.ravel(), (rows.ravel(), cols.ravel())),
                         shape=(test.n_dofs, trial.n_dofs))
