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

import time

import numba as nb
import numpy as np

from ...backend import sparse_module, to_host
from ..discretisation.quadrature import mapped_rule, triangle_rule
from .osrc import factorise, solve_real_spd  # noqa: F401 - solve_real_spd: re-exported


def plane_wave_data(space, k: float, directions, order: int = 6):
    """Galerkin data of unit plane waves exp(ik d.x): g[i, s] = <φ_i, p_inc_s> and
    h[i, s] = <φ_i, dp_inc_s/dn> for each direction d_s (rows of `directions`)."""
    ref, w = triangle_rule(order)
    mesh = space.mesh
    pts, wts = mapped_rule(mesh, ref, w)  # (m, nq, 3), (m, nq)
    d = np.ascontiguousarray(np.asarray(directions, float).reshape(-1, 3))
    # weight * basis value of each local function at each point: (m, nloc, nq)
    weighted = np.ascontiguousarray(np.einsum(
        "mq,qc->mcq", wts, space.basis_values(np.asarray(ref, float))))
    g = np.zeros((len(d), space.n_dofs), dtype=complex)
    h = np.zeros_like(g)
    _plane_wave_moments(np.ascontiguousarray(pts), weighted,
                        np.ascontiguousarray(space.element_dofs, dtype=np.int64),
                        np.ascontiguousarray(mesh.normals, dtype=float), d, float(k), g, h)
    return g.T, h.T


@nb.njit(parallel=True, cache=True)
def _plane_wave_moments(pts, weighted, dofs, normals, d, k, g, h):
    """g[s, i] = Σ_e Σ_c:dofs[e,c]=i Σ_q weighted[e, c, q] exp(ik d_s . pts[e, q]) and h the
    same times ik d_s . n_e (flat triangles: constant normals). One direction per thread, so
    no two threads add into one entry, and no per-element arrays of every direction (a
    sweep's hundreds of directions made those and NumPy's complex exp the bottleneck)."""
    for s in nb.prange(d.shape[0]):
        for e in range(pts.shape[0]):
            dn = 1j * k * (d[s, 0] * normals[e, 0] + d[s, 1] * normals[e, 1] + d[s, 2] * normals[e, 2])
            for q in range(pts.shape[1]):
                phase = k * (d[s, 0] * pts[e, q, 0] + d[s, 1] * pts[e, q, 1] + d[s, 2] * pts[e, q, 2])
                wave = complex(np.cos(phase), np.sin(phase))
                for c in range(weighted.shape[1]):
                    v = weighted[e, c, q] * wave
                    g[s, dofs[e, c]] += v
                    h[s, dofs[e, c]] += v * dn


# Blocks of at least this many columns get their sparse (mass and OSRC) solves on the GPU:
# the factors' one-off device copy costs more than a narrower block's host solves would,
# and less than a wider one saves (bench/README.md, "The submarine's 361-aspect sweep on one
# GPU", measured with bench_sweep.py --device-solve-columns).
DEVICE_SOLVE_COLUMNS = 8


class StrongForm:
    """What the P1 strong-form systems share: the mass matrix M, factorised once, and the
    application of boundary operators (dense arrays or H-matrices) on the backend `xp`;
    `operators` (name=operator) become attributes; `mass_lu`: M's factorisation if made
    already (an OSRC map's `mass_lu`)."""

    def __init__(self, mass, xp=np, mass_lu=None, **operators):
        vars(self).update(operators)
        self.mass = mass.tocsc()
        self.xp = xp
        # real SPD: real and imaginary parts together
        self._mass_lu = factorise(self.mass) if mass_lu is None else mass_lu
        self.n_dofs = self.mass.shape[0]
        # seconds in the boundary operators' products (H-matrix or dense, with their reductions
        # over the ranks), beside the products' whole time the driver measures: the rest is
        # the sparse solves (records.py, bench_ranks.py)
        self.operator_seconds = 0.0

    def _apply_operator(self, op, x):
        if isinstance(op, np.ndarray):  # a host operator takes host vectors (H-matrices either)
            x = to_host(x)
        dtype = getattr(op, "dtype", None)
        return op @ (x if dtype is None or dtype == x.dtype else x.astype(dtype))

    def _applied_on_host(self, op, x):
        return to_host(self._apply_operator(op, x))

    def _solves_on_device(self, x) -> bool:
        """Whether the sparse solves of a product on x run on the device: for wide blocks
        of a GPU solve (DEVICE_SOLVE_COLUMNS), else on the host."""
        return self.xp is not np and x.ndim == 2 and x.shape[1] >= DEVICE_SOLVE_COLUMNS

    def _applied(self, op, x):
        """op x (a weak form) where the product's sparse solves run: a wide device block
        never leaves the device."""
        t0 = time.perf_counter()
        y = self._apply_operator(op, x)
        y = y if self._solves_on_device(x) else to_host(y)  # on the host: the device has finished
        self.operator_seconds += time.perf_counter() - t0
        return y

    def _mass_times(self, x):
        """M x where the product's sparse solves run."""
        if not self._solves_on_device(x):
            return self.mass @ to_host(x)
        if getattr(self, "_device_mass", None) is None:
            self._device_mass = sparse_module(x).csr_matrix(self.mass.astype(x.dtype))
        return self._device_mass @ x

    def solve_mass(self, y):
        return solve_real_spd(self._mass_lu, y)

    def solution(self, z):
        """The formulation's unknown from GMRES's solution z of `matvec`: z itself here; a
        right-preconditioned system (transmission.MullerTransmission) maps it back."""
        return z

    def _back(self, x, host):
        return self.xp.asarray(host.astype(x.dtype, copy=False))

    def _to_solve_side(self, x, *weak):
        """The weak-form blocks `weak` (host arrays) where the sparse solves of a product on x
        run: on the device for wide blocks of a GPU solve, else where they are."""
        if not self._solves_on_device(x):
            return weak
        return tuple(self.xp.asarray(w) for w in weak)


class OsrcBurtonMiller(StrongForm):
    """The strong-form system A p = f above, for several right-hand sides at once
    (formulations.SoundHardBurtonMiller builds it for the solver)."""

    def __init__(self, double_layer, hypersingular, mass, ntd, xp=np):
        super().__init__(mass, xp, ntd.mass_lu, double_layer=double_layer, hypersingular=hypersingular,
                         ntd=ntd)

    def weak_traces(self, x):
        """The weak forms of the operators of the exterior Dirichlet and Neumann equations
        applied to x, where the product's sparse solves run: here K x and W x."""
        return self._applied(self.double_layer, x), self._applied(self.hypersingular, x)

    def matvec(self, x):
        """A x for x of shape (n, r) on the backend."""
        kx, wx = self.weak_traces(x)
        return 0.5 * x - self._back(x, self._solved(kx, wx))

    def rhs(self, dirichlet_weak, neumann_weak):
        """f = M^{-1} g - Ñ M^{-1} h from the weak Dirichlet and Neumann data (host arrays)."""
        g, h = (np.asarray(w).reshape(self.n_dofs, -1) for w in (dirichlet_weak, neumann_weak))
        g, h = self._to_solve_side(g, g, h)
        return self.xp.asarray(self._solved(g, -h))

    def _solved(self, dirichlet, neumann):
        """M^-1 dirichlet + Ñ neumann of weak data: the mass solve rides with the NtD map's
        own (one more solve on the host's threads, in the same launch on the device, one
        rank's turn on several)."""
        return self.ntd.apply_to_weak_plus(neumann, self._mass_lu,
                                           dirichlet.astype(np.complex128, copy=False))


class OsrcImpedanceBurtonMiller(OsrcBurtonMiller):
    """The impedance body, dp/dn = -i k beta p: with that Neumann trace in the representation
    p = p_inc + DL p - SL dp/dn the exterior traces become
        (1/2 - K - ik beta V) p = p_inc,   (W - ik beta (1/2 + K')) p = dp_inc/dn,
    combined with the same OSRC NtD coupling as the rigid body (beta = 0). On a sphere, with
    the exact NtD map N, the combination is 1 + ik beta N, close to (1 + beta) on the
    propagating modes: as well conditioned as the rigid system for the admittances of
    coatings, so the rigid preconditioner is kept."""

    def __init__(self, double_layer, hypersingular, single_layer, adjoint_double_layer, mass,
                 ntd, k: float, admittance: complex, xp=np):
        super().__init__(double_layer, hypersingular, mass, ntd, xp)
        self.single_layer = single_layer
        self.adjoint_double_layer = adjoint_double_layer
        self.ikb = 1j * k * complex(admittance)

    def weak_traces(self, x):
        kx, wx = super().weak_traces(x)
        vx = self._applied(self.single_layer, x)
        kpx = self._applied(self.adjoint_double_layer, x)
        mx = self._mass_times(x)
        return kx + self.ikb * vx, wx - self.ikb * (0.5 * mx + kpx)


class OsrcDirichletBurtonMiller(StrongForm):
    """The sound-soft body, p_tot = 0: unknown the Neumann trace λ = dp_tot/dn (P1), with
    p_s = -SL λ. The exterior traces give V λ = p_inc and (1/2 + K') λ = dp_inc/dn; the
    combination with the OSRC DtN map Λ as coupling operator,
        (1/2 + K' - Λ V) λ = dp_inc/dn - Λ p_inc,
    is the identity on a sphere for the exact DtN map (from the Wronskian of j_l, h_l) and
    has no spurious resonances. Strong P1 form, one mass solve per product:
        A λ = 1/2 λ + M^{-1} (K' λ - Λ_w V λ),   f = M^{-1} (h - Λ_w g),
    with Λ_w = OsrcDtN.weak_of_weak (weak data in, weak data out)."""

    def __init__(self, single_layer, adjoint_double_layer, mass, dtn, xp=np):
        super().__init__(mass, xp, dtn.mass_lu, single_layer=single_layer,
                         adjoint_double_layer=adjoint_double_layer, dtn=dtn)

    def matvec(self, x):
        vx, kpx = self._applied(self.single_layer, x), self._applied(self.adjoint_double_layer, x)
        return 0.5 * x + self._back(x, self.solve_mass(kpx - self.dtn.weak_of_weak(vx)))

    def rhs(self, dirichlet_weak, neumann_weak):
        g, h = (np.asarray(w).reshape(self.n_dofs, -1) for w in (dirichlet_weak, neumann_weak))
        g, h = self._to_solve_side(g, g, h)
        return self.xp.asarray(self.solve_mass(h - self.dtn.weak_of_weak(g)))
