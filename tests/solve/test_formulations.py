"""The formulation seam: the registry, its errors, the rigid formulation's pieces against the
exact sphere series, and what the solution records say about the formulation."""
import copy
import json
import math

import numpy as np
import pytest

from wavescat.bem import formulations
from wavescat.bem.assembly import operators
from wavescat.bem.formulations import (SoundHardBurtonMiller, boundary_from, formulation_for,
                                       formulation_of_record)
from wavescat.bem.linalg.gmres import gmres
from wavescat.configuration.case import Case, SolverSettings
from wavescat.configuration.config import prepare_config
from wavescat.errors import ConfigError, InputError, WavescatError
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import rigid_sphere
from wavescat.solve import records
from wavescat.solve.driver import solve_frequency

C = 1500.0
CONFIG = {"run": ["ball"],
          "cases": {"ball": {"geometry": {"kind": "sphere", "radius": 1.0},
                             "frequencies_hz": [200.0]}}}


def _config_with(boundary):
    cfg = copy.deepcopy(CONFIG)
    cfg["cases"]["ball"]["boundary"] = boundary
    return cfg


@pytest.mark.parametrize("boundary", [None, {}, {"kind": "rigid"}])
def test_a_default_case_gets_the_rigid_formulation(boundary):
    form = formulation_for(boundary_from(boundary))
    assert isinstance(form, SoundHardBurtonMiller) and form.kind == "rigid"
    assert form.name == "osrc_burton_miller" and form.space_kind == "P1"
    assert set(form.operators) <= set(operators.OPERATORS)
    assert formulations.FORMULATIONS["rigid"] is SoundHardBurtonMiller
    # and through the config: no boundary block, or an empty one, is a rigid body
    for cfg in (CONFIG, _config_with({})):
        case = Case.from_config(prepare_config(cfg), "ball")
        assert isinstance(formulation_for(case.boundary), SoundHardBurtonMiller)


@pytest.mark.parametrize("boundary, message", [
    ({"kind": "fluid", "density_ratio": 1.2},
     "cases.ball.boundary.sound_speed_ratio / sound_speed: boundary kind 'fluid' needs "
     "exactly one of them (neither is given)"),
    ({"kind": "impedance"}, "cases.ball.boundary.admittance: required for boundary kind "
                            "'impedance'"),
    ({"kind": "pressure_release", "admittance": [1.0, 0.0]},
     "cases.ball.boundary.admittance = [1.0, 0.0]: not a key of boundary kind 'pressure_release'"),
    ({"kind": "soft"}, "cases.ball.boundary.kind = 'soft': unknown boundary kind; must be one of "
                       "rigid, pressure_release, fluid, impedance"),
    ({"kind": "rigid", "density_ratio": 2.0},
     "cases.ball.boundary.density_ratio = 2.0: not a key of boundary kind 'rigid'"),
    ({"kind": "rigid", "colour": "red"}, "cases.ball.boundary: unknown key 'colour'"),
])
def test_unimplemented_or_unknown_boundary_stops_the_config(boundary, message):
    with pytest.raises(ConfigError) as err:
        prepare_config(_config_with(boundary))
    assert str(err.value).startswith(message)


def test_registry_errors_without_the_config():
    with pytest.raises(InputError, match=r"^density_ratio / density: "):
        boundary_from({"kind": "fluid"})
    with pytest.raises(InputError, match=r"^kind = 'hard': must be one of rigid, "):
        boundary_from({"kind": "hard"})
    # a case block is read, and refused naming the key, before any work
    with pytest.raises(ConfigError, match=r"^case.boundary.density_ratio / density: .*needs "
                                          "exactly one of them"):
        Case.from_dict({"boundary": {"kind": "fluid"}}, {"sound_speed": C})


@pytest.fixture(scope="module")
def sphere_solution():
    """The rigid formulation's own pieces, put together by hand on a small icosphere."""
    ka = 2.0
    form = formulation_for(boundary_from({"kind": "rigid"}))
    mesh = icosphere(2)
    space = form.space(mesh)
    ops = {name: operators.assemble(name, space, space, ka) for name in form.operators}
    system = form.system(space, ka, ops, SolverSettings.from_dict())
    d = np.array([[0.0, 0.0, 1.0], [0.6, 0.0, 0.8]])
    res = gmres(system.matvec, form.rhs(system, space, ka, d), tol=1e-8)
    return form, space, ka, d, res


def test_rigid_pieces_reproduce_the_sphere_series(sphere_solution):
    form, space, ka, d, res = sphere_solution
    assert res.residuals.max() <= 1e-8 and res.iterations.max() <= 7
    xhat = np.array([[np.sin(t), 0.0, np.cos(t)] for t in np.linspace(0, np.pi, 19)])
    ff = form.far_field(space, xhat, ka)
    rng = np.random.default_rng(5)
    probes = rng.standard_normal((6, 3))
    probes *= 2.0 / np.linalg.norm(probes, axis=1, keepdims=True)  # on the sphere r = 2
    pot = form.potential(space, probes, ka)
    for i, di in enumerate(d):
        p = res.x[:, i]
        exact_p = rigid_sphere.surface_pressure(ka, 1.0, di, space.mesh.vertices)
        assert np.linalg.norm(p - exact_p) < 0.03 * np.linalg.norm(exact_p)
        exact_F = rigid_sphere.far_field(ka, 1.0, di, xhat)
        assert np.linalg.norm(ff @ p - exact_F) < 0.04 * np.linalg.norm(exact_F)
        exact_s = rigid_sphere.scattered_field(ka, 1.0, di, probes)
        assert np.linalg.norm(pot @ p - exact_s) < 0.03 * np.linalg.norm(exact_s)


@pytest.mark.parametrize("kind", ["rigid", "pressure_release"])
def test_a_preconditioner_made_beside_the_assembly_is_the_same(kind):
    """start_preconditioner (the GPU driver's, factorised on a host thread while the
    operators assemble) gives the system the direct path gives, product for product."""
    ka = 2.0
    form = formulation_for(boundary_from({"kind": kind}))
    space = form.space(icosphere(2))
    settings = SolverSettings.from_dict()
    ahead = form.start_preconditioner(space, ka, settings)
    ops = {name: operators.assemble(name, space, space, ka) for name in form.operators}
    x = np.random.default_rng(2).standard_normal(space.n_dofs) + 0j
    direct = form.system(space, ka, ops, settings).matvec(x)
    beside = form.system(space, ka, ops, settings, ahead=ahead).matvec(x)
    assert np.allclose(beside, direct, rtol=1e-13, atol=1e-13 * np.abs(direct).max())
    # and the system takes the one made beside: one made for another wavenumber shows in it
    other = form.system(space, ka, ops, settings, ahead=form.start_preconditioner(space, 1.5, settings))
    assert not np.allclose(other.matvec(x), direct, rtol=1e-6)


def test_fluid_bodies_make_their_preconditioner_after_the_operators():
    assert formulation_for(boundary_from({"kind": "fluid", "density_ratio": 2.0,
                                          "sound_speed_ratio": 0.8})).start_preconditioner is None


def test_an_error_in_the_background_reaches_whoever_waits():
    from wavescat.bem.formulations.osrc import in_background

    def fail():
        raise InputError("OSRC radius = -1: must be positive")

    with pytest.raises(InputError, match="OSRC radius"):
        in_background(fail).result(timeout=30)


def test_records_carry_the_formulation(tmp_path):
    mesh = icosphere(1)
    case = {"incident": {"direction": [0.0, 0.0, 1.0]}, "receivers": {"plane": "xz", "count": 5},
            "solver": {"operator_format": "dense", "backend": "cpu"}}
    result = solve_frequency(Case.from_dict(case, {"sound_speed": C}), mesh,
                             1.0 * C / (2 * math.pi))
    assert isinstance(result.formulation, SoundHardBurtonMiller)
    records.write_solution(tmp_path / "f.h5", result, mesh, "ball")
    sol = records.read_solution(tmp_path / "f.h5")
    assert sol["formulation"] == "osrc_burton_miller" and sol["space"] == "P1"
    assert json.loads(sol["boundary"]) == {"kind": "rigid"}
    assert records.summary([sol], "ball")["formulation"] == "osrc_burton_miller"
    assert isinstance(formulation_of_record(sol), SoundHardBurtonMiller)
    # files written before the boundary attribute existed are rigid-body solutions
    del sol["boundary"]
    assert isinstance(formulation_of_record(sol), SoundHardBurtonMiller)
    sol["formulation"] = "combined_field"
    with pytest.raises(WavescatError, match="formulation 'combined_field' does not match "
                                            "boundary kind 'rigid'"):
        formulation_of_record(sol)


@pytest.mark.parametrize("operator_format", ["dense", "hmatrix"])
def test_solve_frequency_through_the_seam_on_each_backend(backend, operator_format):
    """The driver with the rigid formulation, on the CPU and (where there is one) the GPU,
    dense and H-matrix operators, against the exact series."""
    ka = 2.0
    d = np.array([0.0, 0.6, 0.8])
    case = {"incident": {"direction": d.tolist()}, "receivers": {"plane": "xz", "count": 19},
            "solver": {"operator_format": operator_format, "backend": backend.name,
                       "hmatrix": {"leaf_size": 16}}}
    res = solve_frequency(Case.from_dict(case, {"sound_speed": C}), icosphere(2),
                          ka * C / (2 * math.pi))
    assert res.backend["backend"] == backend.name and res.operator_format == operator_format
    exact = rigid_sphere.far_field(ka, 1.0, d, res.receivers.vectors)
    assert np.linalg.norm(res.far_field[:, 0] - exact) < 0.04 * np.linalg.norm(exact)
    p = rigid_sphere.surface_pressure(ka, 1.0, d, icosphere(2).vertices)
    assert np.linalg.norm(res.surface_pressure[:, 0] - p) < 0.03 * np.linalg.norm(p)
