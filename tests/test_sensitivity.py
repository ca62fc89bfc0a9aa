"""Interior Q of fluid regions and the hypersensitivity warning (wavescat.planning.sensitivity)."""
import math

import numpy as np
import pytest

from wavescat.planning.sensitivity import (HYPERSENSITIVE_Q, Q_PER_DB, can_resonate, case_regions,
                                           geometry_size, interior_q, sensitivity_warnings,
                                           solve_preflight)
from wavescat.configuration.case import Case
from wavescat.errors import ConfigError, MeshError
from wavescat.geometry.file import FileGeometry
from wavescat.geometry.spheroid import Spheroid
from wavescat.surface import SurfaceMesh

SEA = {"density": 1026.8, "sound_speed": 1477.3}
GAS = {"kind": "fluid", "density": 1.24, "sound_speed": 345.0}
SPHEROID = {"kind": "spheroid", "semi_axes": [0.005, 0.005, 0.035]}  # 10 x 10 x 70 mm


def typed(block, name=""):
    return Case.from_dict(block, SEA, name)


def gas_case(boundary=GAS, freqs=(38_000.0,)):
    return {"geometry": SPHEROID, "boundary": dict(boundary), "frequencies_hz": list(freqs)}


def test_q_per_db_is_one_over_twice_delta():
    delta = math.log(10) / (40 * math.pi)  # one dB per wavelength
    assert Q_PER_DB == pytest.approx(1 / (2 * delta))
    assert Q_PER_DB == pytest.approx(27.29, abs=0.01)


def test_gas_spheroid_q_of_order_3500():
    (region,) = case_regions(typed(gas_case(), "gas"))
    assert region.q == pytest.approx(SEA["density"] * SEA["sound_speed"] / (1.24 * 345), rel=1e-12)
    assert 3000 < region.q < 4000
    (line,) = sensitivity_warnings(typed(gas_case(), "gas"))
    assert "cases.gas" in line and "Q of 3546" in line
    assert "absorption_db_per_wavelength" in line and "averaged over a band" in line
    assert "\n" not in line


def test_absorption_1_364_db_gives_q_20_and_no_warning():
    lossy = gas_case({**GAS, "absorption_db_per_wavelength": 1.364})
    (region,) = case_regions(typed(lossy))
    assert interior_q(1e12, 1.364) == pytest.approx(20.0, rel=1e-3)
    assert region.q == pytest.approx(1 / (1 / 3546.2 + 1 / 20.007), rel=1e-3)
    assert 19 < region.q < 20
    assert sensitivity_warnings(typed(lossy, "gas")) == []


def test_fish_flesh_does_not_warn():
    flesh = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
    case = {"geometry": {"kind": "spheroid", "semi_axes": [0.02, 0.02, 0.12]},
            "boundary": flesh, "frequencies_hz": [38_000.0, 120_000.0]}
    (region,) = case_regions(typed(case))
    assert region.q == pytest.approx(1.04 * 1.04)
    assert sensitivity_warnings(typed(case, "fish")) == []


def test_rigid_and_pressure_release_bodies_have_no_region():
    for kind in ("rigid", "pressure_release"):
        assert case_regions(typed({"geometry": SPHEROID, "boundary": {"kind": kind}})) == []


def test_small_gas_body_below_its_first_interior_resonance_does_not_warn():
    # interior wavelength 345 / 2 kHz = 17 cm, the body 1 cm wide: nothing rings
    assert sensitivity_warnings(typed(gas_case(freqs=(2000.0,)), "gas")) == []
    # a soft region (gas) rings on Neumann-like modes once its interior wavelength is 2
    # diameters or less; a hard one on Dirichlet-like modes, from 2 widths
    assert can_resonate(0.139, 1e-4, width=0.01, diameter=0.07)
    assert not can_resonate(0.141, 1e-4, width=0.01, diameter=0.07)
    assert can_resonate(0.0199, 1e4, width=0.01, diameter=0.07)
    assert not can_resonate(0.0201, 1e4, width=0.01, diameter=0.07)
    assert can_resonate(1.0, 1e-4, width=None, diameter=None)  # unknown size: assume it rings


def test_nested_bladder_against_the_flesh_around_it():
    flesh = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
    case = {"geometry": {"kind": "spheroid", "semi_axes": [0.02, 0.02, 0.12]},
            "boundary": flesh, "frequencies_hz": [38_000.0],
            "inside": [{"geometry": SPHEROID, "boundary": GAS, "inside": []}]}
    regions = case_regions(typed(case, "fish"))
    assert [r.where for r in regions] == ["cases.fish", "cases.fish.inside[0]"]
    bladder = regions[1]
    z = 1.24 * 345 / (1.04 * SEA["density"] * 1.04 * SEA["sound_speed"])
    assert bladder.impedance_ratio == pytest.approx(z)
    (line,) = sensitivity_warnings(typed(case, "fish"))
    assert "cases.fish.inside[0]" in line
    assert "cases.fish.inside[0].boundary.absorption_db_per_wavelength" in line


def test_threshold_between_q_20_and_the_gas():
    assert 20 < HYPERSENSITIVE_Q < 3546


def test_geometry_size():
    spheroid = Spheroid(semi_axes=SPHEROID["semi_axes"])
    assert geometry_size(spheroid) == pytest.approx((0.01, math.sqrt(0.01**2 * 2 + 0.07**2)))
    assert geometry_size(FileGeometry(path="x.stl")) == (None, None)
    assert geometry_size(None, [1.0, 2.0, 2.0]) == pytest.approx((1.0, 3.0))


def _octahedron(scale):
    v = scale * np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1.0]])
    t = np.array([[0, 2, 4], [2, 1, 4], [1, 3, 4], [3, 0, 4],
                  [2, 0, 5], [1, 2, 5], [3, 1, 5], [0, 3, 5]])
    return SurfaceMesh(v, t, {})


def test_solve_preflight_refuses_coarse_and_returns_q_warnings():
    fine = _octahedron(0.002)  # edges 2.8 mm: 3.2 per gas wavelength at 38 kHz
    case = {"geometry": SPHEROID, "boundary": GAS, "mesh": {}}
    coarse_inside, line = solve_preflight(typed(case, "gas"), fine, 38_000.0)
    assert coarse_inside.startswith("cases.gas: mesh coarser than 5 elements per wavelength "
                                    "of the body's interior at 38000 Hz: 3.21 (mean edge")
    assert "Q of 3546" in line
    finer = _octahedron(0.001)  # 6.4 per gas wavelength: the Q warning alone
    (line,) = solve_preflight(typed(case, "gas"), finer, 38_000.0)
    assert "Q of 3546" in line
    coarse = _octahedron(0.01)  # edges 14 mm: 0.64 per gas wavelength
    with pytest.raises(MeshError, match="the body's interior at 38000 Hz"):
        solve_preflight(typed(case, "gas"), coarse, 38_000.0)
    allowed = {**case, "mesh": {"allow_coarse": True}}
    assert len(solve_preflight(typed(allowed, "gas"), coarse, 38_000.0)) == 2


def test_a_fluid_block_without_its_constants_is_refused_when_read():
    with pytest.raises(ConfigError, match="needs exactly one of them"):
        typed({"geometry": SPHEROID, "boundary": {"kind": "fluid"}})


# -- the Q model against the exact fluid-sphere series ---------------------------------------
def _interior_power(l, f, rho, c, a, absorption=0.0):
    """|b_l|^2 of the fluid sphere's interior partial wave l (reference/fluid_sphere.py's
    b_l = (i/x^2) g h / D_l), with the interior sound speed c / (1 + i delta)."""
    from scipy.special import spherical_jn, spherical_yn

    delta = absorption * math.log(10) / (40 * math.pi)
    g, h = rho / SEA["density"], c / SEA["sound_speed"] / (1 + 1j * delta)
    x = 2 * math.pi * f / SEA["sound_speed"] * a
    x1 = x / h
    hl = spherical_jn(l, x) + 1j * spherical_yn(l, x)
    hlp = spherical_jn(l, x, True) + 1j * spherical_yn(l, x, True)
    d = g * h * spherical_jn(l, x1) * hlp - hl * spherical_jn(l, x1, True)
    return np.abs(1j / x**2 * g * h / d) ** 2


def _measured_q(l, f_guess, rho, c, a, absorption=0.0, rel=0.02):
    """(peak frequency, f / half-power width) of the resonance near f_guess, zooming in."""
    lo, hi = f_guess * (1 - rel), f_guess * (1 + rel)
    for _ in range(6):
        f = np.linspace(lo, hi, 20001)
        p = _interior_power(l, f, rho, c, a, absorption)
        i = int(np.argmax(p))
        above = f[p >= p[i] / 2]
        width = above.max() - above.min()
        lo, hi = f[i] - 5 * width, f[i] + 5 * width
    return f[i], f[i] / width


@pytest.mark.parametrize("l, root", [(0, 4.4934), (1, 2.0816), (1, 5.9404)])
def test_gas_sphere_resonances_are_neumann_modes_with_q_a_few_times_the_contrast(l, root):
    a, rho, c = 0.005, 1.24, 345.0
    f_root = root * c / (2 * math.pi * a)  # j_l'(k1 a) = 0: a rigid wall seen from inside
    f0, q = _measured_q(l, f_root, rho, c, a)
    assert f0 == pytest.approx(f_root, rel=2e-3)
    (region,) = case_regions(typed({"geometry": {"kind": "sphere", "radius": a},
                                    "boundary": {"kind": "fluid", "density": rho,
                                                 "sound_speed": c}}))
    assert 1.0 < q / region.q < 5.0  # max(Z, 1/Z): the broadest resonances' order
    # ten times the density: ten times less Q (Q ~ 1 / Z)
    _, q10 = _measured_q(l, f_root, 10 * rho, c, a)
    assert q / q10 == pytest.approx(10.0, rel=0.03)


def test_absorption_q_matches_the_lossy_gas_sphere_series():
    a, rho, c = 0.005, 1.24, 345.0
    for alpha in (1.364, 0.2):
        _, q = _measured_q(0, 4.4934 * c / (2 * math.pi * a), rho, c, a, alpha, rel=0.2)
        expected = interior_q(rho * c / (SEA["density"] * SEA["sound_speed"]), alpha)
        assert q == pytest.approx(expected, rel=0.03)


def test_a_nameless_solve_names_the_body_and_its_keys():
    flesh = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
    case = {"geometry": {"kind": "spheroid", "semi_axes": [0.02, 0.02, 0.12]}, "boundary": flesh,
            "inside": [{"geometry": SPHEROID, "boundary": GAS}]}
    (line,) = solve_preflight(typed(case), _octahedron(0.0005), 38_000.0)
    assert line.startswith("the body inside[0] (a fluid of ")
    assert "give it inside[0].boundary.absorption_db_per_wavelength" in line
    (line,) = solve_preflight(typed(gas_case()), _octahedron(0.0005), 38_000.0)
    assert line.startswith("the body (a fluid of ") and "give it boundary.absorption" in line
