"""What a non-editable install gets: the package's data files (the config schema, the
symmetric triangle rules, the CUDA sources, py.typed)."""
import re
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
    defaults.SCHEMA_PATH names, the triangle rules' table, py.typed and every CUDA source the
    modules read."""
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
    assert {p.relative_to(package) for p in package.rglob("*.cu")} == cuda_sources()
    built = package / SCHEMA_PATH.relative_to(ROOT / "src" / "wavescat")
    assert yaml.safe_load(built.read_text()) == load_schema()


def cuda_sources() -> set[Path]:
    """The .cu files the package's modules name (read beside themselves, as
    Path(__file__).with_name(...)), relative to the package; each exists in the tree, and
    every .cu of the tree is named."""
    package = ROOT / "src" / "wavescat"
    named = {module.with_name(name).relative_to(package) for module in package.rglob("*.py")
             for name in re.findall(r"[\"']([\w.]+\.cu)[\"']", module.read_text())}
    assert {p.relative_to(package) for p in package.rglob("*.cu")} == named
    return named


def test_the_workflow_validates_against_the_package_schema():
    """One schema: the Snakefile's validate() takes the package's file, not a copy."""
    assert SCHEMA_PATH.is_relative_to(ROOT / "src" / "wavescat")
    assert not (ROOT / "workflow" / "schemas").exists()
    assert "validate(CONFIG, str(SCHEMA_PATH))" in (ROOT / "workflow" / "rules" / "common.smk").read_text()


def _requirement(text: str) -> tuple[str, str]:
    """(name, specifier) of 'name >=a,<b' (conda) or 'name>=a,<b' (pip), spaces dropped."""
    import re

    name, spec = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", text).groups()
    return name.lower(), spec.replace(" ", "")


def test_conda_environment_pins_what_pyproject_pins():
    """workflow/envs/wavescat.yaml (the rules' environment under --sdm conda) lists every
    dependency of pyproject.toml with the same version bounds (conda-forge's matplotlib
    without Qt is matplotlib-base), and installs this repository: its pip line `-e ../..`
    is the project root seen from the file's folder, where conda runs pip."""
    import tomllib

    env_file = ROOT / "workflow" / "envs" / "wavescat.yaml"
    env = yaml.safe_load(env_file.read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = dict(_requirement(d) for d in conda + [p for p in pip if not p.startswith("-")])
    listed["matplotlib"] = listed.pop("matplotlib-base")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = dict(_requirement(d) for d in project["dependencies"])
    assert {n: listed.get(n) for n in wanted} == wanted
    assert listed["python"].startswith(project["requires-python"])
    editable = [p for p in pip if p.startswith("-e ")]
    assert editable == ["-e ../.."]
    assert (env_file.parent / "../..").resolve() == ROOT
