"""`snakemake clean_stale`: what the current config no longer builds goes, nothing else."""
import subprocess
import sys

STUDY = """
run: [ball]
cases:
  ball:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: [300.0, 400.0]
"""
LEFT = ["meshes/b1.msh", "meshes/b1_stats.json", "logs/mesh_b1.log", "solutions/f002.h5",
        "logs/solve_f002.log", "near_field/f001.png", "ts_averages.csv"]
KEPT = ["mesh.msh", "solutions/f000.h5", "solutions/f001.h5", "logs/solve_f001.log",
        "logs/mesh.log", "farfield.csv", "surface/f001.vtu"]


def test_clean_stale_removes_what_the_config_no_longer_builds(repo):
    """A case once run with three frequencies over two bands, a near-field map and averages,
    now with two frequencies in one band and neither: its band-1 mesh, third solution, their
    logs, the map and the averages go; the rest of its folder, and the folder of a case this
    config does not hold, stay."""
    (repo / "my.yaml").write_text(STUDY)
    folder = repo / "results" / "ball"
    for name in LEFT + KEPT + ["../elsewhere/solutions/f009.h5"]:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("x")
    out = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "clean_stale",
                          "--configfile", "my.yaml"], cwd=repo, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    removed = {line.split("results/ball/", 1)[1] for line in out.stdout.splitlines()
               if line.startswith("removed ")}
    assert removed == set(LEFT) - {"near_field/f001.png"} | {"near_field"}
    assert not any((folder / n).exists() for n in LEFT)
    assert all((folder / n).exists() for n in KEPT)
    assert (repo / "results" / "elsewhere" / "solutions" / "f009.h5").exists()
