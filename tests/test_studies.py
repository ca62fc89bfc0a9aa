"""Parameter studies: expansion (counts, names, merging with the default config), the dry-run
DAG of a study, the resources of the generated jobs under the cluster profiles."""
import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from snakemake.utils import update_config

from wavescat.configuration.config import prepare_config, run_cases, run_studies
from wavescat.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]

STUDY = {
    "run": ["hull"],
    "studies": {"hull": {
        "cases": ["submarine", "sphere_ka5"],
        "vary": {"mesh.elements_per_wavelength": [6, 8], "geometry.center": [[0, 0, 0], [1, 0, 0]]},
        "set": {"frequencies_hz": {"start": 50, "stop": 100, "count": 3}},
    }},
}


@pytest.fixture(scope="module")
def default():
    with open(ROOT / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


def merged(default, user):
    cfg = copy.deepcopy(default)
    update_config(cfg, copy.deepcopy(user))
    return prepare_config(cfg, base_dir=ROOT)


def test_expansion_counts_names_and_values(default):
    cfg = merged(default, STUDY)
    cases = run_cases(cfg)
    assert run_studies(cfg) == ["hull"]
    assert len(cases) == 2 * 2 * 2
    assert cases[0] == "hull_submarine_elements_per_wavelength-6_center-0x0x0"
    assert "hull_sphere_ka5_elements_per_wavelength-8_center-1x0x0" in cases
    case = cfg["cases"]["hull_sphere_ka5_elements_per_wavelength-8_center-1x0x0"]
    assert case["mesh"]["elements_per_wavelength"] == 8
    assert case["geometry"]["center"] == [1, 0, 0] and case["geometry"]["radius"] == 1.0
    assert case["frequencies_hz"] == [50.0, 75.0, 100.0]
    assert case["solver"]["gmres"]["tol"] == 1e-5  # defaults of the base case kept
    assert case["study"]["parameters"] == {"mesh.elements_per_wavelength": 8,
                                           "geometry.center": [1, 0, 0]}
    # the default cases are still there (merged), but only the study runs
    assert "sphere_ka5" in cfg["cases"] and "sphere_ka5" not in cases


def test_names_are_reproducible(default):
    a = run_cases(merged(default, STUDY))
    grown = copy.deepcopy(STUDY)
    grown["studies"]["hull"]["vary"]["mesh.elements_per_wavelength"].append(10)
    b = run_cases(merged(default, grown))
    assert set(a) < set(b) and len(b) == 12


@pytest.mark.parametrize("change, message", [
    ({"vary": {"colour.red": [1]}}, "studies.hull.vary: 'colour.red' is not a case key"),
    ({"vary": {"mesh.elements_per_wavelength": [-1]}},
     "mesh.elements_per_wavelength = -1: must be > 0"),
    ({"cases": ["nope"]}, "studies.hull.cases[0] = 'nope': no such case"),
    ({"vary": {"mesh.elements_per_wavelength": []}}, "must have at least 1 item"),
])
def test_bad_study_names_key(default, change, message):
    user = copy.deepcopy(STUDY)
    user["studies"]["hull"].update(change)
    with pytest.raises(ConfigError, match=re.escape(message)):
        merged(default, user)


def _dry_run(tmp_path, profile=None):
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(STUDY))
    args = ["-n", "target_strength", "--configfile", str(tmp_path / "study.yaml"), "--cores", "2"]
    if profile:
        args += ["--profile", str(ROOT / "profiles" / profile)]
    # run inside the repository so the default config (and its base cases) is merged
    return subprocess.run(SNAKEMAKE + args + ["--directory", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_study_dry_run_dag(tmp_path):
    out = _dry_run(tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    text = out.stdout
    assert re.search(r"^solve\s+24$", text, re.M)  # 8 cases x 3 frequencies
    assert re.search(r"^mesh\s+8$", text, re.M)
    assert re.search(r"^study_table\s+1$", text, re.M)
    assert "results/hull/ts.csv" in text


@pytest.mark.parametrize("profile", ["slurm", "cluster-generic"])
def test_generated_jobs_carry_resources(tmp_path, profile):
    out = _dry_run(tmp_path, profile)
    assert out.returncode == 0, out.stderr[-2000:]
    blocks = out.stdout.split("rule solve:")[1:]
    assert len(blocks) == 24
    for block in blocks:
        res = block.split("\n\n")[0]
        assert re.search(r"mem_mb=\d+", res) and re.search(r"runtime=\d+", res)
        assert "gpu=0" in res and "threads: 2" in res
    if profile == "slurm":
        assert "slurm_partition=compute" in out.stdout and "slurm_partition=gpu" not in out.stdout


def test_values_differing_past_six_digits_are_separate_cases(default):
    user = {"run": ["r"], "studies": {"r": {"cases": ["sphere_ka5"],
                                            "vary": {"geometry.radius": [1.0000001, 1.0000002, 2.0]}}}}
    cfg = merged(default, user)
    cases = run_cases(cfg)
    assert len(cases) == 3
    assert sorted(cfg["cases"][c]["geometry"]["radius"] for c in cases) == [1.0000001, 1.0000002, 2.0]
    assert "r_sphere_ka5_radius-2" in cases


@pytest.mark.parametrize("key, values", [
    ("description", ["a b", "ab"]),
    ("geometry.radius", [1, 1.0]),
    ("geometry.center", [[1, 2, 0], [1.0, 2.0, 0.0]]),
])
def test_values_giving_one_name_are_refused(default, key, values):
    user = {"run": ["r"], "studies": {"r": {"cases": ["sphere_ka5"], "vary": {key: values}}}}
    with pytest.raises(ConfigError, match=r"studies\.r\.vary: values .* both give the case name"):
        merged(default, user)
