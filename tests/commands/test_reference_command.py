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
