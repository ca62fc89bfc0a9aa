"""Boundary element spaces on flat-triangle meshes: P0 (piecewise constant) and P1
(continuous piecewise linear).

A space is the map "local basis function c of element e -> global dof
element_dofs[e, c]" plus what the operator kernels need per element: the values of the
local basis functions at reference points (barycentric coordinates for P1, ones for P0)
and, for P1, the surface curls of the local basis functions (constant on a flat
triangle), which turn the hypersingular operator into a single-layer-like integral
(the sparse maps of eq. 9 in the Bempp GPU paper).

Reference triangle: corners (0,0), (1,0), (0,1); local basis function c of P1 belongs to
corner c: phi_0 = 1 - s - t, phi_1 = s, phi_2 = t.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ...errors import MeshError, WavescatError
from ...surface import SurfaceMesh

_KINDS = ("P0", "P1")


@dataclass(frozen=True, eq=False)
class FunctionSpace:
    mesh: SurfaceMesh
    kind: str  # "P0" | "P1"
    element_dofs: np.ndarray  # (m, nloc) int64
    n_dofs: int

    @property
    def n_local(self) -> int:
        return self.element_dofs.shape[1]

    @property
    def normals(self) -> np.ndarray:
        return self.mesh.normals

    def basis_values(self, ref_points: np.ndarray) -> np.ndarray:
        """(nq, nloc) values of the local basis functions at reference points (nq, 2)."""
        ref_points = np.asarray(ref_points, dtype=np.float64).reshape(-1, 2)
        if self.kind == "P0":
            return np.ones((len(ref_points), 1))
        s, t = ref_points[:, 0], ref_points[:, 1]
        return np.stack([1.0 - s - t, s, t], axis=1)

    @cached_property
    def surface_gradients(self) -> np.ndarray:
        """(m, nloc, 3): tangential gradients of the local basis functions (zero for P0)."""
        m = self.mesh.n_triangles
        if self.kind == "P0":
            return np.zeros((m, 1, 3))
        jac = self.mesh.jacobians  # (m, 3, 2)
        metric_inv = np.linalg.inv(jac.transpose(0, 2, 1) @ jac)  # (m, 2, 2)
        ref_grad = np.array([[-1.0, -1.0], [1.0, 0.0], [0.0, 1.0]])  # (3 local, 2)
        # grad phi_c = J (J^T J)^{-1} ref_grad_c, by matmuls (a three-operand einsum took
        # most of a second at 2 kHz on the submarine, on every rank)
        return np.ascontiguousarray(((jac @ metric_inv) @ ref_grad.T).transpose(0, 2, 1))

    @cached_property
    def surface_curls(self) -> np.ndarray:
        """(m, nloc, 3): curl_Γ phi = n x grad_Γ phi of the local basis functions."""
        n, g = self.mesh.normals[:, None, :], self.surface_gradients
        curls = np.empty_like(g)
        for x, y, z in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):  # np.cross, without its broadcast copies
            curls[..., x] = n[..., y] * g[..., z] - n[..., z] * g[..., y]
        return curls

    @cached_property
    def dof_to_elements(self) -> sp.csr_matrix:
        """(n_dofs, m) sparse incidence: which elements carry each dof (the support)."""
        m, nloc = self.element_dofs.shape
        rows = self.element_dofs.ravel()
        cols = np.repeat(np.arange(m), nloc)
        a = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(self.n_dofs, m))
        a.data[:] = 1.0
        return a

    def local_to_global(self, element_values: np.ndarray) -> np.ndarray:
        """Sum element-local values (m, nloc) into global dofs (n_dofs,)."""
        return np.bincount(self.element_dofs.ravel(), weights=np.asarray(element_values).ravel(),
                           minlength=self.n_dofs)

    def interpolate(self, f) -> np.ndarray:
        """Coefficients of a function f(points (n, 3)) -> (n,): nodal values for P1,
        values at element centroids for P0 (use `project` for the L2 projection)."""
        if self.kind == "P1":
            nodes = np.zeros((self.n_dofs, 3))
            nodes[self.element_dofs.ravel()] = self.mesh.corners.reshape(-1, 3)
            return np.asarray(f(nodes))
        return np.asarray(f(self.mesh.centroids))


def _check_mesh(mesh) -> SurfaceMesh:
    if not isinstance(mesh, SurfaceMesh):
        raise WavescatError(f"mesh = {type(mesh).__name__}: a wavescat.surface.SurfaceMesh is needed")
    if mesh.n_triangles == 0:  # SurfaceMesh refuses this already; kept for duck-typed meshes
        raise MeshError("the mesh has no triangles")
    return mesh


def p0(mesh: SurfaceMesh) -> FunctionSpace:
    """Piecewise constants: one dof per triangle."""
    mesh = _check_mesh(mesh)
    m = mesh.n_triangles
    return FunctionSpace(mesh, "P0", np.arange(m, dtype=np.int64)[:, None], m)


def p1(mesh: SurfaceMesh) -> FunctionSpace:
    """Continuous piecewise linears: one dof per vertex used by a triangle."""
    mesh = _check_mesh(mesh)
    used, inv = np.unique(mesh.triangles, return_inverse=True)
    return FunctionSpace(mesh, "P1", inv.reshape(mesh.triangles.shape).astype(np.int64), len(used))


def function_space(mesh: SurfaceMesh, kind: str) -> FunctionSpace:
    if kind not in _KINDS:
        raise WavescatError(f"space kind = {kind!r}: must be one of {', '.join(_KINDS)}")
    return p0(mesh) if kind == "P0" else p1(mesh)


def same_mesh(a: FunctionSpace, b: FunctionSpace) -> bool:
    return a.mesh is b.mesh or (a.mesh.n_triangles == b.mesh.n_triangles
                                and a.mesh.fingerprint() == b.mesh.fingerprint())
