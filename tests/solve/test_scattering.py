"""Sound-hard scattering end to end on small meshes: exact sphere series, iteration counts,
reciprocity, far field as the limit of the potential, non-convergence."""
import math

import numpy as np
import pytest

from wavescat import farfield
from wavescat.errors import SolverError
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import rigid_sphere
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh

C = 1500.0
MEDIUM = {"sound_speed": C}


def _freq(k):
    return k * C / (2 * math.pi)


def _case(**kw):
    case = {"incident": {"direction": [0.0, 0.0, 1.0]}, "receivers": {"plane": "xz", "count": 181},
            "solver": {"operator_format": "dense", "backend": "cpu"}}
    case.update(kw)
    return case


@pytest.fixture(scope="module")
def sphere3():
    return icosphere(3)


@pytest.mark.parametrize("ka, rel_l2, rms_db", [(2.0, 0.02, 0.1), (5.0, 0.05, 0.4)])
def test_rigid_sphere_against_series(sphere3, ka, rel_l2, rms_db):
    d = np.array([0.0, 0.6, 0.8])
    res = solve_frequency(_case(incident={"direction": d.tolist()}), MEDIUM, sphere3, _freq(ka))
    exact = rigid_sphere.far_field(ka, 1.0, d, res.receivers.vectors)
    err = farfield.far_field_errors(res.far_field[:, 0], exact)
    assert err["relative_l2_error"] < rel_l2 and err["rms_ts_error_db"] < rms_db, err
    # the surface pressure itself (vertex values) against the series
    p = rigid_sphere.surface_pressure(ka, 1.0, d, sphere3.vertices)
    assert np.linalg.norm(res.surface_pressure[:, 0] - p) < 2 * rel_l2 * np.linalg.norm(p)
    assert res.residuals.max() <= 1e-5 and set(res.timings) == {
        "assembly", "preconditioner", "solve", "far_field"}


def test_iterations_almost_independent_of_frequency():
    # fixed elements per wavelength: the edge halves as k doubles
    its = [solve_frequency(_case(), MEDIUM, icosphere(s), _freq(ka)).iterations[0]
           for s, ka in ((2, 1.0), (3, 2.0), (4, 4.0))]
    assert max(its) - min(its) <= 3 and max(its) <= 15, its


def _spheroid():
    m = icosphere(3)
    v = m.vertices * np.array([1.0, 0.6, 0.45]) + np.array([0.3, -0.2, 0.15])
    return SurfaceMesh(v, m.triangles)


def test_reciprocity_on_off_centre_spheroid():
    a = np.array([1.0, 0.3, -0.2])
    b = np.array([-0.2, 0.9, 0.4])
    a, b = a / np.linalg.norm(a), b / np.linalg.norm(b)
    theta, phi = farfield.directions_to_angles(np.array([-a, -b]))
    case = _case(incident={"directions": [a.tolist(), b.tolist()]},
                 receivers={"directions_deg": np.column_stack([theta, phi]).tolist()})
    res = solve_frequency(case, MEDIUM, _spheroid(), _freq(3.0))
    f_minus_a_for_b = res.far_field[0, 1]  # receiver -a, incidence b
    f_minus_b_for_a = res.far_field[1, 0]  # receiver -b, incidence a
    assert abs(f_minus_a_for_b - f_minus_b_for_a) < 0.01 * abs(f_minus_a_for_b)


def test_far_field_is_limit_of_potential():
    from wavescat.bem import potentials, spaces

    k = 3.0
    mesh = _spheroid()
    rec = farfield.receiver_directions({"plane": "xy", "count": 13})
    res = solve_frequency(_case(receivers={"plane": "xy", "count": 13}), MEDIUM, mesh, _freq(k))
    r = 50 * 2 * math.pi / k
    scattered = potentials.double_layer(spaces.p1(mesh), r * rec.vectors, k) @ res.surface_pressure
    limit = r * np.exp(-1j * k * r) * scattered[:, 0]
    f = res.far_field[:, 0]
    assert np.linalg.norm(limit - f) < 0.01 * np.linalg.norm(f)


def test_non_convergence_raises_with_residual(sphere3):
    case = _case(solver={"operator_format": "dense", "backend": "cpu",
                         "gmres": {"tol": 1e-12, "restart": 2, "maxiter": 3}})
    with pytest.raises(SolverError, match=r"maxiter = 3 iterations: relative residual .* at [0-9.]+ Hz"):
        solve_frequency(case, MEDIUM, icosphere(2), _freq(2.0))
