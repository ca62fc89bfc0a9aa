"""What a mesh job's log holds for a surface file: no meshio warnings about tags it fills in
(the .msh it writes carries the physical tag of each triangle)."""
import json

import meshio
import numpy as np

from wavescat.cli import main
from wavescat.geometry.icosphere import icosphere


def test_stl_mesh_job_writes_tags_and_no_meshio_warning(tmp_path, capfd):
    ball = icosphere(2, 0.5)
    meshio.write_points_cells(tmp_path / "ball.stl", ball.vertices, [("triangle", ball.triangles)])
    case = {"geometry": {"kind": "file", "path": str(tmp_path / "ball.stl")},
            "frequencies_hz": [200.0]}
    assert main(["mesh", "--name", "ball", "--case", json.dumps(case),
                 "--medium", json.dumps({"sound_speed": 1500.0, "density": 1000.0}),
                 "--mesh", str(tmp_path / "mesh.msh"), "--stats", str(tmp_path / "stats.json")]) == 0
    out, err = capfd.readouterr()
    assert "Appending zeros" not in out + err and "Warning" not in out + err
    tags = meshio.read(tmp_path / "mesh.msh").cell_data_dict["gmsh:physical"]["triangle"]
    assert np.all(tags == 1)
