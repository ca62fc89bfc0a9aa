"""The Snakemake workflow: DAG of the named targets, config errors before any job, and real
runs of the `meshes` and `verify_bem` targets on a tiny config, each in a temporary copy of
the repository (`tmp_path`, filled by the autouse fixture of conftest.py)."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]  # the Snakefile of the copy in the cwd

TINY = """
run: [ball, egg]
cases:
  ball:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: {start: 150, stop: 300, count: 2}
    receivers: {plane: xz, count: 13}
    mesh: {elements_per_wavelength: 6}
  egg:
    geometry: {kind: spheroid, semi_axes: [0.6, 0.4, 0.4], center: [0.1, 0, 0]}
    frequencies_hz: [200]
    receivers: {directions_deg: [[90, 0], [90, 180]]}
    mesh: {elements_per_wavelength: 6}
"""


def snakemake(args, cwd, config_text=TINY, timeout=600):
    (cwd / "study.yaml").write_text(config_text)
    return subprocess.run(SNAKEMAKE + ["--configfile", "study.yaml", "--cores", "2"] + args,
                          cwd=cwd, capture_output=True, text=True, timeout=timeout)


def jobs(stdout: str) -> dict:
    """Job counts from Snakemake's 'Job stats' table."""
    counts, inside = {}, False
    for line in stdout.splitlines():
        parts = line.split()
        if parts[:2] == ["job", "count"]:
            inside = True
            continue
        if inside and parts and parts[0] == "total":
            break
        if inside and len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


def test_dry_run_shows_whole_pipeline(tmp_path):
    out = snakemake(["-n", "target_strength"], tmp_path)
    assert out.returncode == 0, out.stderr
    counts = jobs(out.stdout)
    # 2 cases meshed (ball's 150 and 300 Hz in two bands: a second, coarser mesh),
    # 3 (case, frequency) solves, 2 far-field collections, 1 sphere reference
    assert counts == {"mesh": 2, "mesh_band": 1, "solve": 3, "far_field": 2,
                      "reference_farfield": 1, "target_strength": 1}


def test_dry_run_of_verify(tmp_path):
    """`verify` of the default config: the convergence studies, the sphere series, and one DG
    job, one BEM-probes job and one comparison per dg_cross_check case (of every boundary kind,
    a body with no series, a band: one DG pulse against a BEM solve per frequency)."""
    import yaml

    cases = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())["cases"]
    dg = [c for c, v in cases.items() if "dg_cross_check" in v and v["dg_cross_check"].get("enabled", True)]
    out = subprocess.run(SNAKEMAKE + ["-n", "verify", "--cores", "1"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    counts = jobs(out.stdout)
    assert counts["hermite_convergence"] == 1 and counts["dg_convergence"] == 1
    assert "hermite_scatter" not in counts  # no box case with hermite_cross_check by default
    assert counts["reference_farfield"] == 1
    kinds = {v.get("boundary", {}).get("kind", "rigid") for c, v in cases.items() if c in dg}
    assert kinds == {"rigid", "pressure_release", "impedance", "fluid"}
    assert {v["geometry"]["kind"] for c, v in cases.items() if c in dg} >= {"sphere", "spheroid"}
    assert counts["dg_scatter"] == counts["bem_probes"] == counts["dg_vs_bem"] == len(dg)
    band = [c for c in dg if isinstance(cases[c]["frequencies_hz"], dict)]
    assert band and all(f"results/{c}/dg_vs_bem.csv" in out.stdout for c in dg)
    frequencies = sum(cases[c]["frequencies_hz"]["count"] if c in band else len(cases[c]["frequencies_hz"])
                      for c in set(dg) | {"sphere_ka5"})
    assert counts["solve"] == frequencies


def test_dry_run_of_the_hermite_box_example(tmp_path):
    """config/examples/hermite_box.yaml: verify_hermite runs the Hermite box run and its
    comparison with the BEM probe table DG's check shares (the same probes); a copy of the case
    with probes of its own gets a BEM table of its own."""
    import copy

    import yaml

    example = yaml.safe_load((ROOT / "config" / "examples" / "hermite_box.yaml").read_text())
    own = copy.deepcopy(example["cases"]["box_band"])
    own["hermite_cross_check"]["probes"] = [[0, 0, -0.9]]
    example["cases"]["box_own"] = own
    out = snakemake(["-n", "verify_hermite"], tmp_path, yaml.safe_dump(example))
    assert out.returncode == 0, out.stderr
    counts = jobs(out.stdout)
    assert counts["hermite_scatter"] == counts["hermite_vs_bem"] == counts["bem_probes"] == 2
    assert counts["hermite_convergence"] == 1 and counts["solve"] == 12
    assert "dg_scatter" not in counts and "dg_vs_bem" not in counts
    for path in ("box_band/dg/bem_probes.csv", "box_own/hermite/bem_probes.csv",
                 "box_band/hermite_vs_bem.png", "box_own/hermite_vs_bem.csv",
                 "box_band/hermite/hermite_summary.json"):
        assert f"results/{path}" in out.stdout, path
    assert "results/box_band/hermite/bem_probes.csv" not in out.stdout


def test_default_config_dry_run(tmp_path):
    out = subprocess.run(SNAKEMAKE + ["-n", "target_strength", "--cores", "1"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert jobs(out.stdout)["mesh"] == 2


@pytest.mark.parametrize("text, message", [
    ("run: [ball]\ncases:\n  ball:\n    geometry: {kind: sphere, radius: 1}\n"
     "    frequencies_hz: [-50]\n", "cases.ball.frequencies_hz[0] = -50: must be > 0"),
    ("run: [ball]\ncases:\n  ball:\n    geometry: {kind: cone, radius: 1}\n"
     "    frequencies_hz: [50]\n", "cases.ball.geometry.kind = 'cone'"),
    ("run: [part]\ncases:\n  part:\n    geometry: {kind: file, path: missing.step}\n"
     "    frequencies_hz: [50]\n", "cases.part.geometry.path = 'missing.step': file not found"),
    ("run: [ball]\ncases:\n  ball:\n    geometry: {kind: sphere, radius: 1}\n"
     "    frequencies_hz: [.nan]\n", "cases.ball.frequencies_hz[0] = nan: must be a finite number"),
    ("run: ['..']\ncases:\n  '..':\n    geometry: {kind: sphere, radius: 1}\n"
     "    frequencies_hz: [50]\n", "cases: name '..' is not usable"),
])
def test_bad_config_stops_before_any_job(tmp_path, text, message):
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "keep.txt").write_text("precious")
    out = snakemake(["target_strength"], tmp_path, config_text=text)
    assert out.returncode != 0
    assert message in out.stdout + out.stderr
    assert "Building DAG" not in out.stdout + out.stderr
    assert (tmp_path / "results" / "keep.txt").read_text() == "precious"


def test_meshes_and_verify_bem_targets_run(tmp_path):
    out = snakemake(["meshes", "verify_bem"], tmp_path)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    import json

    from wavescat.surface import SurfaceMesh
    from wavescat.solve.records import read_farfield_csv

    for case in ("ball", "egg"):
        mesh = SurfaceMesh.from_file(tmp_path / "results" / case / "mesh.msh")
        stats = json.loads((tmp_path / "results" / case / "mesh_stats.json").read_text())
        assert stats["elements"] == mesh.n_triangles and mesh.enclosed_volume > 0
    ref = read_farfield_csv(tmp_path / "results" / "ball" / "reference_farfield.csv")
    assert len(ref["F"]) == 2 * 13  # two frequencies x 13 receivers
    assert not (tmp_path / "results" / "egg" / "reference_farfield.csv").exists()


def test_editing_the_geometry_file_remeshes(tmp_path):
    """The geometry file is an input of the mesh rule: a newer file schedules the mesh again."""
    import os
    import shutil

    shutil.copy(ROOT / "meshes" / "box.geo", tmp_path / "part.geo")
    config = ("run: [part]\ncases:\n  part:\n    geometry: {kind: file, path: part.geo}\n"
              "    frequencies_hz: [100]\n")
    outputs = [tmp_path / "results" / "part" / name for name in ("mesh.msh", "mesh_stats.json")]
    outputs[0].parent.mkdir(parents=True)
    for path in outputs:  # a finished mesh, newer than the geometry file
        path.write_text("")
        os.utime(path, (2e9, 2e9))
    os.utime(tmp_path / "part.geo", (1e9, 1e9))
    out = snakemake(["-n", "meshes"], tmp_path, config)
    assert out.returncode == 0, out.stderr
    assert "mesh" not in jobs(out.stdout)
    os.utime(tmp_path / "part.geo", (3e9, 3e9))  # the user edits the .geo file
    out = snakemake(["-n", "meshes"], tmp_path, config)
    assert out.returncode == 0, out.stderr
    assert jobs(out.stdout)["mesh"] == 1
    assert "part.geo" in out.stdout


WARNED = """
run: [coarse]
cases:
  coarse:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: [1500]
    receivers: {plane: xz, count: 5}
    mesh: {elements_per_wavelength: 3, max_volume_error: null}
  gas:
    geometry: {kind: sphere, radius: 0.01}
    boundary: {kind: fluid, density: 1.24, sound_speed: 345}
    frequencies_hz: [38000]
"""


def test_warnings_reach_the_console(tmp_path):
    """A case's warnings (here: 3 elements per wavelength) are printed when the run ends, and
    a hypersensitive case's when the config is checked, not only written to the job logs."""
    out = snakemake(["-n", "target_strength", "--config", "run=[gas]"], tmp_path, WARNED)
    assert out.returncode == 0, out.stderr[-3000:]
    (line,) = [s for s in out.stderr.splitlines() if s.startswith("wavescat: warning: case gas:")]
    assert "estimated interior Q of" in line
    out = snakemake(["target_strength"], tmp_path, WARNED)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    tail = out.stderr[out.stderr.index("wavescat: the run ended with"):]
    assert "  coarse: mesh coarser than 5 elements per wavelength at 1500 Hz" in tail
