"""A bad config stops the workflow with one line that names the file, line, key and value
(no traceback, no Snakemake stack), and `wavescat check-config` does the same without
Snakemake, including for YAML syntax errors, which Snakemake reports without file or line."""
import subprocess
import sys

import pytest
import yaml

from wavescat.configuration.config_files import config_error, locate
from wavescat.errors import ConfigError

BAD_VALUE = """\
run: [ball]
cases:
  ball:
    geometry: {kind: sphere, radius: 1}
    frequencies_hz: [50, -50]
"""
UNKNOWN_KEY = """\
run: [ball]
cases:
  ball:
    geometry:
      kind: sphere
      radius: 1
      radiu: 2
    frequencies_hz: [50]
"""
SYNTAX = """\
run: [ball]
cases:
  ball:
    geometry: {kind: sphere, radius: 1
    frequencies_hz: [50]
"""


def stack_free(text: str) -> bool:
    return "Traceback" not in text and 'File "' not in text and "WorkflowError" not in text


@pytest.mark.parametrize("text, where, message", [
    (BAD_VALUE, "my.yaml, line 5, column 26", "cases.ball.frequencies_hz[1] = -50: must be > 0"),
    (UNKNOWN_KEY, "my.yaml, line 7, column 7", "cases.ball.geometry: unknown key 'radiu'"),
])
def test_workflow_config_error_names_file_and_line(repo, snakemake, text, where, message):
    (repo / "my.yaml").write_text(text)
    out = snakemake("-n", "target_strength", "--configfile", "my.yaml")
    assert out.returncode != 0
    errors = [line for line in out.stderr.splitlines() if "invalid configuration" in line]
    assert len(errors) == 1, out.stderr
    assert errors[0].startswith(f"invalid configuration in {where}: {message}")
    assert stack_free(out.stdout + out.stderr), out.stderr


def test_syntax_error_in_the_default_config_names_file_and_line(repo, snakemake):
    default = repo / "config" / "config.yaml"
    lines = default.read_text().splitlines()
    lineno = next(i for i, line in enumerate(lines) if line.startswith("run:"))
    lines[lineno] = "run: [sphere_ka5, submarine"
    default.write_text("\n".join(lines) + "\n")
    with pytest.raises(yaml.MarkedYAMLError) as parsed:  # the line where the parser stops
        yaml.safe_load(default.read_text())
    out = snakemake("-n", "target_strength")
    assert out.returncode != 0
    assert "invalid configuration: config file " in out.stderr
    assert f"config/config.yaml, line {parsed.value.problem_mark.line + 1}, column" in out.stderr
    assert stack_free(out.stdout + out.stderr), out.stderr


def check_config(cwd, *files):
    return subprocess.run([sys.executable, "-m", "wavescat", "check-config", *files], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_check_config_names_line_of_a_syntax_error(repo):
    (repo / "my.yaml").write_text(SYNTAX)
    out = check_config(repo, "my.yaml")
    assert out.returncode == 2
    assert out.stderr.startswith(
        "wavescat check-config: error: config file my.yaml, line 5, column 19: YAML syntax error: "
        "while parsing a flow mapping started at line 4, expected ',' or '}'"), out.stderr
    assert stack_free(out.stderr)


def test_check_config_runs_the_workflow_checks(repo):
    (repo / "my.yaml").write_text(BAD_VALUE)
    out = check_config(repo, "my.yaml")
    assert out.returncode == 2 and stack_free(out.stderr)
    assert ("invalid configuration in my.yaml, line 5, column 26: "
            "cases.ball.frequencies_hz[1] = -50: must be > 0") in out.stderr
    (repo / "my.yaml").write_text(BAD_VALUE.replace("-50", "60"))
    out = check_config(repo, "my.yaml")
    assert out.returncode == 0, out.stderr
    assert "builds 1 case(s): ball" in out.stdout


SEVERAL = """\
run: [a, b]
cases:
  a:
    geometry: {kind: sphre, radius: 1}
    frequencies_hz: [50]
  b:
    geometry: {kind: sphere, radius: -1}
    frequencies_hz: [50]
    solver: {precison: single}
"""


def test_check_config_names_every_error_it_finds(repo):
    """Three mistakes in one file: the most relevant first, then each other one on its own
    line with its place, in the file's order, so all are fixed in one go."""
    (repo / "my.yaml").write_text(SEVERAL)
    out = check_config(repo, "my.yaml")
    assert out.returncode == 2 and stack_free(out.stderr)
    lines = out.stderr.splitlines()
    assert lines[0].startswith("wavescat check-config: error: invalid configuration in my.yaml, "
                               "line 9, column 14: cases.b.solver: unknown key 'precison'")
    assert lines[1].startswith("  also in my.yaml, line 4, column 16: cases.a.geometry.kind = "
                               "'sphre': unknown geometry kind")
    assert lines[2] == "  also in my.yaml, line 7, column 30: cases.b.geometry.radius = -1: must be > 0"
    assert len(lines) == 3, out.stderr


def test_locate_takes_the_last_file_and_dotted_case_names(tmp_path):
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("cases:\n  sub.v2:\n    frequencies_hz: [1, 2]\n")
    second.write_text("run: [x]\ncases:\n  sub.v2:\n    mesh: {elements_per_wavelength: 3}\n"
                      "    frequencies_hz: [1, -2]\n")
    assert locate("cases.sub.v2.frequencies_hz[1]", [first, second]) == (second, 5, 25)
    assert locate("cases.sub.v2.frequencies_hz[1]", [second, first]) == (first, 3, 25)
    assert locate("cases.sub.v2.mesh.elements_per_wavelength", [first, second]) == (second, 4, 12)
    assert locate("cases.sub.v3", [first, second]) is None
    # a key no file sets (a default, a case a study made) gets no place, only the message
    error = ConfigError("cases.study_sub_x.solver.precision = 'half': must be one of ...")
    assert config_error(error, [first, second]) == f"invalid configuration: {error}"


MILLIMETRES = """\
run: [capsule]
cases:
  capsule:
    geometry: {kind: file, path: capsule_mm.stl}
    frequencies_hz: [38000]
"""


def _millimetre_sphere(repo):
    """A 20 cm sphere stored in millimetres (642 vertices): read as metres, 200 m across."""
    from wavescat.geometry.icosphere import icosphere

    icosphere(3, radius=100.0).write(repo / "capsule_mm.stl", "stl")


def test_check_config_refuses_a_file_in_millimetres(repo):
    _millimetre_sphere(repo)
    (repo / "my.yaml").write_text(MILLIMETRES)
    out = check_config(repo, "my.yaml")
    assert out.returncode == 2 and stack_free(out.stderr), out.stderr
    (line,) = [s for s in out.stderr.splitlines() if s.strip()]
    assert "invalid configuration in my.yaml, line 4, column" in line
    assert "capsule_mm.stl is 200 x 200 x 200 m with a mean edge of" in line
    assert "elements per wavelength of 0.0395 m (the water's at 38000 Hz)" in line
    assert "if the file is in millimetres, set cases.capsule.geometry.scale: 0.001" in line
    assert "cases.capsule.mesh.allow_coarse: true" in line
    (repo / "my.yaml").write_text(MILLIMETRES.replace("capsule_mm.stl}",
                                                      "capsule_mm.stl, scale: 0.001}"))
    out = check_config(repo, "my.yaml")
    assert out.returncode == 0, out.stderr


STORED = """\
run: [part]
cases:
  part:
    geometry: {kind: file, path: part.stl}
    frequencies_hz: [5000]
"""


def _write_balls(path, holed=False, count=1):
    """`count` 5 cm icospheres side by side in one STL, the first with a triangle taken out
    where `holed`."""
    import meshio
    import numpy as np

    from wavescat.geometry.icosphere import icosphere

    ball = icosphere(2, radius=0.05)
    n = ball.n_vertices
    v = np.concatenate([ball.vertices + [0.2 * i, 0, 0] for i in range(count)])
    t = np.concatenate([ball.triangles[1 if holed and i == 0 else 0:] + n * i
                        for i in range(count)])
    meshio.write_points_cells(path, v, [("triangle", t)], binary=True)


def test_check_config_refuses_a_stored_mesh_with_a_hole(repo):
    """It said "valid", and only the mesh job refused it."""
    _write_balls(repo / "part.stl", holed=True)
    (repo / "my.yaml").write_text(STORED)
    out = check_config(repo, "my.yaml")
    assert out.returncode == 2 and stack_free(out.stderr), out.stderr
    (line,) = [s for s in out.stderr.splitlines() if s.strip()]
    assert "invalid configuration in my.yaml, line 4, column" in line
    assert "cases.part.geometry.path = 'part.stl': 3 boundary edge(s): the surface is not " \
           "closed at (" in line, line


def test_check_config_says_a_stored_mesh_holds_two_bodies(repo):
    """Two disjoint balls in one file: accepted, with a word (and one ball without)."""
    (repo / "my.yaml").write_text(STORED)
    for count, said in ((2, True), (1, False)):
        _write_balls(repo / "part.stl", count=count)
        out = check_config(repo, "my.yaml")
        assert out.returncode == 0, out.stderr
        assert ("warning: cases.part.geometry.path = 'part.stl': 2 closed bodies (disjoint "
                "surfaces) in one file" in out.stderr) is said, out.stderr


def test_workflow_refuses_a_file_in_millimetres_before_any_job(repo, snakemake):
    _millimetre_sphere(repo)
    (repo / "my.yaml").write_text(MILLIMETRES)
    out = snakemake("-n", "target_strength", "--configfile", "my.yaml")
    assert out.returncode != 0 and stack_free(out.stdout + out.stderr), out.stderr
    errors = [line for line in out.stderr.splitlines() if "invalid configuration" in line]
    assert len(errors) == 1, out.stderr
    assert "if the file is in millimetres, set cases.capsule.geometry.scale: 0.001" in errors[0]
