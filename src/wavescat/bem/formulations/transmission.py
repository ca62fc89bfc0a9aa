"""The Müller transmission system of a homogeneous fluid body (formulations.FluidMuller).

Exterior wavenumber k, interior k1 = k / h, density ratio g; unknowns the scattered exterior
traces u = p_s and w = (1/k) dp_s/dn, both in P1. With V, K, K', W the boundary operators at
k (index 0) and k1 (index 1), the exterior Calderón equations of the total field and the
interior ones of the transmitted field (p_1 = p, dp_1/dn = g dp/dn), combined as
g x exterior + interior (Dirichlet rows) and exterior - interior (Neumann rows), scaled by
a = 2 / (1 + g), read in strong P1 form (M the mass matrix):
    u + a M^{-1} [(K1 - g K0) u + g k (V0 - V1) w]            = f_D
    w + a M^{-1} [(W0 - W1) u / k + (K0' - g K1') w]          = f_N
identity plus a compact operator: the V and W parts appear only as differences between the
two wavenumbers, whose kernels are smooth. The data f are those of the total-field equations
minus the operator applied to the incident traces, rewritten with the Calderón identities of
the incident field at k (its interior traces satisfy (1/2 + K0) p_inc = V0 dp_inc/dn and
W0 p_inc = (1/2 - K0') dp_inc/dn) so that every term is proportional to a contrast:
    f_D = a M^{-1} [(K0 - K1) p_inc - (V0 - V1) v_inc + (g - 1) V1 v_inc]
    f_N = a M^{-1} [-(W0 - W1) p_inc - (K0' - K1') v_inc + (g - 1)(K1' - 1/2) v_inc] / k
(p_inc, v_inc the P1 L2 projections of the incident traces). A weakly scattering body thus
gets small data and a small answer computed from operator differences, without the
cancellation that total-field unknowns would suffer in the far field.
"""
from __future__ import annotations

import numpy as np

from .burton_miller import StrongForm
from .muller_preconditioner import BlockTriangular, HierarchicalBlockTriangular


def adjoint_of(double_layer):
    """K' from K (a dense array or an H-matrix): <φ_i, K' φ_j> = <K φ_i, φ_j> with trial =
    test, so K' = K^T, and the formulations that need both assemble only K."""
    return double_layer.T


class MullerTransmission(StrongForm):
    """The system above for several right-hand sides at once; `operators` maps V0, K0, Kp0,
    W0, V1, K1, Kp1, W1 to the assembled operators (dense or H-matrix).

    `preconditioner` (a name of muller_preconditioner.PRECONDITIONERS other than auto):
    with block_triangular (dense factors) or hodlr (HODLR inverses, which need the
    surface's vertices `points`, the P1 dofs), `matvec` is the right-preconditioned product
    A P^{-1} z (four operator products, bem/formulations/muller_preconditioner.py) and
    `solution(z) = P^{-1} z` turns GMRES's answer into the traces (u, w); the residuals
    stay those of A x = f."""

    def __init__(self, operators: dict, mass, k: float, density_ratio: float, xp=np,
                 preconditioner: str = "none", points=None):
        super().__init__(mass, xp)
        self.ops = dict(operators)
        for i in "01":
            if f"Kp{i}" not in self.ops:
                self.ops[f"Kp{i}"] = adjoint_of(self.ops[f"K{i}"])
        self.k = float(k)
        self.g = float(density_ratio)
        self.scale = 2.0 / (1.0 + self.g)
        self.preconditioner = None
        if preconditioner == "block_triangular":
            self.preconditioner = BlockTriangular.for_system(self)
        elif preconditioner == "hodlr":
            self.preconditioner = HierarchicalBlockTriangular.for_system(self, points=points)
        elif preconditioner != "none":
            raise ValueError(f"unknown Müller preconditioner {preconditioner!r}")

    def solution(self, z):
        """The traces (u, w) from GMRES's unknowns: P^{-1} z, or z without preconditioner
        (every caller of `gmres(system.matvec, ...)` maps its answer so)."""
        return z if self.preconditioner is None else self.preconditioner.solve(z)

    def _apply(self, name, x):
        return self._applied_on_host(self.ops[name], x)

    def _difference(self, name, x):
        return self._apply(f"{name}0", x) - self._apply(f"{name}1", x)

    def matvec(self, x):
        """A x for x of shape (2n, r) on the backend: rows u then w (A P^{-1} x with a
        preconditioner: with the exact block triangle, x plus the Dirichlet rows' coupling
        A_DN applied to y_N; with an approximate one, A applied to P^{-1} x)."""
        if self.preconditioner is None:
            return self.unpreconditioned(x)
        if self.preconditioner.exact:
            return self._preconditioned(x)
        return self.unpreconditioned(self.xp.asarray(self.preconditioner.solve(x)))

    def _preconditioned(self, z):
        n = self.n_dofs
        coupling = (self.scale * self.g * self.k) * self.solve_mass(
            self._difference("V", self.preconditioner.solve(z)[n:]))
        out = z.copy()
        out[:n] += self._back(z, coupling)
        return out

    def unpreconditioned(self, x):
        """A x, whatever the preconditioner."""
        n, g, k = self.n_dofs, self.g, self.k
        u, w = x[:n], x[n:]
        k0u, k1u = self._apply("K0", u), self._apply("K1", u)
        dirichlet = (k1u - g * k0u) + (g * k) * self._difference("V", w)
        neumann = self._difference("W", u) / k + self._apply("Kp0", w) - g * self._apply("Kp1", w)
        return x + self._back(x, self._strong(dirichlet, neumann))

    def rhs(self, dirichlet_weak, neumann_weak):
        """f from the weak incident data g_i = <φ_i, p_inc>, h_i = <φ_i, dp_inc/dn> (host)."""
        n, g, k = self.n_dofs, self.g, self.k
        gw = np.asarray(dirichlet_weak).reshape(n, -1)
        hw = np.asarray(neumann_weak).reshape(n, -1)
        p_inc, v_inc = self.solve_mass(gw), self.solve_mass(hw)
        dev_p, dev_v = self.xp.asarray(p_inc), self.xp.asarray(v_inc)
        dirichlet = (self._difference("K", dev_p) - self._difference("V", dev_v)
                     + (g - 1.0) * self._apply("V1", dev_v))
        neumann = (-self._difference("W", dev_p) - self._difference("Kp", dev_v)
                   + (g - 1.0) * (self._apply("Kp1", dev_v) - 0.5 * hw))
        return self.xp.asarray(self._strong(dirichlet, neumann / k))

    def _strong(self, dirichlet, neumann):
        """a M^{-1} applied to both row blocks (n, r) in one solve, stacked (2n, r)."""
        r = dirichlet.shape[1]
        both = self.solve_mass(np.hstack([dirichlet, neumann]))
        return self.scale * np.vstack([both[:, :r], both[:, r:]])


def stacked(xp, dirichlet_part, neumann_part):
    """[P_D, P_N] for a potential or far field of (u, w): P_D u + P_N w."""
    return xp.concatenate([dirichlet_part, neumann_part], axis=1)

