"""The concentric-sphere series against its limits (no layers, zero thickness, a shell of the
medium, equal materials), a direct solve of the interface conditions, the optical theorem,
absorption, high orders, the zero of j_l that a thin shell meets, and the Jech et al. (2015)
benchmark TS (echoSMs' Benchmark_Frequency_TS.csv, tests/reference/data)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.special import spherical_jn, spherical_yn

from wavescat.bem.formulations import boundary_from
from wavescat.errors import InputError
from wavescat.problem.medium import Medium
from wavescat.reference import fluid_sphere as fluid
from wavescat.reference import layered_sphere as layered
from wavescat.reference import pressure_release_sphere as soft
from wavescat.reference import rigid_sphere as rigid
from wavescat.reference.absorption import complex_sound_speed_ratio

_spec = importlib.util.spec_from_file_location(
    "rigid_sphere_tests", Path(__file__).with_name("test_rigid_sphere.py"))
_rigid_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_rigid_tests)
sphere_quadrature = _rigid_tests.sphere_quadrature

D, C = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0]), np.array([0.4, 0.1, -0.7])
XHAT = np.random.default_rng(7).normal(size=(9, 3))
XHAT /= np.linalg.norm(XHAT, axis=1)[:, None]
GAS = (0.0012, 0.23)
SHELL = (1.04, 1.06)
LOSSY = (2.0, complex_sound_speed_ratio(0.8, 3.0))
DATA = Path(__file__).with_name("data") / "jech2015_sphere_ts.csv"


def homogeneous(core, k, a, d=D, xhat=XHAT, center=C):
    """The homogeneous sphere's series (rigid_sphere, pressure_release_sphere, fluid_sphere)."""
    if core == "rigid":
        return rigid.far_field(k, a, d, xhat, center=center)
    if core == "pressure_release":
        return soft.far_field(k, a, d, xhat, center=center)
    return fluid.far_field(k, a, d, xhat, center=center, density_ratio=core[0],
                           sound_speed_ratio=core[1])


def close(f, ref, rel=1e-11):
    return np.max(np.abs(f - ref)) <= rel * np.max(np.abs(ref))


CORES = ["rigid", "pressure_release", GAS, (1.5, 1.2), LOSSY]
CORE_IDS = ["rigid", "soft", "gas", "fluid", "lossy"]


@pytest.mark.parametrize("core", CORES, ids=CORE_IDS)
@pytest.mark.parametrize("ka", [1e-3, 0.4, 7.0, 40.0])
def test_limits(core, ka):
    """No layers: the homogeneous sphere. A layer of zero thickness (outside or between two
    layers): nothing. A shell of the medium's material (g = h = 1): the bare core. A shell of
    the core's material: one homogeneous sphere of the outer radius."""
    a = 1.3
    k = ka / a
    ref = homogeneous(core, k, a)
    assert close(layered.far_field(k, (a,), [], core, D, XHAT, center=C), ref)
    assert close(layered.far_field(k, (a, a), [SHELL], core, D, XHAT, center=C), ref)
    assert close(layered.far_field(k, (a, a, a), [GAS, LOSSY], core, D, XHAT, center=C), ref)
    assert close(layered.far_field(k, (2.1 * a, a), [(1.0, 1.0)], core, D, XHAT, center=C), ref,
                 rel=1e-10)
    # a shell between two other layers with zero thickness changes nothing
    three = layered.far_field(k, (a, 0.9 * a, 0.9 * a, 0.5 * a), [SHELL, GAS, LOSSY], core, D,
                              XHAT, center=C)
    two = layered.far_field(k, (a, 0.9 * a, 0.5 * a), [SHELL, LOSSY], core, D, XHAT, center=C)
    assert close(three, two)
    if not isinstance(core, str):
        assert close(layered.far_field(k, (a, 0.37 * a), [core], core, D, XHAT, center=C), ref)
        # splitting a layer in two of the same material changes nothing
        split = layered.far_field(k, (a, 0.8 * a, 0.5 * a), [SHELL, SHELL], core, D, XHAT,
                                  center=C)
        whole = layered.far_field(k, (a, 0.5 * a), [SHELL], core, D, XHAT, center=C)
        assert close(split, whole)


def direct_coefficients(k, radii, layers, core, orders):
    """c_l from one linear system per order: p and (1/rho) p' continuous at every interface,
    p = j_l - c_l h_l outside, A_j j_l + B_j y_l in layer j, E j_l in a fluid core (or the
    rigid / soft condition at the core's surface)."""
    n_layers = len(layers)
    out = []
    for l in orders:
        size = 1 + 2 * n_layers + (0 if isinstance(core, str) else 1)
        m = np.zeros((2 * n_layers + 2, size), complex)
        rhs = np.zeros(2 * n_layers + 2, complex)
        row = 0
        regions = [(1.0, 1.0)] + list(layers)
        for i, r in enumerate(radii):
            # outside of interface i: region i (0 = medium), inside: region i + 1 (or core)
            g_out, h_out = regions[i]
            kappa = k / h_out
            for deriv, scale in ((False, 1.0), (True, kappa / g_out)):
                if i == 0:
                    hank = (spherical_jn(l, k * r, deriv) + 1j * spherical_yn(l, k * r, deriv))
                    m[row, 0] = -scale * hank  # p_out = j - c h: -c h - p_in = -j
                    rhs[row] = -scale * spherical_jn(l, k * r, deriv)
                else:
                    col = 1 + 2 * (i - 1)
                    m[row, col] = scale * spherical_jn(l, kappa * r, deriv)
                    m[row, col + 1] = scale * spherical_yn(l, kappa * r, deriv)
                if i < n_layers:
                    g_in, h_in = layers[i]
                    kin = k / h_in
                    col = 1 + 2 * i
                    s_in = 1.0 if not deriv else kin / g_in
                    m[row, col] = -s_in * spherical_jn(l, kin * r, deriv)
                    m[row, col + 1] = -s_in * spherical_yn(l, kin * r, deriv)
                elif not isinstance(core, str):
                    g_in, h_in = core
                    kin = k / h_in
                    s_in = 1.0 if not deriv else kin / g_in
                    m[row, size - 1] = -s_in * spherical_jn(l, kin * r, deriv)
                row += 1
        if isinstance(core, str):  # at the core: only p' = 0 (rigid) or p = 0 (soft)
            drop = row - 2 if core == "rigid" else row - 1
            keep = [r for r in range(row) if r != drop]
            m, rhs = m[keep], rhs[keep]
        out.append(np.linalg.solve(m, rhs)[0])
    return np.array(out)


@pytest.mark.parametrize("core", CORES, ids=CORE_IDS)
def test_direct_solve_of_the_interface_conditions(core):
    """Two layers (one absorbing) around each core, at ka = 12: the recursion agrees with a
    direct linear solve of the interface conditions order by order."""
    k, radii, layers = 12.0, (1.0, 0.85, 0.6), [SHELL, (0.9, complex_sound_speed_ratio(1.3, 1.0))]
    expected = direct_coefficients(k, radii, layers, core, range(31))
    got = layered.reflection_coefficients(k, radii, layers, core, 30)
    assert np.allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("ka", [0.5, 5.0, 30.0])
@pytest.mark.parametrize("case", [
    ((1.0, 0.9), [(1070 / 1026.8, 1570 / 1477.3)], (1.24 / 1026.8, 345 / 1477.3)),
    ((1.0, 0.7, 0.3), [(1.5, 0.7), (0.01, 0.3)], "rigid"),
    ((1.0, 0.95), [(0.5, 2.0)], "pressure_release")], ids=["gas_shell", "three", "soft"])
def test_optical_theorem(ka, case):
    """Lossless layers: (4 pi / k) Im F(d) = sigma_s."""
    radii, layers, core = case
    k = ka / radii[0]
    order = int(ka + 4 * np.cbrt(ka) + 25)
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    sigma = np.sum(w * np.abs(layered.far_field(k, radii, layers, core, D, dirs, center=C)) ** 2)
    forward = layered.far_field(k, radii, layers, core, D, [D], center=C)[0]
    assert sigma == pytest.approx(4 * np.pi / k * forward.imag, rel=1e-9)


@pytest.mark.parametrize("where", ["shell", "core"])
def test_absorption_makes_extinction_exceed_scattering(where):
    """An absorbing shell or core takes power out of the wave: sigma_ext > sigma_s, by more
    the more it absorbs, and the lossless limit is continuous."""
    ka, radii = 6.0, (1.0, 0.8)
    k = ka
    order = int(ka / 0.6 + 4 * np.cbrt(ka) + 25)
    dirs, w = sphere_quadrature(order + 2, 2 * order + 4)
    gaps = []
    for alpha in (0.0, 1e-9, 0.5, 3.0):
        h = complex_sound_speed_ratio(0.6, alpha)
        layers, core = ([(1.2, h)], (2.0, 0.9)) if where == "shell" else ([(1.2, 0.9)], (2.0, h))
        sigma = np.sum(w * np.abs(layered.far_field(k, radii, layers, core, D, dirs)) ** 2)
        ext = 4 * np.pi / k * layered.far_field(k, radii, layers, core, D, [D])[0].imag
        gaps.append((ext - sigma) / ext)
    assert abs(gaps[0]) < 1e-10 and abs(gaps[1]) < 1e-7
    assert 1e-3 < gaps[2] < gaps[3] < 1


def test_a_zero_of_j_in_the_shell_is_smooth():
    """The benchmark gas shell at 314 kHz: the shell's kappa a is exactly 4 pi there (j_0 = 0),
    a point where a transfer through ratios of j_l's loses all digits; TS must be smooth."""
    radii, layers, core = layered.jech2015_shells()["ShellSphere_Gas"]
    c = layered.JECH2015_MEDIUM["sound_speed"]
    ts = layered.target_strength([313999.5, 314000.0, 314000.5], radii, layers, core, c)
    assert abs(ts[1] - 0.5 * (ts[0] + ts[2])) < 1e-4


def test_high_orders():
    """ka = 200 around a core of k a_N = 10: orders up to ~240, where y_l(10) overflows and the
    transfer continues by ratios; a layer of the medium leaves the core's own series. A thin
    shell at ka = 300 against the direct solve (orders up to 330)."""
    k = 200.0
    ref = homogeneous((1.5, 1.2), k, 0.05)
    got = layered.far_field(k, (1.0, 0.05), [(1.0, 1.0)], (1.5, 1.2), D, XHAT, center=C)
    assert close(got, ref, rel=1e-9)
    k, radii, layers, core = 300.0, (1.0, 0.99), [SHELL], GAS
    orders = np.arange(0, 331, 15)
    got = layered.reflection_coefficients(k, radii, layers, core, 330)[orders]
    assert np.allclose(got, direct_coefficients(k, radii, layers, core, orders), rtol=0,
                       atol=1e-10)


def test_jech2015_benchmark():
    """The three benchmark shells (1 mm on 10 mm; echoSMs' definitions) agree with the
    benchmark TS (given to 0.01 dB) within rounding, at every sixth frequency of 12-400 kHz."""
    data = np.genfromtxt(DATA, delimiter=",", names=True, skip_header=3)[::6]
    c = layered.JECH2015_MEDIUM["sound_speed"]
    for name, shell in layered.jech2015_shells().items():
        ts = layered.target_strength(1e3 * data["Frequency_kHz"], *shell, c)
        assert np.max(np.abs(ts - data[name])) <= 0.0051, name


def test_monostatic_matches_bistatic():
    k, radii, layers, core = 5.0, (0.6, 0.5), [SHELL], LOSSY
    dirs = np.random.default_rng(1).normal(size=(6, 3))
    dirs /= np.linalg.norm(dirs, axis=1)[:, None]
    expected = [layered.far_field(k, radii, layers, core, d, [-d], center=C)[0] for d in dirs]
    assert np.allclose(layered.monostatic_far_field(k, radii, layers, core, dirs, center=C),
                       expected, rtol=1e-13)


@pytest.mark.parametrize("radii, layers, core, message", [
    ((1.0,), [SHELL], "rigid", r"radii = \[1.0\]: needs len\(layers\) \+ 1 = 2"),
    ((0.5, 1.0), [SHELL], "rigid", r"non-increasing"),
    ((1.0, 0.0), [SHELL], "rigid", r"> 0"),
    ((1.0,), [], "hard", r"core = 'hard': must be 'rigid', 'pressure_release' or a fluid"),
    ((1.0, 0.5), [(1.0,)], "rigid", r"layers\[0\] = \(1.0,\): must be a pair"),
    ((1.0, 0.5), [(1.0, 1.0 + 0.1j)], "rigid", r"layers\[0\] sound_speed_ratio .* imaginary"),
    ((1.0,), [], (-1.0, 1.0), r"core density_ratio = -1.0"),
])
def test_argument_errors(radii, layers, core, message):
    with pytest.raises(InputError, match=message):
        layered.far_field(1.0, radii, layers, core, D, XHAT)


def test_bessel_ratios():
    """The recurrences of the high orders against scipy where both are representable
    (real and complex arguments, below and above the order)."""
    w = np.array([0.7, 5.3, 20.0, 13.0 + 0.8j, 40.0 + 4.0j])
    order = 45
    dj, dy, rj, ry = layered.bessel_ratios(w, order)
    l = np.arange(order + 1)[:, None]
    assert np.allclose(dj, spherical_jn(l, w, True) / spherical_jn(l, w), rtol=1e-12, atol=0)
    assert np.allclose(dy, spherical_yn(l, w, True) / spherical_yn(l, w), rtol=1e-12, atol=0)
    assert np.allclose(rj[1:], spherical_jn(l[:-1], w) / spherical_jn(l[1:], w), rtol=1e-12)
    assert np.allclose(ry[1:], spherical_yn(l[:-1], w) / spherical_yn(l[1:], w), rtol=1e-12)


def test_layers_from_boundaries():
    """A chain of nested boundary blocks (outermost first) as (layers, core): ratios or
    absolute values over the medium, absorption making h complex, a rigid or pressure-release
    block only last, messages naming the block."""
    medium = Medium(**layered.JECH2015_MEDIUM)

    def layers(blocks, where=None):
        return layered.layers_from_boundaries([boundary_from(b, medium) for b in blocks], where)

    blocks = [{"kind": "fluid", "density": 1070.0, "sound_speed": 1570.0},
              {"kind": "fluid", "density_ratio": 1.2, "sound_speed_ratio": 0.9},
              {"kind": "fluid", "density": 1.24, "sound_speed": 345.0,
               "absorption_db_per_wavelength": 1.36}]
    shells, core = layers(blocks)
    assert shells == [(1070.0 / 1026.8, 1570.0 / 1477.3), (1.2, 0.9)]
    assert core == (1.24 / 1026.8, complex_sound_speed_ratio(345.0 / 1477.3, 1.36))
    assert layers(blocks[:1] + [{"kind": "rigid"}]) == (
        [(1070.0 / 1026.8, 1570.0 / 1477.3)], "rigid")
    radii, shell, soft_core = layered.jech2015_shells()["ShellSphere_PressureRelease"]
    assert (shell, soft_core) == layers(
        [{"kind": "fluid", "density": 1028.9, "sound_speed": 1480.3},
         {"kind": "pressure_release"}])
    with pytest.raises(InputError, match=r"cases.f.inside\[0\].boundary.kind = 'rigid': .* "
                                         r"must be fluid \(it has bodies inside\)"):
        layers([blocks[0], {"kind": "rigid"}, blocks[2]],
               ["cases.f.boundary", "cases.f.inside[0].boundary",
                "cases.f.inside[0].inside[0].boundary"])
    with pytest.raises(InputError, match=r"boundaries\[1\].kind = 'impedance'"):
        layers([blocks[0], {"kind": "impedance", "admittance": [1, 0]}])
