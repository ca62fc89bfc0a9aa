"""`.geo` files that could run commands or touch other files are refused before gmsh reads them."""
import shutil
from pathlib import Path

import pytest

from wavescat.configuration.case import Case
from wavescat.errors import ConfigError, MeshError
from wavescat.geometry import mesh_case
from wavescat.geometry.geo_script import check_geo_script

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}
BOX = (Path(__file__).resolve().parents[2] / "meshes" / "box.geo").read_text()


def file_case(path):
    return {"geometry": {"kind": "file", "path": str(path)}, "frequencies_hz": [1500.0],
            "mesh": {"elements_per_wavelength": 10}}


def test_system_call_is_refused_and_never_runs(tmp_path):
    marker = tmp_path / "ran"
    geo = tmp_path / "part.geo"
    geo.write_text(BOX + f'\n// a comment\nSystemCall "touch {marker}";\n')
    # refused where the case is read (the mesher checks again before gmsh runs it)
    with pytest.raises(ConfigError, match=r"part\.geo', line 10: 'SystemCall' runs a shell "
                                          "command"):
        mesh_case(Case.from_dict(file_case(geo), MEDIUM))
    assert not marker.exists()


@pytest.mark.parametrize("line, what", [
    ('System "id";', "'System' runs a shell command"),
    ('NonBlockingSystemCall "id";', "'NonBlockingSystemCall' runs a shell command"),
    ('OnelabRun("x", "id");', "'OnelabRun' runs an external program"),
    ("Exit;", "'Exit' ends the meshing process"),
    ('Print "out.png";', "'Print' writes a file"),
    ('Save "out.msh";', "'Save' writes a file"),
    ('CreateDir "d";', "'CreateDir' creates a directory"),
    ('Printf("x = %g", 1) >> "log.txt";', "'Printf' with '>' writes a file"),
    ('Solver.Executable0 = "/bin/sh";', "'Solver.*' options name external programs"),
    ('Include StrCat("a", ".geo");', "'Include' of a computed file name cannot be checked"),
])
def test_each_dangerous_command_is_named_with_its_line(tmp_path, line, what):
    geo = tmp_path / "part.geo"
    geo.write_text("Point(1) = {0, 0, 0};\n" + line + "\n")
    with pytest.raises(MeshError) as info:
        check_geo_script(geo)
    assert f"part.geo', line 2: {what}" in str(info.value)


def test_harmless_look_alikes_pass(tmp_path):
    geo = tmp_path / "part.geo"
    geo.write_text(BOX + '\n/* SystemCall "id"; */\n// Exit;\nPrint.Width = 800;\n'
                   'Printf("SystemCall %g", 1);\nname = "Include x";\n')
    check_geo_script(geo)


@pytest.mark.parametrize("how, name", [("Include", "inner.geo"), ("Merge", "inner.txt"),
                                       ("Merge", "inner.geo")])
def test_scripts_read_by_a_script_are_checked(tmp_path, how, name):
    (tmp_path / name).write_text('SystemCall "id";\n')
    geo = tmp_path / "part.geo"
    geo.write_text(f'{how} "{name}";\n')
    with pytest.raises(MeshError, match=rf"{name}', line 1: 'SystemCall'.*read from .*part\.geo', "
                                        "line 1"):
        check_geo_script(geo)


def test_options_file_beside_a_script_is_checked(tmp_path):
    """gmsh reads <file>.opt beside every file it opens or merges."""
    geo = tmp_path / "part.geo"
    geo.write_text(BOX)
    (tmp_path / "part.geo.opt").write_text('SystemCall "id";\n')
    with pytest.raises(MeshError, match=r"part\.geo\.opt', line 1: 'SystemCall'"):
        check_geo_script(geo)
    (tmp_path / "part.geo.opt").unlink()
    shutil.copy(geo, tmp_path / "cad.step")  # a merged data file: only its .opt is a script
    (tmp_path / "cad.step.opt").write_text('Exit;\n')
    geo.write_text('Merge "cad.step";\n')
    with pytest.raises(MeshError, match=r"cad\.step\.opt', line 1: 'Exit'"):
        check_geo_script(geo)


def test_clean_included_script_meshes(tmp_path):
    (tmp_path / "body.geo").write_text(BOX)
    geo = tmp_path / "part.geo"
    geo.write_text('Include "body.geo";\n')
    mesh, stats = mesh_case(Case.from_dict(file_case(geo), MEDIUM))
    assert stats["enclosed_volume"] == pytest.approx(2 * 1 * 0.5, rel=1e-9)


def test_config_refuses_the_script(tmp_path):
    from wavescat.configuration.config import prepare_config

    (tmp_path / "part.geo").write_text(BOX + 'SystemCall "id";\n')
    config = {"run": ["part"], "cases": {"part": {
        "geometry": {"kind": "file", "path": "part.geo"}, "frequencies_hz": [100]}}}
    with pytest.raises(ConfigError, match=r"cases\.part\.geometry\.path = 'part\.geo': geometry "
                                          r"file .*line 8: 'SystemCall' runs a shell command"):
        prepare_config(config, base_dir=tmp_path)
