"""Subcommands take `--case` as the workflow hands it over or as typed by hand: a bare case is
normalised through wavescat.configuration.config like the workflow's, or refused naming the key."""
import json

import numpy as np
import pytest

from wavescat.cli import main
from wavescat.configuration.config import prepare_config
from wavescat.problem.farfield import receiver_directions
from wavescat.reference.rigid_sphere import far_field
from wavescat.solve.records import read_farfield_csv


def test_bare_case_is_normalised_like_the_workflow(tmp_path):
    """A case typed by hand (no incident, no receivers) gets the workflow's defaults."""
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


@pytest.mark.parametrize("solver, message", [
    ({"ranks": 0}, "--case solver.ranks = 0: must be >= 1"),
    ({"ranks": 1.5}, "--case solver.ranks = 1.5: must be of type integer"),
    ({"ranks": 2, "operator_format": "dense"}, "--case solver.operator_format = 'dense' with 2 "
                                               "ranks: a solve over several ranks shares H-matrix"),
])
def test_solve_refuses_bad_ranks_before_it_starts(tmp_path, capsys, solver, message):
    """solver.ranks is checked where the case is read (the schema: an integer >= 1; the case's
    check: several ranks share H-matrix blocks), before any rank is started or file read."""
    out = tmp_path / "f000.h5"
    rc = main(["solve", "--case", json.dumps({"solver": solver}), "--medium", "{}",
               "--mesh", str(tmp_path / "absent.msh"), "--frequency", "300", "--out", str(out)])
    assert rc == 2 and not out.exists()
    err = capsys.readouterr().err
    assert err.startswith(f"wavescat solve: error: {message}"), err
