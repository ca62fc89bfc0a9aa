"""`wavescat reference` writes the exact sphere far field in the contract's farfield.csv format."""
import json

import numpy as np
import pytest

from wavescat.cli import main
from wavescat.farfield import receiver_directions
from wavescat.reference.rigid_sphere import far_field
from wavescat.tables import FARFIELD_HEADER, read_farfield_csv

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


def test_bare_case_is_normalised_like_the_workflow(tmp_path):
    """A case typed by hand (no incident, no receivers) gets the workflow's defaults."""
    from wavescat.config import prepare_config

    bare = {"geometry": {"kind": "sphere", "radius": 0.5}, "frequencies_hz": [300.0]}
    out = tmp_path / "reference_farfield.csv"
    assert main(["reference", "--case", json.dumps(bare), "--medium", "{}", "--out", str(out)]) == 0
    config = prepare_config({"run": ["ball"], "cases": {"ball": bare}})
    case, c = config["cases"]["ball"], config["medium"]["sound_speed"]
    rec = receiver_directions(case["receivers"])
    exact = far_field(2 * np.pi * 300.0 / c, 0.5, case["incident"]["direction"], rec.vectors,
                      center=[0, 0, 0])
    table = read_farfield_csv(out)
    assert len(table["F"]) == len(rec.vectors)
    assert np.allclose(table["F"], exact, rtol=1e-12, atol=0)


@pytest.mark.parametrize("case, medium, message", [
    ({"geometry": {"kind": "sphere", "radius": -1}, "frequencies_hz": [300]}, {},
     "--case geometry.radius = -1: must be > 0"),
    ({"geometry": {"kind": "sphere", "radius": 1}}, {}, "--case: missing required key "
                                                        "'frequencies_hz'"),
    ({"geometry": {"kind": "sphere", "radius": 1}, "frequencies_hz": [300]},
     {"sound_speed": 0}, "--medium sound_speed = 0: must be > 0"),
])
def test_bad_bare_case_names_the_key(tmp_path, capsys, case, medium, message):
    out = tmp_path / "ref.csv"
    rc = main(["reference", "--case", json.dumps(case), "--medium", json.dumps(medium),
               "--out", str(out)])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith(f"wavescat reference: error: {message}"), err
