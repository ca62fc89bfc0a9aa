"""Time-harmonic scattering by a rigid sphere computed in the time domain: the scattered
field p_s in a spherical shell (or a box with a spherical hole), driven through the rigid
wall v_s . n = -v_inc . n by a plane wave p_inc = ramp(tau) cos(w (t - d.x / c)) switched on
smoothly, absorbed at the outside by a sponge layer (equal damping of p and v, no 1D
reflection) in front of a characteristic boundary; the complex amplitude P(x) with
p_s(x, t) = Re(P(x) exp(-i w t)) comes from a DFT over the last whole periods.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field

import numpy as np

from ...errors import InputError
from ...files import atomic_path
from ...progress import progress
from .mesh import TetMesh
from .solver import AcousticsDG
from .space import BC_ABSORBING, BC_SCATTERER, build_space


@dataclass
class ScatteringSetup:
    radius: float
    k: float
    direction: np.ndarray
    outer_size: float  # outer sphere radius or box half-width
    outer: str = "sphere"
    center: np.ndarray = field(default_factory=lambda: np.zeros(3))
    sponge_start: float | None = None  # distance from the centre where damping starts
    sponge_decay: float = 6.0  # one-way amplitude decay exp(-sponge_decay) across the layer
    c: float = 1.0
    rho: float = 1.0
    ramp_periods: float = 2.0
    settle_periods: float = 4.0
    dft_periods: int = 2

    def __post_init__(self):
        self.direction = np.asarray(self.direction, float)
        nd = np.linalg.norm(self.direction)
        if not nd > 0:
            raise InputError(f"incident direction = {self.direction.tolist()}: must be nonzero")
        self.direction = self.direction / nd
        self.center = np.asarray(self.center, float)
        for name in ("radius", "k", "outer_size", "c", "rho"):
            if not getattr(self, name) > 0:
                raise InputError(f"{name} = {getattr(self, name)!r}: must be positive")
        if self.sponge_start is not None and not self.radius < self.sponge_start < self.outer_size:
            raise InputError(f"sponge_start = {self.sponge_start!r}: must lie between the radius "
                              f"{self.radius} and outer_size {self.outer_size}")

    @property
    def omega(self) -> float:
        return self.k * self.c

    def distance(self, x: np.ndarray) -> np.ndarray:
        """Distance of points (..., 3) from the centre in the outer boundary's norm."""
        off = np.asarray(x) - self.center
        return np.linalg.norm(off, axis=-1) if self.outer == "sphere" else np.abs(off).max(axis=-1)

    def boundary_rule(self, centroids, normals):
        r = np.linalg.norm(centroids - self.center, axis=1)
        return np.where(r < 0.5 * (self.radius + self.outer_size), BC_SCATTERER, BC_ABSORBING)

    def sponge(self, xyz: np.ndarray):
        """(K, Np) damping at nodes xyz (3, K, Np) rate: sigma_max ((d - d0) / L)^2 in the outer layer."""
        if self.sponge_start is None:
            return None
        d = self.distance(np.moveaxis(xyz, 0, -1))
        width = self.outer_size - self.sponge_start
        sigma_max = 3.0 * self.sponge_decay * self.c / width  # int sigma dr / c = sponge_decay
        return sigma_max * np.clip((d - self.sponge_start) / width, 0.0, None) ** 2

    def ramp(self, tau, xp=np):
        s = xp.clip(tau / (self.ramp_periods * 2 * np.pi / self.omega), 0.0, 1.0)
        return s**3 * (10 - 15 * s + 6 * s**2)

    def incident_pressure(self, x, t: float, xp=np):
        """p_inc(x, t) at points x (n, 3); zero on the sphere at t <= 0."""
        dx = x @ xp.asarray(self.direction)
        tau = t - (dx - float(self.direction @ self.center) + self.radius) / self.c
        return self.ramp(tau, xp) * xp.cos(self.omega * (t - dx / self.c))


def scattering_mesh_sizes(setup: ScatteringSetup, order: int, points_per_wavelength: float,
                          h_surface: float | None = None):
    """(h_inner, h_outer): N wavelength / h = points_per_wavelength away from the sphere; at
    the sphere h_surface (default 0.2 radius: straight facets cut the sphere by h^2 / 8a)."""
    wavelength = 2 * np.pi / setup.k
    h = order * wavelength / points_per_wavelength
    return min(h, h_surface or 0.2 * setup.radius), h


@dataclass
class ScatteringResult:
    probes: np.ndarray
    amplitude: np.ndarray  # complex P at the probes
    elements: int
    nodes: int
    steps: int
    dt: float
    t_final: float


def run_scattering(setup: ScatteringSetup, mesh: TetMesh, order: int, probes: np.ndarray,
                   backend="cpu", precision="double", cfl: float = 0.75) -> ScatteringResult:
    """Run to a time-harmonic state and return the scattered amplitude at the probes
    (progress with rate and ETA on stderr, see wavescat.progress)."""
    probes = np.atleast_2d(np.asarray(probes, float))
    space = build_space(mesh, order, setup.boundary_rule)
    elem, rows = space.locate(probes)
    dg = AcousticsDG(space, backend, precision, rho=setup.rho, c=setup.c,
                     sigma=setup.sponge(space.xyz))
    xp, dtype = dg.xp, dg.dtype
    # v_inc . n = (d . n) p_inc / (rho c) for a plane wave; with the carrier split as
    # cos(w t) C + sin(w t) S the per-stage work is two scaled adds once the ramp is over
    scat = space.boundary_codes == BC_SCATTERER
    dx = space.boundary_xyz @ setup.direction
    dn = np.where(scat, space.boundary_normals @ setup.direction, 0.0) / (setup.rho * setup.c)
    phase = setup.omega * dx / setup.c
    cos_part, sin_part = (xp.asarray((dn * f(phase)).astype(dtype)) for f in (np.cos, np.sin))
    delay = xp.asarray(((dx - float(setup.direction @ setup.center) + setup.radius) / setup.c).astype(dtype))
    last = float(dx[scat].max()) if scat.any() else 0.0
    ramp_end = (last - float(setup.direction @ setup.center) + setup.radius) / setup.c \
        + setup.ramp_periods * 2 * np.pi / setup.omega

    def boundary_velocity(t):
        carrier = np.cos(setup.omega * t) * cos_part + np.sin(setup.omega * t) * sin_part
        return carrier if t >= ramp_end else setup.ramp(t - delay, xp) * carrier

    dg.boundary_velocity = boundary_velocity
    period = 2 * np.pi / setup.omega
    steps_per_period = int(np.ceil(period / dg.stable_dt(cfl)))
    dt = period / steps_per_period
    # ramp, travel across the domain, settling, then the DFT window
    transit = (setup.outer_size + setup.radius) / setup.c
    n_before = int(np.ceil((setup.ramp_periods + setup.settle_periods) + transit / period))
    total_periods = n_before + setup.dft_periods
    rows_d = xp.asarray(rows.astype(dtype))
    elem_d = xp.asarray(elem)
    acc = xp.zeros(len(probes), dtype=np.complex128)
    start_dft = n_before * steps_per_period
    n_steps = total_periods * steps_per_period
    with progress(n_steps, f"DG scattering N={order}, {space.n_elements} elements", "steps") as bar:
        for step in range(n_steps):
            dg.step(dt)
            if step + 1 > start_dft:
                p = (rows_d * dg.q[0][elem_d]).sum(axis=1)
                acc += p.astype(np.complex128) * np.exp(1j * setup.omega * dg.t)
            bar.update(1)
    amplitude = dg.backend.asnumpy(acc) * 2.0 / (setup.dft_periods * steps_per_period)
    return ScatteringResult(probes, amplitude, space.n_elements, space.n_nodes, n_steps, dt, dg.t)


def relative_l2(a: np.ndarray, b: np.ndarray) -> float:
    """||a - b|| / ||b|| over the probe points."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def read_probes(path) -> np.ndarray:
    """Probe points from a CSV with columns x,y,z (a header row is required)."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"x", "y", "z"} - set(reader.fieldnames or ())
        if missing:
            raise InputError(f"probes file {path}: missing columns {sorted(missing)} (need x,y,z)")
        pts = np.array([[float(r["x"]), float(r["y"]), float(r["z"])] for r in reader])
    if pts.size == 0:
        raise InputError(f"probes file {path}: no probe points")
    return pts


def write_csv_atomic(path, header: list[str], rows: np.ndarray) -> None:
    """Write a CSV next to `path` and move it into place, so a crash leaves no half file."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for row in rows:
            w.writerow([repr(float(v)) if not isinstance(v, (int, np.integer)) else int(v) for v in row])


def write_dg_amplitudes(path, probes: np.ndarray, p_dg: np.ndarray) -> None:
    write_csv_atomic(path, ["x", "y", "z", "re_p_dg", "im_p_dg"],
                     np.column_stack([probes, p_dg.real, p_dg.imag]))


def write_dg_vs_bem(path, probes: np.ndarray, p_dg: np.ndarray, p_bem: np.ndarray) -> None:
    """results/<case>/dg_vs_bem.csv with the contract header."""
    write_csv_atomic(path, ["x", "y", "z", "re_p_dg", "im_p_dg", "re_p_bem", "im_p_bem"],
                     np.column_stack([probes, p_dg.real, p_dg.imag, p_bem.real, p_bem.imag]))
