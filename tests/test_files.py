"""Result files are written atomically and get the permissions the user's umask gives."""
import json
import os
import stat

import numpy as np
import pytest

from wavescat.cli import main
from wavescat.files import atomic_path
from wavescat.solve import records


@pytest.fixture(params=[0o002, 0o027])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_results_follow_the_umask(tmp_path, umask):
    records.write_json(tmp_path / "summary.json", {"a": 1})
    case = {"geometry": {"kind": "sphere", "radius": 0.5, "center": [0, 0, 0]},
            "frequencies_hz": [300.0], "incident": {"direction": [0, 0, 1]},
            "receivers": {"plane": "xy", "count": 5}}
    assert main(["reference", "--case", json.dumps(case), "--medium",
                 json.dumps({"sound_speed": 1500.0}), "--out", str(tmp_path / "ref.csv")]) == 0
    assert main(["mesh", "--case", json.dumps({**case, "mesh": {"elements_per_wavelength": 6}}),
                 "--medium", json.dumps({"sound_speed": 1500.0}), "--mesh",
                 str(tmp_path / "mesh.msh"), "--stats", str(tmp_path / "mesh_stats.json")]) == 0
    from wavescat.timedomain.dg.scattering import write_csv_atomic
    write_csv_atomic(tmp_path / "probes.csv", ["x"], np.zeros((2, 1)))
    for name in ("summary.json", "ref.csv", "mesh.msh", "mesh_stats.json", "probes.csv"):
        assert _mode(tmp_path / name) == 0o666 & ~umask, name


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "sub" / "table.csv"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert list(target.parent.iterdir()) == []
