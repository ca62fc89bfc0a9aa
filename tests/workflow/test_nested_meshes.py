"""The mesh rule for a case with bodies inside: `snakemake meshes` writes one mesh.msh with a
surface per body (gmsh physical tag i + 1) and their statistics; an inner body's file is an
input of the mesh, and a misplaced body stops the mesh job naming both bodies."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]

STUDY = """
medium: {sound_speed: 1477.3, density: 1026.8}
run: [shell]
cases:
  shell:
    geometry: {kind: sphere, radius: 0.01}
    frequencies_hz: [12000.0]
    boundary: {kind: fluid, density_ratio: 1.0357, sound_speed_ratio: 1.0279}
    inside:
      - geometry: {kind: sphere, radius: 0.008}
        boundary: {kind: fluid, density: 1.24, sound_speed: 345.0}
"""


def _run(tmp_path, text, *extra):
    (tmp_path / "study.yaml").write_text(text)
    return subprocess.run(SNAKEMAKE + ["meshes", "--configfile=study.yaml", "--cores", "1",
                                       *extra], cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)


def test_meshes_of_a_nested_case(tmp_path):
    out = _run(tmp_path, STUDY)
    assert out.returncode == 0, out.stderr[-3000:]
    from wavescat.surface import SurfaceMesh

    mesh = SurfaceMesh.from_file(tmp_path / "results" / "shell" / "mesh.msh")
    stats = json.loads((tmp_path / "results" / "shell" / "mesh_stats.json").read_text())
    assert mesh.n_surfaces == 2 == stats["n_surfaces"]
    assert [s["where"] for s in stats["surfaces"]] == ["cases.shell", "cases.shell.inside[0]"]
    assert stats["surfaces"][1]["sizing_sound_speed"] == 345.0
    assert 0.0015 < stats["min_surface_gap"] < 0.002


def test_a_misplaced_body_stops_the_mesh_job_naming_both(tmp_path):
    # its bounding box lies inside the parent's (the config check passes), its surface does
    # not: 8.5 mm off centre with a radius of 3.5 mm in a sphere of 10 mm
    out = _run(tmp_path, STUDY.replace("radius: 0.008}",
                                       "radius: 0.0035, center: [0.006, 0.006, 0]}"))
    assert out.returncode != 0
    log = (tmp_path / "results" / "shell" / "logs" / "mesh.log").read_text()
    assert "cases.shell.inside[0] (surface 1) and cases.shell (surface 0) cross each other" in log
