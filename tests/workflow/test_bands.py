"""A frequency sweep is meshed per band: a 100-1000 Hz sweep gets several mesh jobs, and
each frequency is solved on the mesh of its band (100 Hz on the coarsest)."""
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]

SWEEP = """
run: [sweep]
cases:
  sweep:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: {start: 100, stop: 1000, count: 10}
    receivers: {plane: xz, count: 13}
"""


def dry_run(tmp_path, target="target_strength"):
    (tmp_path / "study.yaml").write_text(SWEEP)
    out = subprocess.run(SNAKEMAKE + [target, "--configfile=study.yaml", "--cores", "1", "-n",
                                      "--printshellcmds"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def jobs_of(stdout: str, rule: str) -> list[dict]:
    """input/output lines of each job of `rule` in a dry run."""
    out = []
    for block in re.split(r"\n(?=(?:local)?rule )", stdout):
        if re.match(rf"(?:local)?rule {rule}:", block):
            fields = dict(re.findall(r"^\s+(input|output): (.*)$", block, re.M))
            out.append(fields)
    return out


def test_sweep_gets_a_mesh_per_band_and_solves_on_its_band(tmp_path):
    stdout = dry_run(tmp_path)
    meshes = [j["output"] for j in jobs_of(stdout, "mesh") + jobs_of(stdout, "mesh_band")]
    assert len(meshes) == 4  # 700-1000, 400-600, 200-300, 100 Hz at band ratio 1.5
    solves = {re.search(r"f(\d+)\.h5", j["output"]).group(1): j["input"]
              for j in jobs_of(stdout, "solve")}
    assert len(solves) == 10
    assert solves["009"] == "results/sweep/mesh.msh"           # 1000 Hz on the finest
    assert solves["006"] == "results/sweep/mesh.msh"           # 700 Hz: within 1.5
    assert solves["000"] == "results/sweep/meshes/b3.msh"      # 100 Hz on the coarsest
    assert solves["001"] == solves["002"] == "results/sweep/meshes/b2.msh"
    # the mesh of a band is sized for the band's top frequency only
    b3 = next(line for line in stdout.splitlines() if "--mesh results/sweep/meshes/b3.msh" in line)
    assert '"frequencies_hz":[100.0]' in b3
    collect = jobs_of(stdout, "far_field")[0]["input"]
    assert "results/sweep/meshes/b3_stats.json" in collect


def test_meshes_target_builds_every_band(tmp_path):
    stdout = dry_run(tmp_path, "meshes")
    outputs = [j["output"] for j in jobs_of(stdout, "mesh") + jobs_of(stdout, "mesh_band")]
    assert sorted(outputs) == sorted(
        ["results/sweep/mesh.msh, results/sweep/mesh_stats.json"]
        + [f"results/sweep/meshes/b{b}.msh, results/sweep/meshes/b{b}_stats.json"
           for b in (1, 2, 3)])
