"""Warnings reach the user: a run's case warnings gathered for the console
(wavescat.results.notices)."""
import io
import json

from wavescat.results.notices import (case_warnings, config_warning_lines, format_warnings,
                                      plot_note, print_run_warnings)


def _write(path, warnings):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"warnings": warnings}))


def test_summary_first_else_mesh_statistics(tmp_path):
    _write(tmp_path / "a" / "summary.json", ["solve: coarse", "mesh: volume"])
    _write(tmp_path / "a" / "mesh_stats.json", ["mesh: volume"])
    _write(tmp_path / "b" / "mesh_stats.json", ["b mesh 0"])
    _write(tmp_path / "b" / "meshes" / "b1_stats.json", ["b mesh 1", "b mesh 0"])
    assert case_warnings("a", tmp_path) == ["solve: coarse", "mesh: volume"]
    assert case_warnings("b", tmp_path) == ["b mesh 0", "b mesh 1"]
    assert case_warnings("none", tmp_path) == []


def test_console_text_names_cases_and_adds_known_warnings(tmp_path):
    _write(tmp_path / "a" / "summary.json", ["coarse"])
    out = io.StringIO()
    n = print_run_warnings(["a", "gas", "quiet"], tmp_path,
                           known=["case gas: cases.gas has an estimated interior Q of 3546"],
                           ending="ended", stream=out)
    assert n == 2
    assert out.getvalue().splitlines() == [
        "wavescat: the run ended with 2 warnings (also in results/<case>/summary.json):",
        "  a: coarse",
        "  gas: case gas: cases.gas has an estimated interior Q of 3546"]
    assert format_warnings({}) == ""
    quiet = io.StringIO()
    assert print_run_warnings(["quiet"], tmp_path, stream=quiet) == 0 and quiet.getvalue() == ""


def test_plot_note():
    assert plot_note([]) == ""
    assert plot_note(["x"]) == "WARNING, see summary.json: x"
    assert plot_note(["x", "y", "z"]).startswith("WARNING (and 2 more)")


def test_the_console_is_not_flooded():
    text = format_warnings({f"c{i}": ["w"] for i in range(30)}, limit=20).splitlines()
    assert len(text) == 22 and text[-1] == "  ... and 10 more (results/<case>/summary.json)"
    lines = config_warning_lines(["a", "b", "c"], limit=2)
    assert lines == ["wavescat: warning: a", "wavescat: warning: b",
                     "wavescat: ... and 1 more warnings of the same kind"]


def test_known_warnings_only_for_cases_without_a_summary(tmp_path):
    from wavescat.results.notices import run_warnings

    _write(tmp_path / "gas" / "summary.json", ["the body (...) has an estimated interior Q"])
    known = ["case gas: cases.gas (...) has an estimated interior Q"]
    assert run_warnings(["gas"], tmp_path, known) == {"gas": ["the body (...) has an estimated "
                                                              "interior Q"]}
