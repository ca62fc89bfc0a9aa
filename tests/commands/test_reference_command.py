"""`wavescat reference` writes the exact sphere far field in the contract's farfield.csv format."""
import json

import numpy as np
import pytest

from wavescat.cli import main
from wavescat.problem.farfield import receiver_directions
from wavescat.reference import fluid_sphere, impedance_sphere, pressure_release_sphere
from wavescat.reference.rigid_sphere import far_field
from wavescat.solve.records import FARFIELD_HEADER, read_farfield_csv

CASE = {"geometry": {"kind": "sphere", "radius": 0.5, "center": [0.2, 0.0, 0.0]},
        "frequencies_hz": [300.0, 600.0], "incident": {"direction": [0.0, 0.0, 1.0]},
        "receivers": {"plane": "xy", "count": 7}}


def test_reference_csv_matches_series(tmp_path):
    out = tmp_path / "reference_farfield.csv"
    rc = main(["reference", "--case", json.dumps(CASE), "--medium",
               json.dumps({"sound_speed": 1500.0, "density": 1000.0}), "--out", str(out)])
    assert rc == 0
    assert out.read_text().splitlines()[0] == ",".join(FARFIELD_HEADER)
    table = read_farfield_csv(out)
    assert len(table["F"]) == 2 * 7
    assert np.allclose(table["phi_deg"][:7], np.linspace(0, 360, 7))
    assert np.allclose(table["theta_deg"], 90.0)
    rec = receiver_directions(CASE["receivers"])
    for i, f in enumerate(CASE["frequencies_hz"]):
        k = 2 * np.pi * f / 1500.0
        exact = far_field(k, 0.5, [0, 0, 1], rec.vectors, center=[0.2, 0, 0])
        assert np.allclose(table["F"][7 * i:7 * (i + 1)], exact, rtol=1e-12, atol=0)
        assert np.allclose(table["ts_db"][7 * i:7 * (i + 1)], 20 * np.log10(abs(exact)), atol=1e-5)


def test_reference_refuses_non_sphere(tmp_path, capsys):
    case = dict(CASE, geometry={"kind": "box", "size": [1, 1, 1], "center": [0, 0, 0]})
    out = tmp_path / "ref.csv"
    rc = main(["reference", "--case", json.dumps(case), "--medium",
               json.dumps({"sound_speed": 1500.0}), "--out", str(out)])
    assert rc == 2 and not out.exists()
    assert "needs a sphere" in capsys.readouterr().err


def _reference(tmp_path, case):
    out = tmp_path / "reference_farfield.csv"
    rc = main(["reference", "--case", json.dumps(case), "--medium",
               json.dumps({"sound_speed": 1500.0, "density": 1000.0}), "--out", str(out)])
    assert rc == 0
    return read_farfield_csv(out)


def test_monostatic_reference_is_backscatter_per_aspect(tmp_path):
    """An aspect sweep: one row per frequency and aspect angle a, at the sonar direction
    xhat(a) (the BEM's monostatic rows), holding the series' F(xhat; d = -xhat)."""
    case = dict(CASE, incident={"aspect": {"plane": "xy", "start_deg": 0.0, "stop_deg": 360.0,
                                           "count": 5}},
                receivers={"plane": "xz", "count": 361})
    table = _reference(tmp_path, case)
    aspect = np.linspace(0.0, 360.0, 5)
    assert len(table["F"]) == 2 * 5
    assert np.allclose(table["theta_deg"], 90.0)
    assert np.allclose(table["phi_deg"], np.tile(aspect % 360.0, 2))
    xhat = np.stack([np.cos(np.radians(aspect)), np.sin(np.radians(aspect)), 0 * aspect], axis=1)
    for i, f in enumerate(CASE["frequencies_hz"]):
        k = 2 * np.pi * f / 1500.0
        exact = [far_field(k, 0.5, -x, [x], center=[0.2, 0, 0])[0] for x in xhat]
        assert np.allclose(table["F"][5 * i:5 * (i + 1)], exact, rtol=1e-12, atol=0)


def test_reference_rows_match_the_bem_table_layout(tmp_path):
    """Rows of the reference and of the BEM's farfield.csv (solve.records) line up."""
    from wavescat.problem.farfield import incident_directions
    from wavescat.solve.records import farfield_rows

    for incident in ({"aspect": {"plane": "xz", "start_deg": -30.0, "stop_deg": 200.0,
                                 "count": 4}},
                     {"directions": [[1.0, 0.0, 0.0], [0.0, 0.0, -1.0]]}):
        case = dict(CASE, incident=incident)
        table = _reference(tmp_path, case)
        inc = incident_directions(incident)
        rec = receiver_directions(case["receivers"])
        bem = []
        for f in CASE["frequencies_hz"]:
            solution = {"frequency_hz": f, "incident_directions": inc.directions,
                        "receivers": {"theta_deg": rec.theta_deg, "phi_deg": rec.phi_deg},
                        "far_field": np.zeros((len(inc.directions), len(rec.vectors)))}
            if inc.monostatic:
                solution["monostatic_far_field"] = np.zeros(len(inc.directions))
            bem += farfield_rows(solution)
        bem = np.array(bem, dtype=float)
        assert np.array_equal(table["frequency_hz"], bem[:, 0])
        assert np.allclose(table["theta_deg"], bem[:, 1], atol=1e-9)
        assert np.allclose(table["phi_deg"], bem[:, 2], atol=1e-9)


def test_reference_with_several_incidence_directions(tmp_path):
    """Several directions: per frequency, each direction's receivers in turn."""
    dirs = [[1.0, 0.0, 0.0], [0.0, 0.6, 0.8]]
    table = _reference(tmp_path, dict(CASE, incident={"directions": dirs}))
    rec = receiver_directions(CASE["receivers"])
    assert len(table["F"]) == 2 * 2 * 7
    block = 0
    for f in CASE["frequencies_hz"]:
        k = 2 * np.pi * f / 1500.0
        for d in dirs:
            exact = far_field(k, 0.5, d, rec.vectors, center=[0.2, 0, 0])
            assert np.allclose(table["F"][7 * block:7 * (block + 1)], exact, rtol=1e-12, atol=0)
            assert np.allclose(table["phi_deg"][7 * block:7 * (block + 1)], rec.phi_deg)
            block += 1


@pytest.mark.parametrize("boundary, series", [
    ({"kind": "pressure_release"}, lambda k, x: pressure_release_sphere.far_field(
        k, 0.5, [0, 0, 1], x, center=[0.2, 0, 0])),
    ({"kind": "impedance", "admittance": [0.5, -1.0]}, lambda k, x: impedance_sphere.far_field(
        k, 0.5, [0, 0, 1], x, center=[0.2, 0, 0], admittance=0.5 - 1.0j)),
    ({"kind": "fluid", "density": 1500.0, "sound_speed_ratio": 1.2},  # density over the medium's
     lambda k, x: fluid_sphere.far_field(k, 0.5, [0, 0, 1], x, center=[0.2, 0, 0],
                                         density_ratio=1.5, sound_speed_ratio=1.2)),
])
def test_reference_follows_the_boundary_condition(tmp_path, boundary, series):
    table = _reference(tmp_path, dict(CASE, boundary=boundary))
    rec = receiver_directions(CASE["receivers"])
    for i, f in enumerate(CASE["frequencies_hz"]):
        exact = series(2 * np.pi * f / 1500.0, rec.vectors)
        assert np.allclose(table["F"][7 * i:7 * (i + 1)], exact, rtol=1e-12, atol=0)
        rigid = far_field(2 * np.pi * f / 1500.0, 0.5, [0, 0, 1], rec.vectors, center=[0.2, 0, 0])
        assert not np.allclose(exact, rigid, rtol=0.05)
