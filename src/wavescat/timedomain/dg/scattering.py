"""Scattering by one body computed in the time domain: the scattered field p_s around the body
(and the total field inside a fluid body), driven through the body's surface by a plane wave
p_inc(x, t) = S(t - d.x / c) and absorbed at the outside by a sponge layer (equal damping of p
and v, no 1D reflection) in front of a characteristic boundary. The complex amplitude P(x, w),
p_s = Re(P exp(-i w t)) per unit incident amplitude at the origin (the BEM's exp(i k d.x)),
is the DFT of p_s at the probes over the DFT of S, both over the same time steps:

- one frequency: S = ramp cos(w t), switched on smoothly; the DFTs over the last whole
  periods, once the field is time-harmonic;
- a band (several frequencies): S a Gaussian-modulated cosine whose spectrum spans the band;
  the DFTs over the whole run, until the field at the probes has died away. The solver is
  linear and time-invariant, so each frequency comes out as from its own harmonic run.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from math import comb

import numpy as np

from ...backend import to_host
from ...errors import InputError
from ...files import atomic_path
from ...progress import progress
from .mesh import TetMesh
from .scatterer import Body
from .solver import AcousticsDG
from .space import BC_ABSORBING, BC_INTERFACE, build_space

# band edges' share of the pulse spectrum's peak (the pulse's length follows from it)
PULSE_EDGE = 1e-2
# the pulse starts this many of its Gaussian widths before its peak (exp(-5^2 / 2) ~ 4e-6)
PULSE_LEAD = 5.0
# a band run stops once the probes' pressure has stayed below this share of its peak for a
# period of the lowest frequency
PULSE_QUIET = 1e-5


@dataclass
class ScatteringSetup:
    body: Body
    omegas: np.ndarray  # angular frequencies (rad/s): one, harmonic; several, a pulse over them
    direction: np.ndarray
    outer_size: float  # outer sphere radius or box half-width
    outer: str = "sphere"
    sponge_start: float | None = None  # distance from the centre where damping starts
    # one-way amplitude decay exp(-sponge_decay) across the layer: enough with the
    # characteristic boundary behind it; more (6) steepens the damping, whose gradient
    # reflects the spherical waves' near-field part (bench/README.md)
    sponge_decay: float = 3.0
    ramp_periods: float = 2.0
    settle_periods: float = 4.0
    dft_periods: int = 2

    def __post_init__(self):
        self.direction = np.asarray(self.direction, float)
        nd = np.linalg.norm(self.direction)
        if not nd > 0:
            raise InputError(f"incident direction = {self.direction.tolist()}: must be nonzero")
        self.direction = self.direction / nd
        self.omegas = np.atleast_1d(np.asarray(self.omegas, float))
        if not (self.omegas.size and np.all(self.omegas > 0)):
            raise InputError(f"frequencies = {self.omegas.tolist()}: must be positive")
        if not self.outer_size > 0:
            raise InputError(f"outer_size = {self.outer_size!r}: must be positive")
        if self.sponge_start is not None and not self.body.extent() < self.sponge_start < self.outer_size:
            raise InputError(f"sponge_start = {self.sponge_start!r}: must lie between the body's "
                              f"extent {self.body.extent():.4g} and outer_size {self.outer_size}")

    @property
    def c(self) -> float:
        return float(self.body.medium.sound_speed)

    @property
    def rho(self) -> float:
        return float(self.body.medium.density)

    @property
    def band(self) -> bool:
        return self.omegas.size > 1

    @property
    def k(self) -> float:
        """The highest wavenumber (what the mesh resolves)."""
        return float(self.omegas.max() / self.c)

    def distance(self, x: np.ndarray) -> np.ndarray:
        """Distance of points (..., 3) from the centre in the outer boundary's norm."""
        off = np.asarray(x) - self.body.center
        return np.linalg.norm(off, axis=-1) if self.outer == "sphere" else np.abs(off).max(axis=-1)

    def boundary_rule(self, centroids, normals):
        outside = self.distance(centroids) > 0.5 * (self.body.extent() + self.outer_size)
        return np.where(outside, BC_ABSORBING, self.body.face_code or BC_ABSORBING)

    def sponge(self, xyz: np.ndarray):
        """(K, Np) damping at nodes xyz (3, K, Np) rate: sigma_max ((d - d0) / L)^2 in the outer layer."""
        if self.sponge_start is None:
            return None
        d = self.distance(np.moveaxis(xyz, 0, -1))
        width = self.outer_size - self.sponge_start
        sigma_max = 3.0 * self.sponge_decay * self.c / width  # int sigma dr / c = sponge_decay
        return sigma_max * np.clip((d - self.sponge_start) / width, 0.0, None) ** 2

    # -- the incident signal S(s), s = t - d.x / c ---------------------------------------
    @property
    def onset(self) -> float:
        """s at which S starts: when the wave front reaches the body's leading extent at t = 0."""
        return (self.body.extent() - float(self.direction @ self.body.center)) / self.c

    def pulse_width(self) -> float:
        """Gaussian width (time) of the band pulse: its spectrum falls to PULSE_EDGE at the
        band's edges."""
        half = 0.5 * np.ptp(self.omegas)
        return float(np.sqrt(2 * np.log(1 / PULSE_EDGE)) / half)

    def signal(self, s, xp=np):
        """S(s): the incident pressure at the origin at time s."""
        tau = s - self.onset
        if not self.band:
            w = self.omegas[0]
            u = xp.clip(tau / (self.ramp_periods * 2 * np.pi / w), 0.0, 1.0)
            return u**3 * (10 - 15 * u + 6 * u**2) * xp.cos(w * s)
        width, wc = self.pulse_width(), 0.5 * (self.omegas.min() + self.omegas.max())
        x = tau - PULSE_LEAD * width
        return xp.where(tau > 0, xp.exp(-0.5 * (x / width) ** 2) * xp.cos(wc * x), 0.0)

    def signal_derivatives(self, s, n: int) -> np.ndarray:
        """(n+1, ...) S^(k)(s), k = 0..n (the Hermite run's incident data at its box)."""
        s = np.asarray(s, float)
        tau = s - self.onset
        out = np.zeros((n + 1,) + s.shape)
        if self.band:  # S = Re g on tau > 0, g = exp(a x^2 + b x): g' = (2 a x + b) g
            width, wc = self.pulse_width(), 0.5 * (self.omegas.min() + self.omegas.max())
            x = tau - PULSE_LEAD * width
            a, b = -0.5 / width**2, 1j * wc
            g = [np.exp(a * x**2 + b * x)]
            for k in range(n):
                g.append((2 * a * x + b) * g[k] + (2 * a * k * g[k - 1] if k else 0.0))
            return np.where(tau > 0, np.real(np.array(g)), 0.0)
        # S = r(u) cos(w s), u = tau / T clipped to [0, 1], r the smooth step: Leibniz's rule
        w, period = self.omegas[0], self.ramp_periods * 2 * np.pi / self.omegas[0]
        u = np.clip(tau / period, 0.0, 1.0)
        ramp = np.polynomial.Polynomial([0, 0, 0, 10, -15, 6])
        inside = (tau > 0) & (tau < period)
        for k in range(n + 1):
            for j in range(k + 1):
                r = ramp(u) if j == 0 else np.where(inside, ramp.deriv(j)(u) / period**j, 0.0)
                out[k] += comb(k, j) * r * w ** (k - j) * np.cos(w * s + (k - j) * np.pi / 2)
        return out

    def incident_pressure(self, x, t: float, xp=np):
        """p_inc(x, t) at points x (n, 3)."""
        return self.signal(t - x @ xp.asarray(self.direction) / self.c, xp)


def scattering_mesh_sizes(setup: ScatteringSetup, order: int, points_per_wavelength: float,
                          h_surface: float | None = None):
    """(h_inner, h_outer, h_fill): N wavelength / h = points_per_wavelength at the highest
    frequency away from the body; at the body h_surface (default 0.2 of its smallest half-axis:
    straight facets cut a sphere of radius a by h^2 / 8a); inside a fluid body at most the
    interior wavelength's size (None for other bodies)."""
    h = order * 2 * np.pi / setup.k / points_per_wavelength
    h_in = min(h, h_surface or 0.2 * setup.body.inner())
    fill = min(h_in, h * setup.body.sound_speed_ratio) if setup.body.kind == "fluid" else None
    return h_in, h, fill


@dataclass
class ScatteringResult:
    probes: np.ndarray
    omegas: np.ndarray
    amplitude: np.ndarray  # complex P (frequencies, probes)
    elements: int
    nodes: int
    steps: int
    dt: float
    t_final: float


def scattering_space(setup: ScatteringSetup, mesh: TetMesh, order: int, regions=None):
    return build_space(mesh, order, setup.boundary_rule, regions)


def run_scattering(setup: ScatteringSetup, mesh: TetMesh, order: int, probes: np.ndarray,
                   backend="cpu", precision="double", cfl: float = 0.75, regions=None) -> ScatteringResult:
    """Run and return the scattered amplitude at the probes for each of setup.omegas
    (progress with rate and ETA on stderr, see wavescat.progress). regions: the mesh's
    (0 outside, 1 inside a fluid body)."""
    probes = np.atleast_2d(np.asarray(probes, float))
    body = setup.body
    if body.contains(probes).any():
        raise InputError(f"probe point {probes[body.contains(probes)][0].tolist()} lies inside the body")
    space = scattering_space(setup, mesh, order, regions)
    elem, rows = space.locate(probes)
    media = {1: body.interior} if body.kind == "fluid" else None
    dg = AcousticsDG(space, backend, precision, rho=setup.rho, c=setup.c, sigma=setup.sponge(space.xyz),
                     media=media, beta=body.admittance)
    xp, dtype = dg.xp, dg.dtype
    # per boundary node: (v_inc . n, p_inc) = S(t - d.x / c) (d.n / (rho c), 1), times the
    # side's sign at interface nodes (+ inside the body, - outside) and 0 at absorbing ones
    codes = space.boundary_codes
    sign = np.where(codes == BC_INTERFACE, np.where(space.regions[space.boundary_elements] == 1, 1.0, -1.0),
                    np.where(codes == BC_ABSORBING, 0.0, 1.0))
    weights = xp.asarray(np.stack([sign * (space.boundary_normals @ setup.direction) / (setup.rho * setup.c),
                                   sign], axis=1))
    delay = xp.asarray(space.boundary_xyz @ setup.direction / setup.c)

    def boundary_data(t):
        return (setup.signal(t - delay, xp)[:, None] * weights).astype(dtype)

    dg.boundary_data = boundary_data
    rows_d = xp.asarray(rows.astype(dtype))
    elem_d = xp.asarray(elem)
    reach = float(np.max(np.linalg.norm(probes - body.center, axis=1)))
    amplitude, n_steps, dt = record_probes(
        setup, reach, dg.stable_dt(cfl), dg.step, lambda: (rows_d * dg.q[0][elem_d]).sum(axis=1),
        lambda: dg.t, f"DG scattering N={order}, {space.n_elements} elements", xp)
    return ScatteringResult(probes, setup.omegas, amplitude, space.n_elements, space.n_nodes, n_steps, dt,
                            dg.t)


def record_probes(setup: ScatteringSetup, reach: float, stable_dt: float, advance, pressure, now,
                  label: str, xp=np):
    """Step a time-domain run and DFT its scattered pressure at the probes: (amplitude
    (frequencies, probes), steps, dt). advance(dt) takes one step, pressure() gives the probes'
    pressure (a backend array), now() the run's time; reach: the farthest probe's distance from
    the body's centre. One frequency: equal steps, whole periods, the DFT over the last
    dft_periods once the field is time-harmonic; a band: the DFT over the whole run, stopped once
    the probes have been quiet for a period of the lowest frequency."""
    omegas, body = setup.omegas, setup.body
    if setup.band:
        dt = stable_dt
        quiet_steps = int(np.ceil(2 * np.pi / omegas.min() / dt))
        # the pulse passes the body, its scattered field reaches the farthest probe
        passed = setup.onset + 2 * PULSE_LEAD * setup.pulse_width() + (2 * body.extent() + reach) / setup.c
        n_min = int(np.ceil(passed / dt))
        n_steps = n_min + 20 * quiet_steps  # at most 20 periods of ringing
        start_dft = 0
    else:
        period = 2 * np.pi / omegas[0]
        steps_per_period = int(np.ceil(period / stable_dt))
        dt = period / steps_per_period
        # ramp, travel across the domain, settling, then the DFT window
        transit = (setup.outer_size + body.extent()) / setup.c
        n_before = int(np.ceil((setup.ramp_periods + setup.settle_periods) + transit / period))
        start_dft = n_before * steps_per_period
        n_steps = (n_before + setup.dft_periods) * steps_per_period
        n_min = quiet_steps = n_steps  # (the band's stopping rule does not apply)
    acc = None
    ref = np.zeros(len(omegas), dtype=np.complex128)
    peak, quiet = 0.0, 0
    with progress(n_steps, label, "steps") as bar:
        for step in range(n_steps):
            advance(dt)
            bar.update(1)
            if step + 1 <= start_dft:
                continue
            t = now()
            phase = np.exp(1j * omegas * t)
            p = pressure().astype(np.complex128)
            term = xp.asarray(phase)[:, None] * p[None, :]
            acc = term if acc is None else acc + term
            ref += phase * float(setup.signal(t))
            if setup.band:  # stop once the probes have been quiet for a period
                size = float(xp.abs(p).max())
                peak = max(peak, size)
                quiet = quiet + 1 if size < PULSE_QUIET * peak else 0
                if step + 1 >= n_min and quiet >= quiet_steps:
                    bar.update(n_steps - step - 1)
                    n_steps = step + 1
                    break
    amplitude = to_host(acc) / ref[:, None]
    return amplitude, n_steps, dt


def relative_l2(a: np.ndarray, b: np.ndarray) -> float:
    """||a - b|| / ||b|| over the probe points."""
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def read_probes(path) -> np.ndarray:
    """Probe points from a CSV with columns x,y,z (a header row is required); points listed
    again (one row per frequency) are read once, in the order of their first row."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = {"x", "y", "z"} - set(reader.fieldnames or ())
        if missing:
            raise InputError(f"probes file {path}: missing columns {sorted(missing)} (need x,y,z)")
        pts = np.array([[float(r["x"]), float(r["y"]), float(r["z"])] for r in reader]).reshape(-1, 3)
    if pts.size == 0:
        raise InputError(f"probes file {path}: no probe points")
    _, first = np.unique(pts, axis=0, return_index=True)
    return pts[np.sort(first)]


def write_csv_atomic(path, header: list[str], rows: np.ndarray) -> None:
    """Write a CSV next to `path` and move it into place, so a crash leaves no half file."""
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for row in rows:
            w.writerow([repr(float(v)) if not isinstance(v, (int, np.integer)) else int(v) for v in row])


def write_dg_amplitudes(path, frequencies_hz, probes: np.ndarray, p_dg: np.ndarray,
                        method: str = "dg") -> None:
    """dg_probes.csv: frequency_hz,x,y,z,re_p_dg,im_p_dg, one row per frequency and probe
    (hermite_probes.csv: `method` "hermite", columns re_p_hermite, im_p_hermite)."""
    f = np.repeat(np.asarray(frequencies_hz, float), len(probes))
    xyz = np.tile(probes, (len(frequencies_hz), 1))
    p = np.asarray(p_dg).reshape(-1)
    write_csv_atomic(path, ["frequency_hz", "x", "y", "z", f"re_p_{method}", f"im_p_{method}"],
                     np.column_stack([f, xyz, p.real, p.imag]))


def write_vs_bem(path, probes: np.ndarray, p_td: np.ndarray, p_bem: np.ndarray,
                 method: str = "dg") -> None:
    """results/<case>/dg_vs_bem.csv with the contract header (rows frequency by frequency);
    hermite_vs_bem.csv likewise (`method` "hermite": re_p_hermite, im_p_hermite)."""
    write_csv_atomic(path, ["x", "y", "z", f"re_p_{method}", f"im_p_{method}", "re_p_bem", "im_p_bem"],
                     np.column_stack([probes, p_td.real, p_td.imag, p_bem.real, p_bem.imag]))
