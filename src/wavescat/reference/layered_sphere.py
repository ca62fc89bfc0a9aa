"""Exact scattering of a plane wave by concentric spheres: fluid layers around a fluid, rigid
or pressure-release core (the partial-wave series with a recursive impedance).

Geometry and arguments. `radii` = (a_0, a_1, ..., a_N) with a_0 >= a_1 >= ... >= a_N > 0
(metres): the body is |x - c| < a_0. `layers` = [(g_0, h_0), ..., (g_{N-1}, h_{N-1})]: layer j
is the fluid shell a_{j+1} < |x - c| < a_j with density rho_j = g_j rho and sound speed
c_j = h_j c, every ratio relative to the SURROUNDING medium (rho, c), never to the enclosing
layer (as a `boundary` block's ratios in docs/conventions.md). `core`, the ball
|x - c| < a_N, is "rigid", "pressure_release" or a fluid (g_c, h_c). No layers ([] with
radii (a,)) is the homogeneous sphere of rigid_sphere.py, pressure_release_sphere.py or
fluid_sphere.py. A layer of zero thickness (a_j = a_{j+1}) is allowed and changes nothing.
Sound-speed ratios may be complex (an absorbing fluid: Re h > 0, Im h <= 0, so that
Im(k / h) >= 0 under exp(-i w t); absorption.complex_sound_speed_ratio gives one from dB per
wavelength). Densities are real > 0.

Conventions and exterior series exactly as rigid_sphere.py (exp(-i w t), p_inc = exp(i k d.x),
p_scat ~ F(xhat) e^{ikr}/r with F in metres, TS = 20 log10 |F(-d)|):
    F = (i/k) e^{ik (d - xhat).c} sum_l (2l+1) c_l P_l(cos gamma),
and outside p_tot = e^{ik d.c} sum_l (2l+1) i^l [j_l(kr) - c_l h_l(kr)] P_l(cos gamma).

Derivation (recursive impedance). Across every interface p and the normal particle velocity,
(1/rho) dp/dr, are continuous, so for each order l the normalised radial admittance
    Y_l(r) = (1 / (g(r) k)) p_l'(r) / p_l(r)
(g(r) the density ratio of the region at r, p_l the radial factor of order l) is continuous
too, and it carries the whole influence of everything inside r on the field outside. It
starts at the core's surface r = a_N:
    rigid:            Y = 0
    pressure-release: Y = infinity           (p = 0)
    fluid (g_c, h_c): Y = D^j_l(k_c a_N) / (g_c h_c),  k_c = k / h_c,
with D^j_l(w) = j_l'(w) / j_l(w) the logarithmic derivative (D^y_l likewise for y_l).
In layer j, with kappa = k / h_j, p_l = A j_l(kappa r) + B y_l(kappa r), and the admittance in
units of the argument, Lambda = (1/kappa) p_l'/p_l = g_j h_j Y. With z = kappa a_{j+1} (inner)
and x = kappa a_j (outer), Lambda(z) fixes the ratio of the two parts at z,
    t = B y_l(z) / (A j_l(z)) = (Lambda(z) - D^j_l(z)) / (D^y_l(z) - Lambda(z)),
and carries it to x through the cross ratio
    C_l = [j_l(z) y_l(x)] / [j_l(x) y_l(z)]:
    Lambda(x) = (D^j_l(x) + t C_l D^y_l(x)) / (1 + t C_l),   Y(a_j) = Lambda(x) / (g_j h_j).
(Zero thickness: C = 1 and Lambda(x) = Lambda(z). A layer of the medium's material around a
core: the transfer leaves Y unchanged as a function of the standing wave j_l + t' y_l.)
At the outer surface r = a_0 the exterior field j_l(kr) - c_l h_l(kr) must have admittance
Y(a_0), so
    c_l = (j_l'(ka_0) - Y j_l(ka_0)) / (h_l'(ka_0) - Y h_l(ka_0)),
the rigid j'/h' for Y = 0, the sound-soft j/h for Y = infinity and fluid_sphere.py's
coefficient for one fluid layer around nothing. This is the 2 x 2 transfer matrix of each
layer reduced to the ratio it acts on (a Moebius map of Y), which is what keeps it finite.

Numerical stability. Y is carried as a homogeneous pair (N, D) with Y = N / D, rescaled to
max(|N|, |D|) = 1 after every layer, so the pressure-release core (D = 0) needs no special
case, and a layer acts only through D^j_l, D^y_l and C_l, never through j_l or y_l alone.
At the orders where j_l(w) and y_l(w) are representable with full precision (up to about
l ~ |w| and somewhat beyond) these come from scipy's values, D^j and C sharing the same
j_l(x): near a zero of j_l(x) both are large together and the transfer stays exact (a
frequency where a shell's kappa a is a multiple of pi is a regression test). Above, where
y_l(z) overflows and j_l(z) underflows, D^j_l comes from the ratio j_{l-1}/j_l by the
downward recurrence r_l = (2l+1)/w - 1/r_{l+1} started far above max(l, |w|), D^y_l from
y_{l-1}/y_l by the upward one (both stable there, complex w included), and C_l continues as
the product of the order-to-order ratios (about (z/x)^2 per order: it underflows to 0 just
where the inside no longer matters). At those orders the inside's share of c_l is below
rounding in every case tried (perturbing these values changes no test's result); the
recurrences keep it finite and right rather than NaN. Thin shells (C near 1) and high
orders both stay accurate; at the outer surface rigid_sphere.hankel_ratio keeps c_l finite
as for the homogeneous spheres. The truncation order follows the outer ka
(rigid_sphere.truncation_order).

Benchmark: `python -m wavescat.reference.layered_sphere [tests/reference/data/
jech2015_sphere_ts.csv]` prints the TS of the three Jech et al. (2015) shells (jech2015_shells)
and their largest difference from the benchmark (0.005 dB over 12-400 kHz, its rounding).

Without losses (real h everywhere) (4 pi / k) Im F(d) = sigma_s (the optical theorem); with
an absorbing layer or core the extinction exceeds the scattered power.
"""
from __future__ import annotations

import numpy as np
from scipy.special import spherical_jn, spherical_yn

from ..errors import InputError
from . import _validate
from . import rigid_sphere as _series
from .absorption import complex_sound_speed_ratio

CORE_KINDS = ("rigid", "pressure_release")

# The Jech et al. (2015) benchmark (JASA 138, 3742-3764; doi:10.1121/1.4937607) as echoSMs
# defines it (src/echosms/resources/target definitions.toml): sea water, a 10 mm sphere and
# fluid shells 1 mm thick on it (inner radius a - 1 mm = 9 mm). Densities kg/m^3, speeds m/s.
JECH2015_MEDIUM = {"density": 1026.8, "sound_speed": 1477.3}
JECH2015_RADIUS = 0.010
JECH2015_SHELL_THICKNESS = 0.001
_JECH2015_MATERIALS = {  # name: (shell (density, speed), core (density, speed) or kind)
    "ShellSphere_PressureRelease": ((1028.9, 1480.3), "pressure_release"),
    "ShellSphere_Gas": ((1070.0, 1570.0), (1.24, 345.0)),
    "ShellSphere_WeaklyScattering": ((1028.9, 1480.3), (1031.0, 1483.3)),
}


def jech2015_shells() -> dict[str, tuple[tuple[float, float], list, object]]:
    """The three benchmark shells as {name: (radii, layers, core)} in this module's arguments
    (ratios to JECH2015_MEDIUM); names are the columns of echoSMs' Benchmark_Frequency_TS.csv."""
    rho, c = JECH2015_MEDIUM["density"], JECH2015_MEDIUM["sound_speed"]
    radii = (JECH2015_RADIUS, JECH2015_RADIUS - JECH2015_SHELL_THICKNESS)
    out = {}
    for name, (shell, core) in _JECH2015_MATERIALS.items():
        if not isinstance(core, str):
            core = (core[0] / rho, core[1] / c)
        out[name] = (radii, [(shell[0] / rho, shell[1] / c)], core)
    return out


def _structure(radii, layers, core):
    """Checked (radii array, [(g, h)], core) with core a kind string or (g, h)."""
    try:
        r = np.asarray(radii, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"radii = {radii!r}: must be a sequence of radii (m)") from None
    layers = list(layers or [])
    if len(r) != len(layers) + 1:
        raise InputError(f"radii = {list(radii)!r}: needs len(layers) + 1 = {len(layers) + 1} "
                          "values (the outer radius of each layer, then the core's radius)")
    if not np.all(np.isfinite(r)) or np.any(r <= 0) or np.any(np.diff(r) > 0):
        raise InputError(f"radii = {r.tolist()!r}: must be finite, > 0 and non-increasing "
                          "(outermost first)")
    checked = []
    for j, layer in enumerate(layers):
        try:
            g, h = layer
        except (TypeError, ValueError):
            raise InputError(f"layers[{j}] = {layer!r}: must be a pair (density_ratio, "
                              "sound_speed_ratio)") from None
        checked.append((_validate.positive(f"layers[{j}] density_ratio", g),
                        _validate.sound_speed_ratio(f"layers[{j}] sound_speed_ratio", h)))
    if isinstance(core, str):
        if core not in CORE_KINDS:
            raise InputError(f"core = {core!r}: must be 'rigid', 'pressure_release' or a "
                              "fluid (density_ratio, sound_speed_ratio)")
    else:
        try:
            g, h = core
        except (TypeError, ValueError):
            raise InputError(f"core = {core!r}: must be 'rigid', 'pressure_release' or a "
                              "fluid (density_ratio, sound_speed_ratio)") from None
        core = (_validate.positive("core density_ratio", g),
                _validate.sound_speed_ratio("core sound_speed_ratio", h))
    return r, checked, core


def layers_from_boundaries(boundaries, where=None) -> tuple[list, object]:
    """(layers, core) of the boundary conditions (bem.formulations.Boundary) of concentric
    spheres, outermost first (a case's body, then the body inside it, ...): every one but
    the last must be `fluid` (a layer); the last is the core (`fluid`, `rigid` or
    `pressure_release`). Contrasts are relative to the medium; an absorption makes h
    complex. `where`: the bodies' names for messages (default boundaries[i])."""
    boundaries = list(boundaries)
    if not boundaries:
        raise InputError("layers_from_boundaries: needs at least one boundary")
    names = list(where) if where is not None else [f"boundaries[{i}]"
                                                   for i in range(len(boundaries))]
    out = []
    for i, (boundary, name) in enumerate(zip(boundaries, names)):
        kind = boundary.kind
        last = i == len(boundaries) - 1
        if kind in CORE_KINDS and last:
            out.append(kind)
            continue
        if kind != "fluid":
            allowed = "fluid, rigid or pressure_release" if last else "fluid (it has bodies inside)"
            raise InputError(f"{name}.kind = {kind!r}: no concentric-sphere series for it; "
                             f"must be {allowed}")
        h = boundary.sound_speed_ratio
        if boundary.absorption_db_per_wavelength:
            h = complex_sound_speed_ratio(h, boundary.absorption_db_per_wavelength)
        out.append((boundary.density_ratio, h))
    return out[:-1], out[-1]


def bessel_ratios(w, order: int):
    """(D^j, D^y), each (order + 1, n): the logarithmic derivatives j_l'(w)/j_l(w) and
    y_l'(w)/y_l(w), l = 0..order, at arguments w (n,) (complex allowed), and (r^j, r^y) the
    ratios j_{l-1}(w)/j_l(w) and y_{l-1}(w)/y_l(w) (row 0 unused), all without evaluating
    j_l or y_l themselves (no overflow at orders far above |w|)."""
    w = np.atleast_1d(np.asarray(w, dtype=np.complex128))
    order = max(int(order), 1)
    big = float(np.max(np.abs(w)))
    start = max(order, int(np.ceil(big))) + int(np.ceil(10.0 * np.cbrt(big))) + 30
    rj = np.empty((order + 1, len(w)), dtype=np.complex128)
    ry = np.empty_like(rj)
    with np.errstate(all="ignore"):
        r = (2 * start + 1) / w  # j_{start-1}/j_start with j_{start+1} / j_start ~ 0
        for l in range(start - 1, 0, -1):
            r = (2 * l + 1) / w - 1.0 / r
            if l <= order:
                rj[l] = r
        if start <= order:  # not reached: start > order
            raise AssertionError
        ry[1] = w * np.cos(w) / (np.cos(w) + w * np.sin(w))
        for l in range(1, order):
            ry[l + 1] = 1.0 / ((2 * l + 1) / w - ry[l])
        l = np.arange(order + 1)[:, None]
        dj = rj - (l + 1) / w
        dy = ry - (l + 1) / w
        dj[0] = -1.0 / rj[1]
        dy[0] = -1.0 / ry[1]
    rj[0] = ry[0] = np.nan
    return dj, dy, rj, ry


_TINY, _HUGE = 1e-250, 1e250  # beyond these, j_l and y_l lose digits or overflow


def _bessel_data(w, order: int):
    """Per argument w (n,) and order l = 0..order: the logarithmic derivatives D^j, D^y and
    what the cross ratios need. Where j_l(w) and y_l(w) are representable with full
    precision (`good`, a prefix of the orders: j_l falls and y_l grows above l ~ |w|) they come
    from scipy's values, so that D^j and C share the same j_l (near a zero of j_l both are
    large, consistently; the ratio recurrences lose relative precision there); above, from
    the ratio recurrences of `bessel_ratios`, which are accurate where l > |w|."""
    w = np.atleast_1d(np.asarray(w, dtype=np.complex128))
    l = np.arange(order + 1)[:, None]
    with np.errstate(all="ignore"):
        # derivatives as scipy forms them, f_l' = f_{l-1} - (l+1)/w f_l (f_0' = -f_1)
        j_all, y_all = spherical_jn(np.arange(order + 2)[:, None], w), spherical_yn(
            np.arange(order + 2)[:, None], w)
        j, y = j_all[:-1], y_all[:-1]
        jp = np.concatenate([-j_all[1:2], j_all[:-2] - (l[1:] + 1) / w * j_all[1:-1]])
        yp = np.concatenate([-y_all[1:2], y_all[:-2] - (l[1:] + 1) / w * y_all[1:-1]])
        good = (np.isfinite(j) & np.isfinite(jp) & np.isfinite(y) & np.isfinite(yp)
                & (np.abs(j) > _TINY) & (np.abs(y) < _HUGE) & (np.abs(jp) < _HUGE)
                & (np.abs(yp) < _HUGE))
        good = np.logical_and.accumulate(good, axis=0)
        dj, dy = jp / j, yp / y
    rj = ry = None
    if not good.all():  # high orders: the ratio recurrences
        dj_r, dy_r, rj, ry = bessel_ratios(w, order)
        dj, dy = np.where(good, dj, dj_r), np.where(good, dy, dy_r)
    return {"dj": dj, "dy": dy, "j": j, "y": y, "rj": rj, "ry": ry, "good": good}


def _cross_ratio(x, z, col_x: int = 0, col_z: int = 1):
    """C_l = j_l(z) y_l(x) / (j_l(x) y_l(z)), (order + 1,): from the values where both
    arguments' values are good, then continued as a product of the order-to-order ratios
    (about (z/x)^2 per order; it underflows to 0 where the inside no longer matters).
    x, z: `_bessel_data` dicts, columns col_x and col_z."""
    good = x["good"][:, col_x] & z["good"][:, col_z]
    with np.errstate(all="ignore"):
        direct = (z["j"][:, col_z] * x["y"][:, col_x]) / (x["j"][:, col_x] * z["y"][:, col_z])
    out = np.where(good, direct, 0.0 + 0.0j)
    if not good.all():
        first_bad = int(np.argmin(good))
        if first_bad == 0:  # not even l = 0 representable (|Im w| beyond ~575)
            raise InputError("layered sphere series: spherical Bessel functions of order 0 "
                              "overflow (a layer's absorption times size is too large)")
        with np.errstate(all="ignore"):
            factors = ((x["rj"][first_bad:, col_x] * z["ry"][first_bad:, col_z])
                       / (z["rj"][first_bad:, col_z] * x["ry"][first_bad:, col_x]))
            out[first_bad:] = direct[first_bad - 1] * np.cumprod(factors)
    return out


def admittance(k, radii, layers, core, order: int):
    """(N, D), each (order + 1,) complex: the normalised radial admittance Y_l = N_l / D_l =
    (1/(g k)) p_l'/p_l just inside the outer surface r = a_0, orders 0..order (checked
    arguments from `_structure`; max(|N|, |D|) = 1)."""
    ones = np.ones(order + 1, dtype=np.complex128)
    a_core = radii[-1]
    if core == "rigid":
        n, d = 0.0 * ones, ones
    elif core == "pressure_release":
        n, d = ones, 0.0 * ones
    else:
        g_c, h_c = core
        n, d = _bessel_data([k * a_core / h_c], order)["dj"][:, 0] / (g_c * h_c), ones
    for j in range(len(layers) - 1, -1, -1):
        g, h = layers[j]
        gh = g * h
        x, z = k * radii[j] / h, k * radii[j + 1] / h
        data = _bessel_data([x, z], order)
        dj, dy = data["dj"], data["dy"]
        cross = _cross_ratio(data, data)
        with np.errstate(all="ignore"):
            # t = tn / td = (Lambda(z) - D^j(z)) / (D^y(z) - Lambda(z)), Lambda(z) = gh N / D
            tn = gh * n - dj[:, 1] * d
            td = dy[:, 1] * d - gh * n
            n_new = (td * dj[:, 0] + tn * cross * dy[:, 0]) / gh
            d_new = td + tn * cross
            # a non-finite t C (0 * inf far above both arguments, or an exact zero of a
            # Bessel function): there the inside no longer matters, or it is measure zero
            lost = ~np.isfinite(tn * cross)
            n_new = np.where(lost, dj[:, 0] / gh, n_new)
            d_new = np.where(lost, 1.0, d_new)
            scale = np.maximum(np.abs(n_new), np.abs(d_new))
            scale = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
        n, d = n_new / scale, d_new / scale
    return n, d


def _layered_coefficients(radii, layers, core, k):
    """coefficients(l, ka) -> c_l = (D j_l' - N j_l) / (D h_l' - N h_l) at ka = k a_0."""
    cache = []  # [(N, D)] up to the highest order asked so far (lower orders do not change)

    def coefficients(l, ka):
        l = np.asarray(l)
        top = int(l.max()) if l.size else 0
        if not cache or len(cache[0][0]) <= top:
            cache[:] = [admittance(k, radii, layers, core, top)]
        n, d = cache[0]
        n, d = n[l], d[l]
        with np.errstate(all="ignore"):
            j, jp = spherical_jn(l, ka), spherical_jn(l, ka, True)
            y, yp = spherical_yn(l, ka), spherical_yn(l, ka, True)
            numerator = d * jp - n * j
            return _series.hankel_ratio(numerator, numerator, d * yp - n * y)

    return coefficients


def reflection_coefficients(k, radii, layers, core, order: int) -> np.ndarray:
    """c_l, l = 0..order, (order + 1,) complex: F = (i/k) sum (2l+1) c_l P_l(cos gamma)."""
    k = _validate.positive("k", k)
    r, layers, core = _structure(radii, layers, core)
    return _layered_coefficients(r, layers, core, k)(np.arange(int(order) + 1), k * r[0])


def far_field(k, radii, layers, core, incident_direction, directions,
              center=(0.0, 0.0, 0.0), tol: float = 1e-15) -> np.ndarray:
    """Far-field amplitude F(xhat) in metres of the layered sphere, (n,) complex.

    k: the medium's wavenumber (rad/m, > 0); radii (a_0 >= ... >= a_N, m), layers
    [(g_j, h_j)] (len(radii) - 1 of them, outermost first) and core ("rigid",
    "pressure_release" or (g_c, h_c)) as in the module docstring, ratios relative to the
    surrounding medium, h complex for absorption; incident_direction d, directions (n, 3)
    xhat, center c and tol as rigid_sphere.far_field."""
    k = _validate.positive("k", k)
    r, layers, core = _structure(radii, layers, core)
    d = _validate.unit_vector("incident_direction", incident_direction)
    c = _validate.vector3("center", center)
    xhat = _validate.unit_vectors("directions", directions)
    return _series.series_far_field(_layered_coefficients(r, layers, core, k), k, r[0], d,
                                    xhat, c, tol)


def monostatic_far_field(k, radii, layers, core, incident_directions,
                         center=(0.0, 0.0, 0.0), tol: float = 1e-15) -> np.ndarray:
    """Backscatter F(-d) for each incident direction d of (n, 3) (normalised here), (n,)
    complex: F_0(-z; z) exp(2ik d.c), arguments as `far_field`."""
    k = _validate.positive("k", k)
    c = _validate.vector3("center", center)
    d = _validate.unit_vectors("incident_directions", incident_directions)
    f0 = far_field(k, radii, layers, core, (0.0, 0.0, 1.0), [(0.0, 0.0, -1.0)], tol=tol)[0]
    return f0 * np.exp(2j * k * (d @ c))


def target_strength(frequencies_hz, radii, layers, core, sound_speed: float) -> np.ndarray:
    """Backscatter TS = 20 log10 |F(-d)| (dB re 1 m^2) at each frequency (Hz) in a medium of
    sound speed `sound_speed` (m/s)."""
    f = np.atleast_1d(np.asarray(frequencies_hz, dtype=np.float64))
    c = _validate.positive("sound_speed", sound_speed)
    return np.array([20.0 * np.log10(np.abs(monostatic_far_field(
        2.0 * np.pi * fi / c, radii, layers, core, [(0.0, 0.0, 1.0)])[0])) for fi in f])


def _print_benchmark(csv_path: str | None = None,
                     frequencies_khz=(12, 38, 70, 120, 200, 300, 400)) -> None:
    """Print the TS of the Jech et al. (2015) benchmark shells at a few frequencies and, given
    echoSMs' Benchmark_Frequency_TS.csv (or tests/reference/data/jech2015_sphere_ts.csv),
    the largest difference from it over all its frequencies."""
    shells = jech2015_shells()
    c = JECH2015_MEDIUM["sound_speed"]
    print("TS (dB re 1 m^2), backscatter")
    print("f (kHz) " + " ".join(f"{name:>29s}" for name in shells))
    for f in frequencies_khz:
        ts = [target_strength(1e3 * f, *shell, c)[0] for shell in shells.values()]
        print(f"{f:7g} " + " ".join(f"{value:29.2f}" for value in ts))
    if csv_path:
        with open(csv_path) as stream:
            lines = [line for line in stream if not line.startswith("#")]
        data = np.genfromtxt(lines, delimiter=",", names=True)
        for name, shell in shells.items():
            diff = target_strength(1e3 * data["Frequency_kHz"], *shell, c) - data[name]
            i = int(np.argmax(np.abs(diff)))
            print(f"{name}: max |series - benchmark| = {abs(diff[i]):.3f} dB (at "
                  f"{data['Frequency_kHz'][i]:g} kHz), RMS {np.sqrt(np.mean(diff**2)):.4f} dB "
                  f"over {len(diff)} frequencies")


if __name__ == "__main__":
    import sys

    _print_benchmark(sys.argv[1] if len(sys.argv) > 1 else None)
