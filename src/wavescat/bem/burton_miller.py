"""OSRC-preconditioned Burton-Miller formulation for a sound-hard body (eq. 11 of the
Bempp GPU paper; Antoine & Darbas 2007; Betcke et al. 2017).

The total surface pressure p of a rigid body satisfies, from p = p_inc + DL p outside,
    (1/2 - K) p = p_inc                  (exterior Dirichlet trace)
    W p = dp_inc/dn                      (exterior Neumann trace, dp/dn = 0)
and the Burton-Miller combination with the OSRC NtD map N ≈ Λ^{-1} as coupling operator,
    (1/2 - K - N W) p = p_inc - N dp_inc/dn,
has no spurious resonances and is close to the identity at high frequency (N W ≈ -1/2 on
the propagating modes), so GMRES iterations hardly grow with k. In P1 Galerkin form each
operator's weak form is mapped back to coefficients with the mass matrix M (the strong form
Bempp's GMRES uses), which also preconditions the system:
    A p = 1/2 p - M^{-1} K p - Ñ M^{-1} W p,   f = M^{-1} g - Ñ M^{-1} h,
with g_i = <φ_i, p_inc>, h_i = <φ_i, dp_inc/dn> and Ñ = M^{-1} N_weak (OsrcNtD.apply).
K and W are any operators supporting `op @ X` for (n, r) arrays of the backend (dense
arrays or H-matrices); the sparse parts run on the host with SciPy.
"""
from __future__ import annotations

import numpy as np

from ..backend import to_host
from .osrc import factorise


def plane_wave_data(space, k: float, directions, order: int = 6):
    """Galerkin data of unit plane waves exp(ik d.x): g[i, s] = <φ_i, p_inc_s> and
    h[i, s] = <φ_i, dp_inc_s/dn> for each direction d_s (rows of `directions`)."""
    from .quadrature import triangle_rule  # noqa: PLC0415

    ref, w = triangle_rule(order)
    ref, w = np.asarray(ref, float), np.asarray(w, float)
    mesh = space.mesh
    c = mesh.corners
    pts = (c[:, None, 0] + ref[None, :, 0, None] * (c[:, None, 1] - c[:, None, 0])
           + ref[None, :, 1, None] * (c[:, None, 2] - c[:, None, 0]))  # (m, nq, 3)
    d = np.asarray(directions, float).reshape(-1, 3)
    wave = np.exp(1j * k * np.einsum("mqx,sx->mqs", pts, d))  # (m, nq, ns)
    weights = mesh.areas[:, None] * (w / w.sum())[None, :]  # (m, nq)
    phi = space.basis_values(ref)  # (nq, nloc)
    local = np.einsum("mq,qc,mqs->mcs", weights, phi, wave)  # (m, nloc, ns)
    dn = 1j * k * (mesh.normals @ d.T)  # (m, ns): flat triangles have constant normals
    g = _scatter(space, local)
    h = _scatter(space, local * dn[:, None, :])
    return g, h


def _scatter(space, local):
    ns = local.shape[-1]
    out = np.zeros((space.n_dofs, ns), dtype=complex)
    np.add.at(out, space.element_dofs.ravel(), local.reshape(-1, ns))
    return out


class OsrcBurtonMiller:
    """The strong-form system A p = f above, for several right-hand sides at once
    (formulations.SoundHardBurtonMiller builds it for the solver)."""

    def __init__(self, double_layer, hypersingular, mass, ntd, xp=np):
        self.double_layer = double_layer
        self.hypersingular = hypersingular
        self.mass = mass.tocsc()
        self.ntd = ntd
        self.xp = xp
        self._mass_lu = factorise(self.mass)  # real SPD: real and imaginary parts together
        self.n_dofs = self.mass.shape[0]

    def _apply_operator(self, op, x):
        if not isinstance(op, type(x)):  # an H-matrix: NumPy in and out
            x = to_host(x)
        dtype = getattr(op, "dtype", None)
        return op @ (x if dtype is None or dtype == x.dtype else x.astype(dtype))

    def solve_mass(self, y):
        y = np.asarray(y)
        r = y.shape[1]
        both = self._mass_lu.solve(np.ascontiguousarray(np.hstack([y.real, y.imag]), dtype=float))
        return both[:, :r] + 1j * both[:, r:]

    def matvec(self, x):
        """A x for x of shape (n, r) on the backend."""
        kx = to_host(self._apply_operator(self.double_layer, x))
        wx = to_host(self._apply_operator(self.hypersingular, x))
        host = self.solve_mass(kx) + self.ntd.apply_to_weak(wx)
        return 0.5 * x - self.xp.asarray(host.astype(x.dtype, copy=False))

    def rhs(self, dirichlet_weak, neumann_weak):
        """f = M^{-1} g - Ñ M^{-1} h from the weak Dirichlet and Neumann data (host arrays)."""
        g = self.solve_mass(np.asarray(dirichlet_weak).reshape(self.n_dofs, -1))
        h = np.asarray(neumann_weak).reshape(self.n_dofs, -1)
        return self.xp.asarray(g - self.ntd.apply_to_weak(h))
