"""`wavescat mesh`: writes a meshio-readable .msh and JSON statistics, atomically."""
import json

import meshio
import numpy as np

from wavescat.cli import main
from wavescat.surface import SurfaceMesh

MEDIUM = json.dumps({"sound_speed": 1500.0, "density": 1000.0})


def args(case, out):
    return ["mesh", "--case", json.dumps(case), "--medium", MEDIUM,
            "--mesh", str(out / "m" / "mesh.msh"), "--stats", str(out / "m" / "stats.json")]


def test_mesh_command_writes_mesh_and_stats(tmp_path):
    case = {"geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [500.0, 1000.0],
            "mesh": {"elements_per_wavelength": 6, "max_element_size": None,
                     "curvature_refinement": 0}}
    assert main(args(case, tmp_path) + ["--name", "ball"]) == 0
    stats = json.loads((tmp_path / "m" / "stats.json").read_text())
    assert stats["case"] == "ball" and stats["h_requested"] == 0.25
    for key in ("elements", "vertices", "edge_length_min", "edge_length_max", "edge_length_mean",
                "min_angle_deg", "area", "enclosed_volume", "meshing_time_s"):
        assert key in stats
    raw = meshio.read(tmp_path / "m" / "mesh.msh")
    assert raw.cells[0].type == "triangle" and len(raw.cells[0].data) == stats["elements"]
    mesh = SurfaceMesh.from_file(tmp_path / "m" / "mesh.msh")
    assert mesh.enclosed_volume == np.float64(stats["enclosed_volume"])
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["mesh.msh", "stats.json"]


def test_failed_run_leaves_nothing_and_keeps_old_results(tmp_path, capsys):
    out = tmp_path / "m"
    out.mkdir()
    (out / "stats.json").write_text("old")
    bad = {"geometry": {"kind": "file", "path": str(tmp_path / "missing.stl")},
           "frequencies_hz": [100.0]}
    assert main(args(bad, tmp_path)) == 2
    assert "geometry.path" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["stats.json"]
    assert (out / "stats.json").read_text() == "old"


def test_bad_json_names_the_option(tmp_path, capsys):
    assert main(["mesh", "--case", "{oops", "--medium", MEDIUM, "--mesh", str(tmp_path / "a.msh"),
                 "--stats", str(tmp_path / "a.json")]) == 2
    assert "--case" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
