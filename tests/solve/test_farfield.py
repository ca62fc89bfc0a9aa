"""Receiver and incidence directions per the contract, and TS."""
import numpy as np
import pytest

from wavescat.problem import farfield
from wavescat.errors import InputError


@pytest.mark.parametrize("plane, axes", [("xy", (0, 1)), ("xz", (0, 2)), ("yz", (1, 2))])
def test_plane_receivers(plane, axes):
    rec = farfield.receiver_directions({"plane": plane, "count": 361})
    a = np.radians(np.linspace(0, 360, 361))
    assert rec.vectors.shape == (361, 3) and np.allclose(rec.angle_deg, np.degrees(a))
    assert np.allclose(rec.vectors[:, axes[0]], np.cos(a)) and np.allclose(rec.vectors[:, axes[1]], np.sin(a))
    assert np.allclose(farfield.angles_to_directions(rec.theta_deg, rec.phi_deg), rec.vectors)


def test_xy_plane_keeps_phi_equal_to_angle():
    rec = farfield.receiver_directions({"plane": "xy", "count": 5})
    assert np.allclose(rec.phi_deg, [0, 90, 180, 270, 360]) and np.allclose(rec.theta_deg, 90)


def test_listed_receivers_and_angle_round_trip():
    rec = farfield.receiver_directions({"directions_deg": [[0, 0], [90, 45], [180, 10]]})
    assert np.allclose(rec.vectors[1], [np.sqrt(0.5), np.sqrt(0.5), 0])
    t, p = farfield.directions_to_angles(rec.vectors)
    assert np.allclose(t, [0, 90, 180]) and np.allclose(p, [0, 45, 0])


def test_incidence_modes():
    inc = farfield.incident_directions({"direction": [0, 0, 2]})
    assert np.allclose(inc.directions, [[0, 0, 1]]) and not inc.monostatic
    inc = farfield.incident_directions({"directions": [[1, 0, 0], [0, 3, 0]]})
    assert np.allclose(inc.directions, np.eye(3)[:2])
    inc = farfield.incident_directions({"aspect": {"plane": "xy", "start_deg": 0, "stop_deg": 90,
                                                   "count": 3}})
    assert inc.monostatic and np.allclose(inc.aspect_deg, [0, 45, 90])
    # the sonar sits at xhat(a); the wave travels along -xhat(a)
    assert np.allclose(inc.directions[2], [0, -1, 0], atol=1e-15)
    with pytest.raises(InputError, match="incident"):
        farfield.incident_directions({"direction": [0, 0, 1], "directions": [[1, 0, 0]]})
    with pytest.raises(InputError, match="plane = 'xw'"):
        farfield.incident_directions({"aspect": {"plane": "xw", "count": 3}})


def test_target_strength_and_errors():
    assert np.allclose(farfield.target_strength([1.0, 0.1j, 10.0]), [0, -20, 20])
    e = farfield.far_field_errors([1.0, 1.0], [1.0, 1.0])
    assert e["rms_ts_error_db"] == 0 and e["relative_l2_error"] == 0
