"""What a non-editable install gets: the package's data files (the config schema, the
symmetric triangle rules, the CUDA sources, py.typed)."""
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from wavescat.defaults import SCHEMA_PATH, load_schema

ROOT = Path(__file__).resolve().parents[1]


def test_schema_and_py_typed_are_package_data(tmp_path):
    """setuptools' build_py (the step that fills a wheel's package tree, with pyproject.toml's
    package-data), run on a copy of the project: the built package holds the schema that
    defaults.SCHEMA_PATH names, the triangle rules' table and py.typed."""
    src = tmp_path / "project"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    lib = tmp_path / "lib"
    done = subprocess.run([sys.executable, "-c", "from setuptools import setup; setup()", "-q",
                           "build_py", "--build-lib", str(lib)], cwd=src, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    package = lib / "wavescat"
    assert (package / "py.typed").is_file()
    assert (package / "bem" / "discretisation" / "symmetric_triangle_rules.json").is_file()
    for kernel in ("kernels/green", "kernels/gpu", "linalg/triangular"):  # the CUDA sources
        assert (package / "bem" / f"{kernel}.cu").is_file(), kernel
    built = package / SCHEMA_PATH.relative_to(ROOT / "src" / "wavescat")
    assert yaml.safe_load(built.read_text()) == load_schema()


def test_the_workflow_validates_against_the_package_schema():
    """One schema: the Snakefile's validate() takes the package's file, not a copy."""
    assert SCHEMA_PATH.is_relative_to(ROOT / "src" / "wavescat")
    assert not (ROOT / "workflow" / "schemas").exists()
    assert "validate(CONFIG, str(SCHEMA_PATH))" in (ROOT / "workflow" / "rules" / "common.smk").read_text()
