"""Nested bodies: a multi-domain transmission system with one pair of traces per interface.

A case's body tree (config `inside`, geometry/bodies.py) cuts space into regions: the
medium outside (region 0, density ratio 1, wavenumber k) and one region per fluid body,
the part of that body outside the bodies it holds (density ratio g_j, wavenumber
k_j = k (1 + i delta_j) / h_j with delta_j from its absorption). Every body's surface m is
an interface between its outer region o(m) (the region of its parent, or the medium) and
its inner region i(m) (its own), or, for a rigid or pressure-release body, a core with no
region inside. The normal n_m points out of the body.

Unknowns on every surface (P1, the union mesh's vertex values), continuous across it:
    u_m = p - p_inc,     w_m = ((1/g) dp/dn - dp_inc/dn) / k,
the scattered traces on the outer surface, as in the single-body Müller system
(transmission.py), which this system reduces to for one fluid body.

Region j's field has the representation p = Σ_m' σ_jm' (SL_m' dp/dn - DL_m' p) (plus
p_inc for region 0) with σ_jm' = +1 where j is inside m', -1 where it is outside, 0 where
m' does not bound j. Its Calderón equations on a bounding surface m, with the k_j
operators V, K, K' = K^T, W on the union of j's surfaces, dp/dn = g_j (k w + dp_inc/dn)
and p = u + p_inc, read
    ½ u_m + D_j = d_j,   D_j = K (σ u) - g_j k V (σ w)                      (Dirichlet)
    ½ g_j k w_m + N_j = n_j,   N_j = -(g_j k K' (σ w) + W (σ u))            (Neumann)
with data from the incident traces P, H (P1 projections) rewritten by the incident field's
own identities at k (½ P = Σσ (V0 H - K0 P), ½ H = Σσ (K0' H + W0 P) on any region's
boundary) so that every term is proportional to a contrast:
    d_0 = n_0 = 0,
    d_j = (g_j V - V0)(σ H) - (K - K0)(σ P),   n_j = g_j (K' - K0')(σ H) + (W - g_j W0)(σ P).
A fluid interface combines its two regions as Müller does, g_o x (inner) + g_i x (outer)
for the Dirichlet rows and their sum for the Neumann rows, scaled to the identity
(a = 2 / (g_o + g_i)): the single layers and hypersingular operators of one surface then
enter only as differences between two wavenumbers, whose kernels are smooth, so the
system is identity plus compact, as for one body. A rigid core (dp/dn = 0, so w = -H / k
is known) keeps u with the outer region's Burton-Miller row (Dirichlet - N Neumann, N the
OSRC NtD map at k_o); a pressure-release core (p = 0, u = -P known) keeps w with
(Neumann - Λ Dirichlet), Λ the OSRC DtN map: neither has spurious resonances. Known
traces are unknowns with identity rows, so one matvec serves every kind.

The scattered field outside is p_s = DL u - k SL w over the outer surface alone.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...backend import to_host
from .burton_miller import StrongForm, solve_real_spd
from .osrc import factorise


@dataclass(frozen=True)
class Interface:
    """Surface `index` of the body tree: `outer` is the region outside it, `inner` the
    region inside (None for a core), `kind` fluid, rigid or pressure_release."""
    index: int
    outer: int
    inner: int | None
    kind: str


@dataclass(frozen=True)
class Region:
    """Region `index` (0: the medium): density ratio g and wavenumber factor k_j / k."""
    index: int
    density_ratio: float
    wavenumber_factor: complex


def interfaces_and_regions(bodies) -> tuple[list[Interface], list[Region]]:
    """The interfaces and regions of a body tree: `bodies` in surface order, each
    (parent surface or -1, kind, density ratio or None, wavenumber factor or None)."""
    regions = [Region(0, 1.0, 1.0)]
    region_of_surface = {}
    interfaces = []
    for index, (parent, kind, g, factor) in enumerate(bodies):
        outer = 0 if parent < 0 else region_of_surface[parent]
        inner = None
        if kind == "fluid":
            inner = len(regions)
            regions.append(Region(inner, float(g), complex(factor)))
            region_of_surface[index] = inner
        interfaces.append(Interface(index, outer, inner, kind))
    return interfaces, regions


def region_signs(interfaces, regions, surface_of_dof) -> np.ndarray:
    """(n_regions, n_dofs) σ_jm of each dof's surface m: +1 where region j is inside m,
    -1 outside, 0 where m does not bound j."""
    sigma = np.zeros((len(regions), len(surface_of_dof)))
    for face in interfaces:
        on = surface_of_dof == face.index
        sigma[face.outer, on] = -1.0
        if face.inner is not None:
            sigma[face.inner, on] = 1.0
    return sigma


def region_surfaces(interfaces, region: int) -> list[int]:
    """The surfaces bounding a region (every surface for region 0, whose operators also
    give the incident field's identities on every region's boundary)."""
    if region == 0:
        return [face.index for face in interfaces]
    return [f.index for f in interfaces if region in (f.inner, f.outer)]


class MultiDomainTransmission(StrongForm):
    """The system above for several right-hand sides at once.

    `operators[j]` = {"V", "K", "W"} of region j (dense or H-matrix, K' = K^T) on the P1
    space of the surfaces `dofs[j]` (global dof indices, in that space's order; region 0 on
    every surface); `couplings[m]` the OSRC map of core surface m (NtD for rigid, DtN for
    pressure-release) on its own P1 space, whose dofs are `core_dofs[m]`."""

    def __init__(self, interfaces, regions, operators, dofs, surface_of_dof, mass, k,
                 couplings=None, core_dofs=None, xp=np):
        super().__init__(mass, xp)
        self.interfaces, self.regions = interfaces, regions
        self.ops = operators
        self.dofs = [np.asarray(d) for d in dofs]
        self.k = float(k)
        self.couplings = couplings or {}
        self.core_dofs = core_dofs or {}
        self.sigma = region_signs(interfaces, regions, surface_of_dof)
        self.surface_of_dof = surface_of_dof
        # {surface: (dofs, BlockTriangular)}: right preconditioners of fluid interfaces
        self.preconditioners = {}
        n = self.n_dofs
        # per dof: the combination weights of the regions (Dirichlet rows), the row scale
        self.weight = np.zeros((len(regions), n))
        self.scale = np.ones(n)
        self.fluid = np.zeros(n, bool)
        for face in interfaces:
            on = surface_of_dof == face.index
            g_o = regions[face.outer].density_ratio
            if face.kind == "fluid":
                g_i = regions[face.inner].density_ratio
                self.weight[face.inner, on], self.weight[face.outer, on] = g_o, g_i
                self.scale[on] = 2.0 / (g_o + g_i)
                self.fluid[on] = True
            else:
                self.weight[face.outer, on] = 1.0
                self.scale[on] = 2.0 if face.kind == "rigid" else 2.0 / (g_o * self.k)

    def _op(self, j, name, x):
        op = self.ops[j]["K"].T if name == "Kp" else self.ops[j][name]
        return self._applied_on_host(op, x)

    def _region_traces(self, j, su, sw):
        """(D_j, N_j) weak, on region j's dofs, for σ-signed u, w there (host)."""
        g, k = self.regions[j].density_ratio, self.k
        dev_u, dev_w = self.xp.asarray(su), self.xp.asarray(sw)
        d = self._op(j, "K", dev_u) - (g * k) * self._op(j, "V", dev_w)
        nn = -((g * k) * self._op(j, "Kp", dev_w) + self._op(j, "W", dev_u))
        return d, nn

    def _weak_rows(self, u, w):
        """The region sums of every dof's Dirichlet and Neumann equations (weak, host):
        Σ_j weight_j D_j and Σ_j N_j, and the outer region's D, N alone (cores)."""
        n, r = u.shape
        dsum, nsum = np.zeros((n, r), complex), np.zeros((n, r), complex)
        for j, idx in enumerate(self.dofs):
            s = self.sigma[j, idx][:, None]
            if not s.any():
                continue
            d, nn = self._region_traces(j, s * u[idx], s * w[idx])
            bounded = s[:, 0] != 0
            rows = idx[bounded]
            dsum[rows] += self.weight[j, rows][:, None] * d[bounded]
            nsum[rows] += nn[bounded]
        return dsum, nsum

    def solution(self, z):
        """The traces from GMRES's unknowns: P^-1 z on each preconditioned interface."""
        if not self.preconditioners:
            return z
        n = self.n_dofs
        out = to_host(z).reshape(2 * n, -1).copy()
        for idx, pre in self.preconditioners.values():
            rows = np.concatenate([idx, n + idx])
            out[rows] = to_host(pre.solve(out[rows]))
        return self._back(z, out.reshape(z.shape))

    def matvec(self, x):
        """A P^-1 x (P the interface preconditioners, if any) for x (2n, r) on the backend."""
        return self.unpreconditioned(self.solution(x)) if self.preconditioners else \
            self.unpreconditioned(x)

    def unpreconditioned(self, x):
        """A x for x of shape (2n, r) on the backend: rows u then w."""
        n = self.n_dofs
        host = to_host(x).reshape(2 * n, -1)
        u, w = host[:n], host[n:]
        dsum, nsum = self._weak_rows(u, w)
        mu, mw = self.mass @ u, self.mass @ w
        return self._back(x, self._rows(u, w, dsum, nsum, mu, mw).reshape(x.shape))

    def _rows(self, u, w, dsum, nsum, mu, mw):
        """Strong rows from the weak region sums: fluid interfaces u + a M^-1 Σ g D,
        w + a/k M^-1 Σ N; cores their Burton-Miller rows; known traces identity."""
        k, a = self.k, self.scale[:, None]
        out_u = u + a * self.solve_mass(dsum)
        out_w = w + (a / k) * self.solve_mass(nsum)
        for face in self.interfaces:
            if face.kind == "fluid":
                continue
            idx = self.core_dofs[face.index]
            g_o = self.regions[face.outer].density_ratio
            dirichlet = 0.5 * mu[idx] + dsum[idx]  # weak, γ0 units
            neumann = 0.5 * g_o * k * mw[idx] + nsum[idx]  # weak, dp/dn units
            out_u[idx], out_w[idx] = self._core_rows(face, dirichlet, neumann, u[idx], w[idx])
        return np.vstack([out_u, out_w])

    def _core_rows(self, face, dirichlet, neumann, u, w):
        """(u rows, w rows) of a core from its weak Dirichlet and Neumann equations."""
        coupling, mass_solve = self.couplings[face.index], self._core_mass_solve(face.index)
        a = self.scale[self.core_dofs[face.index]][:, None]
        if face.kind == "rigid":  # u: 2 (Dirichlet - N Neumann); w known
            return a * (mass_solve(dirichlet) - coupling.apply_to_weak(neumann)), w
        # pressure-release: w: 2/(g k) (Neumann - Λ Dirichlet); u known
        return u, a * mass_solve(neumann - coupling.weak_of_weak(dirichlet))

    def _core_mass_solve(self, surface):
        """M^-1 on a core surface's dofs (the union's mass matrix is block diagonal)."""
        lus = self.__dict__.setdefault("_core_lus", {})
        if surface not in lus:
            idx = self.core_dofs[surface]
            lus[surface] = factorise(self.mass[idx][:, idx].tocsc())
        return lambda y: solve_real_spd(lus[surface], y)

    def rhs(self, dirichlet_weak, neumann_weak):
        """The data from the weak incident traces g_i = <φ_i, p_inc>, h_i = <φ_i,
        dp_inc/dn> (host, (n, r))."""
        n, k = self.n_dofs, self.k
        gw = np.asarray(dirichlet_weak).reshape(n, -1)
        hw = np.asarray(neumann_weak).reshape(n, -1)
        p, h = self.solve_mass(gw), self.solve_mass(hw)
        dsum, nsum = np.zeros_like(p), np.zeros_like(p)
        idx0 = self.dofs[0]
        for j in range(1, len(self.regions)):
            idx = self.dofs[j]
            s = self.sigma[j, idx][:, None]
            g = self.regions[j].density_ratio
            sp_, sh = self.xp.asarray(s * p[idx]), self.xp.asarray(s * h[idx])
            # the k operators of region 0 on every surface: σ-signed data on j's dofs
            p0, h0 = np.zeros_like(p), np.zeros_like(p)
            p0[idx], h0[idx] = s * p[idx], s * h[idx]
            p0, h0 = self.xp.asarray(p0[idx0]), self.xp.asarray(h0[idx0])
            where = np.searchsorted(idx0, idx)
            v0h, k0p = self._op(0, "V", h0)[where], self._op(0, "K", p0)[where]
            kp0h, w0p = self._op(0, "Kp", h0)[where], self._op(0, "W", p0)[where]
            d = g * self._op(j, "V", sh) - v0h - self._op(j, "K", sp_) + k0p
            nn = g * (self._op(j, "Kp", sh) - kp0h) + self._op(j, "W", sp_) - g * w0p
            bounded = s[:, 0] != 0
            rows = idx[bounded]
            dsum[rows] += self.weight[j, rows][:, None] * d[bounded]
            nsum[rows] += nn[bounded]
        zero = np.zeros_like(p)
        out = self._rows(zero, zero, dsum, nsum, zero, zero)
        # known traces of the cores: rigid w = -H/k, pressure-release u = -P
        for face in self.interfaces:
            if face.kind == "rigid":
                idx = self.core_dofs[face.index]
                out[n + idx] = -h[idx] / k
            elif face.kind == "pressure_release":
                idx = self.core_dofs[face.index]
                out[idx] = -p[idx]
        return self.xp.asarray(out)
