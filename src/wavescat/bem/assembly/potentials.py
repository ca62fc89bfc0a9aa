"""Layer potentials at points off the surface and their far-field operators.

Conventions (docs/conventions.md), G(x, y) = exp(ik|x-y|)/(4 pi |x-y|) (green.py):
    SL u(x) = int G(x,y) u(y) ds_y            DL u(x) = int dG/dn_y(x,y) u(y) ds_y
    SL_inf u(xhat) = 1/(4 pi) int exp(-ik xhat.y) u(y) ds_y
    DL_inf u(xhat) = 1/(4 pi) int (-ik xhat.n_y) exp(-ik xhat.y) u(y) ds_y
Each function returns the dense (npoints, n_dofs) matrix P with potential = P @ coefficients.
The surface integral uses the regular Gauss rule on every triangle (points should be at
least about one element size away from the surface; raise `order` for closer points).
Written once against the backend's array module: kernel values at all (point, quadrature
point) pairs of a chunk of points, reduced to dofs through the sparse map
"quadrature point -> dof" (weights * basis values).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...backend import resolve
from ...errors import WavescatError
from ..discretisation import quadrature
from ..discretisation.spaces import FunctionSpace
from ..kernels.green import green_array, radial_array
from .hmatrix import host_blocks

_CHUNK_ENTRIES = 2**24  # kernel values per chunk of points
_BYTES_PER_ENTRY = 96  # their working arrays: x - y (3 doubles), r, G, dG/dr, the sums


def _quadrature_map(space: FunctionSpace, order):
    """Quadrature points (m*nq, 3), normals at them, and the sparse (m*nq, n_dofs) map."""
    if order is None:
        order = quadrature.QuadratureOrders().regular
    ref, w = quadrature.triangle_rule(order)
    pts, wts = quadrature.mapped_rule(space.mesh, ref, w)
    m, nq = pts.shape[:2]
    phi = space.basis_values(np.asarray(ref, float))  # (nq, nloc)
    vals = wts[:, :, None] * phi[None]  # (m, nq, nloc)
    rows = np.broadcast_to(np.arange(m * nq).reshape(m, nq, 1), vals.shape)
    cols = np.broadcast_to(space.element_dofs[:, None, :], vals.shape)
    smap = sp.csr_matrix((vals.ravel(), (rows.ravel(), cols.ravel())), shape=(m * nq, space.n_dofs))
    nrm = np.repeat(space.mesh.normals, nq, axis=0)
    return pts.reshape(-1, 3), nrm, smap


def _checked(space, points, name):
    if not isinstance(space, FunctionSpace):
        raise WavescatError(
            f"space = {type(space).__name__}: a wavescat.bem.discretisation.spaces space is needed"
        )
    points = np.asarray(points, dtype=np.float64)
    if points.ndim != 2 or points.shape[1] != 3:
        raise WavescatError(f"{name} must have shape (n, 3), got {points.shape}")
    return points


def _apply(space, points, k, order, backend, kernel):
    be = resolve(backend)
    xp = be.xp
    y, ny, smap = _quadrature_map(space, order)
    if be.is_gpu:
        import cupyx.scipy.sparse as csp  # noqa: PLC0415 - CuPy only through the backend

        smap = csp.csr_matrix(smap)
    if be.is_gpu:  # the operators' blocks may have filled the device (hmatrix/host_blocks.py)
        host_blocks.make_room_here(be, len(points) * space.n_dofs * 16
                                   + _CHUNK_ENTRIES * _BYTES_PER_ENTRY + y.nbytes * 3)
    y, ny = xp.asarray(y), xp.asarray(ny)
    out = xp.empty((len(points), space.n_dofs), dtype=np.complex128)
    step = max(1, _CHUNK_ENTRIES // len(y))
    for s in range(0, len(points), step):  # chunks of points, bounded memory
        x = xp.asarray(points[s:s + step])
        vals = kernel(xp, x, y, ny, complex(k))  # (chunk, m*nq)
        out[s:s + step] = (smap.T @ vals.T).T
    return out


def _green(xp, x, y, k):
    d = x[:, None, :] - y[None, :, :]  # x - y, the convention of green.py
    return (d, *green_array(xp, d, k))


def single_layer(space, points, k, order=None, backend=None):
    """(npoints, n_dofs): SL u(x) = int G(x,y) u(y) ds_y at points off the surface."""
    points = _checked(space, points, "points")
    return _apply(space, points, k, order, backend, lambda xp, x, y, ny, kk: _green(xp, x, y, kk)[2])


def double_layer(space, points, k, order=None, backend=None):
    """(npoints, n_dofs): DL u(x) = int dG/dn_y(x,y) u(y) ds_y at points off the surface."""
    points = _checked(space, points, "points")

    def kernel(xp, x, y, ny, kk):
        d, r, g = _green(xp, x, y, kk)
        return radial_array(g, r, kk) * (-(d * ny[None]).sum(axis=2))  # dG/dn_y: (y - x).n_y

    return _apply(space, points, k, order, backend, kernel)


def _far(xp, x, y, kk):
    return xp.exp(-1j * kk * (x @ y.T)) / (4 * np.pi)


def single_layer_far_field(space, directions, k, order=None, backend=None):
    """(ndirections, n_dofs): SL_inf u(xhat) = 1/(4 pi) int exp(-ik xhat.y) u(y) ds_y."""
    directions = _checked(space, directions, "directions")
    return _apply(space, directions, k, order, backend, lambda xp, x, y, ny, kk: _far(xp, x, y, kk))


def double_layer_far_field(space, directions, k, order=None, backend=None):
    """(ndirections, n_dofs): DL_inf u(xhat) = 1/(4 pi) int (-ik xhat.n_y) exp(-ik xhat.y) u ds_y."""
    directions = _checked(space, directions, "directions")
    return _apply(space, directions, k, order, backend,
                  lambda xp, x, y, ny, kk: _far(xp, x, y, kk) * (-1j * kk) * (x @ ny.T))
