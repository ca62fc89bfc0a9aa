"""Linear acoustics p_t + rho c^2 div v = 0, rho v_t + grad p = 0 by nodal DG (strong form,
upwind flux), advanced by the 5-stage low-storage RK4 of Carpenter & Kennedy.

`AcousticsDG` holds the state q[4, K, Np] = (p, v_x, v_y, v_z) on the chosen backend and
calls the volume / surface / update kernels (GPU RawKernels or their NumPy twin).

Several media (a fluid body in the surrounding fluid): an element of impedance and sound-speed
ratios z = rho c / (rho0 c0), s = c / c0 to the reference medium (rho0, c0) stores v' = z v.
Its equations p_t + s rho0 c0^2 div v' = 0, v'_t + (s / rho0) grad p = 0 are the reference
medium's with the affine factors scaled by s, so the volume kernel is that of one medium; the
surface kernel's upwind flux between impedances z_m, z_p couples the media.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...backend import Backend, get_backend, real_dtype
from ...errors import InputError
from ...progress import progress
from .cpu_kernels import CpuKernels
from .gpu_kernels import GpuKernels
from .space import DGSpace

# Carpenter & Kennedy (1994), 5-stage 4th-order 2N-storage Runge-Kutta
LSERK4_A = (0.0, -567301805773 / 1357537059087, -2404267990393 / 2016746695238,
            -3550918686646 / 2091501179385, -1275806237668 / 842570457699)
LSERK4_B = (1432997174477 / 9575080441434, 5161836677717 / 13612068292357,
            1720146321549 / 2090206949498, 3134564353537 / 4481467310338,
            2277821191437 / 14882151754819)
LSERK4_C = (0.0, 1432997174477 / 9575080441434, 2526269341429 / 6820363183573,
            2006345519317 / 2314059014343, 2802321613138 / 2924317926251)


@dataclass
class DeviceOperators:
    """What the kernels read, as arrays of the backend (xp) in the run's precision."""

    Dr: Any
    Ds: Any
    Dt: Any
    lift: Any
    geo: Any  # (K, 9)
    face_geo: Any  # (K, 4, 4): nx, ny, nz, Fscale
    vmap_m: Any  # (K, 4 Nfp) int64
    vmap_p: Any  # (K, 4 Nfp) int64
    face_mask: np.ndarray  # host copy (baked into the GPU source)
    sigma: Any  # (K, Np) sponge damping rate or None
    partner: Any  # (Nb,) int64: the neighbour's node of interface face nodes (space.boundary_partner)
    media: Any  # (K, 2) impedance and sound-speed ratios (z, s) of each element, or None: one medium
    rho: float
    c: float
    alpha: float
    beta: float  # admittance of BC_IMPEDANCE faces

    @property
    def rhoc2(self) -> float:
        return self.rho * self.c**2


class AcousticsDG:
    """Nodal DG acoustics on `space`, in the medium (rho, c) and, in the space's regions r > 0,
    media[r] = (rho_r, c_r).

    boundary_data(t) -> (Nb, 2) array of the backend: the incident field (v_inc . n, p_inc) at
    the boundary face nodes, n the element's outward normal (read at scatterer nodes; at
    interface nodes the sign that turns the neighbour's field into the element's: + inside a
    body, - outside). sigma: optional (K, Np) damping rate of a sponge layer. beta: the
    admittance of impedance faces (v_tot . n = beta p_tot / (rho c), n into the body).
    """

    def __init__(self, space: DGSpace, backend: Backend | str = "cpu", precision: str = "double",
                 rho: float = 1.0, c: float = 1.0, upwind: float = 1.0, sigma=None,
                 boundary_data: Callable[[float], Any] | None = None, media: dict | None = None,
                 beta: float = 0.0, **gpu_tuning):
        for name, value in (("rho", rho), ("c", c)):
            if not (np.isfinite(value) and value > 0):
                raise InputError(f"medium {name} = {value!r}: must be positive")
        if not (np.isfinite(beta) and beta >= 0):
            raise InputError(f"admittance beta = {beta!r}: the time domain takes a real, passive "
                              "admittance (a finite number >= 0)")
        ratios = _media_ratios(space.regions, rho, c, media)
        self.space = space
        self.backend = backend if isinstance(backend, Backend) else get_backend(backend)
        self.dtype = real_dtype(precision)
        xp = self.xp = self.backend.xp
        ref = space.ref
        put = lambda a: xp.asarray(np.ascontiguousarray(a, dtype=self.dtype))  # noqa: E731
        face_geo = np.concatenate([space.normals, space.fscale[..., None]], axis=2)
        geo = space.geo if ratios is None else space.geo * ratios[:, 1:]
        self._speed = np.ones(space.n_elements) if ratios is None else ratios[:, 1]
        self.ops = DeviceOperators(
            put(ref.Dr), put(ref.Ds), put(ref.Dt), put(ref.lift), put(geo), put(face_geo),
            xp.asarray(space.vmap_m), xp.asarray(space.vmap_p), ref.face_mask,
            None if sigma is None else put(sigma), xp.asarray(space.boundary_partner),
            None if ratios is None else put(ratios), float(rho), float(c), float(upwind), float(beta))
        if self.backend.is_gpu:
            self.kernels = GpuKernels(self.ops, xp, **gpu_tuning)
        else:
            self.kernels = CpuKernels(self.ops)
        self.boundary_data = boundary_data
        self._no_data = xp.zeros((len(space.boundary_codes), 2), dtype=self.dtype)
        shape = (4, space.n_elements, ref.n_nodes)
        self.q = xp.zeros(shape, dtype=self.dtype)
        self._res = xp.zeros(shape, dtype=self.dtype)
        self._rhs = xp.zeros(shape, dtype=self.dtype)
        self.t = 0.0
        mass = put(ref.mass)
        self._mass_j = (mass, put(space.jacobian))
        # energy weight of an element: 1 / (z s) (its rho c^2 and rho over the reference's, and v = v' / z)
        self._energy_weight = np.ones(space.n_elements) if ratios is None else 1 / ratios.prod(axis=1)

    # -- state -------------------------------------------------------------
    def set_state(self, q: np.ndarray, t: float = 0.0) -> None:
        self.q[...] = self.xp.asarray(np.asarray(q, dtype=self.dtype))
        self._res[...] = 0
        self.t = float(t)

    def state(self) -> np.ndarray:
        return self.backend.asnumpy(self.q)

    def rhs(self, q, t: float, out=None):
        out = self._rhs if out is None else out
        self.kernels.volume(q, out)
        if self.boundary_data is not None:
            data = self.xp.asarray(self.boundary_data(t), dtype=self.dtype)
        else:  # no incident field: zeros where the kernels read one (scatterer, interface nodes)
            data = self._no_data
        self.kernels.surface(q, out, data)
        return out

    def stable_dt(self, cfl: float = 0.75) -> float:
        """CFL step dt = cfl / (c N^2 max Fscale): the fastest mode scales with c N^2 / h
        (N^2 replaced by 2 at N = 1, whose spectral radius is relatively larger; cfl = 1 is
        unstable there, 0.75 is stable for N = 1..6 on gmsh meshes); c the element's."""
        n = self.space.ref.order
        return cfl / (self.ops.c * max(n * n, 2) * float((self.space.fscale.max(axis=1) * self._speed).max()))

    def step(self, dt: float) -> None:
        for a, b, c in zip(LSERK4_A, LSERK4_B, LSERK4_C):
            rhs = self.rhs(self.q, self.t + c * dt)
            self.kernels.update(self.q, self._res, rhs, a, b, dt)
        self.t += dt

    def run(self, t_final: float, cfl: float = 0.75, callback=None) -> None:
        """Advance to t_final with equal steps no longer than the CFL step."""
        steps = max(1, int(np.ceil((t_final - self.t) / self.stable_dt(cfl) - 1e-9)))
        dt = (t_final - self.t) / steps
        bar = progress(steps, f"DG N={self.space.ref.order}, {self.space.n_elements} elements", "steps")
        for _ in range(steps):
            self.step(dt)
            bar.update(1)
            if callback is not None:
                callback(self)
        bar.close()

    def energy(self) -> float:
        """Acoustic energy 1/2 int p^2/(rho c^2) + rho |v|^2 of the discrete state."""
        xp, (mass, jac) = self.xp, self._mass_j
        q = self.q.astype(np.float64)
        mq = q @ mass.astype(np.float64)
        per = (mq * q).sum(axis=2) * jac.astype(np.float64) * xp.asarray(self._energy_weight)  # (4, K)
        o = self.ops
        return float(0.5 * (per[0].sum() / o.rhoc2 + o.rho * per[1:].sum()))

    def l2_error(self, exact: np.ndarray, field: int = 0) -> float:
        """L2 norm over the mesh of q[field] - exact (exact of shape (K, Np))."""
        mass, jac = self._mass_j
        e = self.backend.asnumpy(self.q[field]).astype(np.float64) - exact
        m = self.backend.asnumpy(mass).astype(np.float64)
        return float(np.sqrt(((e @ m) * e).sum(axis=1) @ self.backend.asnumpy(jac).astype(np.float64)))


def _media_ratios(regions: np.ndarray, rho: float, c: float, media: dict | None):
    """(K, 2) impedance and sound-speed ratios (z, s) of each element to (rho, c), or None
    where every element is in that medium."""
    media = dict(media or {})
    used = set(np.unique(regions).tolist()) - {0}
    if used - set(media):
        raise InputError(f"mesh regions {sorted(used - set(media))} have no medium (rho, c)")
    if not used:
        return None
    table = np.ones((max(used) + 1, 2))
    for r in used:
        rho_r, c_r = (float(v) for v in media[r])
        if not (np.isfinite(rho_r) and rho_r > 0 and np.isfinite(c_r) and c_r > 0):
            raise InputError(f"medium of region {r}: density {rho_r!r} and sound speed {c_r!r} "
                              "must be positive")
        table[r] = rho_r * c_r / (rho * c), c_r / c
    return table[regions]
