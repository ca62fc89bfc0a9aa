"""Meshes far coarser than their wavelengths are refused before they solve, with one line
naming the file, its size, the mean edge, the wavelength and the way out
(geometry.resolution.coarse_mesh_refusal), in the mesh job, the solve job and the config
check (preflight.check_resolution)."""
import json
import math

import pytest

from wavescat.configuration.case import Case
from wavescat.cli import main
from wavescat.errors import ConfigError, MeshError
from wavescat.geometry.file import FileGeometry
from wavescat.geometry.icosphere import icosphere
from wavescat.geometry.sphere import Sphere
from wavescat.geometry.resolution import (REFUSE_ELEMENTS_PER_WAVELENGTH, case_wavelengths,
                                          check_mesh_resolution, coarse_mesh_refusal,
                                          mesh_extent)
from wavescat.planning.preflight import check_resolution

WATER = {"sound_speed": 1500.0, "density": 1000.0}
STL = FileGeometry(path="capsule.stl")


def test_refuses_below_two_elements_per_wavelength_only():
    waves = {"the water's at 1000 Hz": 1.5}
    assert coarse_mesh_refusal(1.5 / REFUSE_ELEMENTS_PER_WAVELENGTH, [1, 1, 1], waves,
                               source="x") is None
    assert coarse_mesh_refusal(1.5 / 1.9, [1, 1, 1], waves, source="x") is not None
    assert coarse_mesh_refusal(10.0, [1, 1, 1], waves, source="x", allow_coarse=True) is None


def test_millimetre_file_message_names_file_size_edge_wavelength_and_scale():
    line = coarse_mesh_refusal(5.1, [200, 40, 40], {"the water's at 38000 Hz": 0.0389},
                               source="capsule.stl", where="cases.capsule", geometry=STL)
    assert "\n" not in line
    assert line.startswith("cases.capsule: capsule.stl is 200 x 40 x 40 m with a mean edge of "
                           "5.1 m: 0.0076 elements per wavelength of 0.0389 m (the water's at "
                           "38000 Hz), fewer than 2, far too coarse to solve; ")
    assert ("if the file is in millimetres, set cases.capsule.geometry.scale: 0.001 (the body "
            "is then 0.2 m long)") in line
    assert "remesh the file finer" in line
    assert line.endswith("or set cases.capsule.mesh.allow_coarse: true to solve it anyway")


def test_no_unit_hint_where_no_unit_helps_or_the_scale_is_set():
    waves = {"the water's at 38000 Hz": 0.0389}
    # 0.2 m body, coarse: a smaller unit would make a sub-millimetre body: no hint
    small = coarse_mesh_refusal(0.05, [0.2, 0.04, 0.04], waves, source="f.stl", geometry=STL)
    assert "geometry.scale" not in small
    scaled = coarse_mesh_refusal(5.1, [200, 40, 40], waves, source="f.stl",
                                 geometry=FileGeometry(path="capsule.stl", scale=0.5))
    assert "geometry.scale" not in scaled
    built_in = coarse_mesh_refusal(0.05, [0.2, 0.2, 0.2], waves, source="the sphere mesh",
                                   where="cases.ball", geometry=Sphere(radius=1.0))
    assert "raise cases.ball.mesh.elements_per_wavelength or lower " \
           "cases.ball.mesh.max_element_size" in built_in


def test_the_shortest_wavelength_counts_a_gas_body_interior():
    case = {"geometry": {"kind": "sphere", "radius": 0.01},
            "boundary": {"kind": "fluid", "density": 1.24, "sound_speed": 345.0}}
    waves = case_wavelengths(Case.from_dict(case, WATER), 38_000.0)
    assert waves == {"the water's at 38000 Hz": pytest.approx(1500 / 38_000),
                     "the body's interior at 38000 Hz": pytest.approx(345 / 38_000)}
    ratio = {**case, "boundary": {"kind": "fluid", "density_ratio": 0.001,
                                  "sound_speed_ratio": 0.23}}
    assert min(case_wavelengths(Case.from_dict(ratio, WATER), 1000.0).values()) \
        == pytest.approx(0.345)
    mesh = icosphere(2, radius=0.01)  # edges ~ 3.9 mm: 10 per water wavelength, 2.3 per gas's
    check_mesh_resolution(mesh, Case.from_dict(case, WATER), 38_000.0)
    with pytest.raises(MeshError, match=r"the body's interior at 60000 Hz"):
        check_mesh_resolution(mesh, Case.from_dict(case, WATER, name="gas"), 60_000.0)


def _millimetre_file(tmp_path):
    path = tmp_path / "capsule_mm.stl"
    icosphere(3, radius=100.0).write(path, "stl")  # a 20 cm sphere in millimetres
    return path


def test_mesh_job_refuses_before_writing(tmp_path, capsys):
    path = _millimetre_file(tmp_path)
    case = {"geometry": {"kind": "file", "path": str(path)}, "frequencies_hz": [38_000.0]}
    out = tmp_path / "m"
    argv = ["mesh", "--name", "capsule", "--case", json.dumps(case), "--medium",
            json.dumps(WATER), "--mesh", str(out / "mesh.msh"), "--stats", str(out / "s.json")]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert "cases.capsule: " in err and "capsule_mm.stl is 200 x 200 x 200 m" in err
    assert "set cases.capsule.geometry.scale: 0.001" in err
    assert not (out / "mesh.msh").exists()
    case["geometry"]["scale"] = 0.001
    argv[4] = json.dumps(case)
    assert main(argv) == 0


def test_config_check_reads_stored_meshes(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _millimetre_file(tmp_path)
    gas = {"geometry": {"kind": "spheroid", "semi_axes": [0.005, 0.005, 0.035]},
           "boundary": {"kind": "fluid", "density": 1.24, "sound_speed": 345.0},
           "frequencies_hz": [38_000.0]}
    capsule = {"geometry": {"kind": "file", "path": "capsule_mm.stl", "center": [0, 0, 0]},
               "frequencies_hz": [38_000.0]}
    config = {"medium": WATER, "cases": {"gas": gas, "capsule": capsule}}
    (line,) = check_resolution(config, ["gas"])
    assert line.startswith("case gas: cases.gas ") and "Q of" in line
    with pytest.raises(ConfigError, match=r"^cases\.capsule\.geometry\.path: capsule_mm\.stl is "):
        check_resolution(config, ["gas", "capsule"])
    capsule["geometry"]["scale"] = 0.001
    assert len(check_resolution(config, ["gas", "capsule"])) == 1
    capsule["geometry"]["scale"] = 1.0
    capsule["mesh"] = {"allow_coarse": True}
    assert len(check_resolution(config, ["gas", "capsule"])) == 1


def test_mesh_extent():
    assert mesh_extent([[0, 0, 0], [1, 2, 3], [-1, 0, 1]]).tolist() == [2, 2, 3]
    assert math.isclose(REFUSE_ELEMENTS_PER_WAVELENGTH, 2.0)


def test_a_cad_file_is_sized_by_its_surfaces_and_a_refusal_names_the_unit(monkeypatch):
    from pathlib import Path

    from wavescat.configuration.config import prepare_config
    from wavescat.geometry.file import file_facts
    from wavescat.planning.preflight import check_limits
    from wavescat.planning.resources import p1_dofs_estimate

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    geometry = {"kind": "file", "path": "meshes/cylinder.step"}  # 2 m long, 1 m across
    facts = file_facts(FileGeometry.from_block(geometry))
    assert facts["extent"].tolist() == pytest.approx([2, 1, 1], abs=1e-5)
    assert facts["area"] == pytest.approx(2.5 * math.pi) and facts["vertices"] is None
    small = p1_dofs_estimate(Case.from_dict({"geometry": geometry, "frequencies_hz": [1000.0]},
                                            WATER))
    big = p1_dofs_estimate(Case.from_dict({"geometry": geometry, "frequencies_hz": [10_000.0]},
                                          WATER))
    assert 300 < small < 600 and big == pytest.approx(100 * small, rel=0.02)
    config = prepare_config({"run": ["can"], "limits": {"max_unknowns": 1000},
                             "cases": {"can": {"geometry": geometry,
                                               "frequencies_hz": [38_000.0]}}},
                            base_dir=str(root))
    with pytest.raises(ConfigError, match=r"more than limits.max_unknowns = 1000; .*the body "
                       r"is 2 m long: if the file is in millimetres, set "
                       r"cases.can.geometry.scale: 0.001 \(then 0.002 m\)"):
        check_limits(config, ["can"])


def test_a_stored_mesh_is_estimated_by_its_vertices(tmp_path, monkeypatch):
    from wavescat.planning.resources import p1_dofs_estimate

    monkeypatch.chdir(tmp_path)
    _millimetre_file(tmp_path)
    case = {"geometry": {"kind": "file", "path": "capsule_mm.stl", "scale": 0.001},
            "frequencies_hz": [38_000.0]}
    assert p1_dofs_estimate(Case.from_dict(case, WATER)) == 642


class _TwoSurfaces:
    """The nested-mesh API of CONTEXT.md (n_surfaces, surface(i)) over two meshes."""

    def __init__(self, *meshes):
        self.meshes = meshes
        self.n_surfaces = len(meshes)

    def surface(self, i):
        return self.meshes[i]


def test_nested_surfaces_are_checked_each_against_the_wavelengths_it_separates():
    from wavescat.geometry.resolution import surface_wavelengths

    gas = {"kind": "fluid", "density": 1.24, "sound_speed": 345.0}
    flesh = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
    case = {"geometry": {"kind": "sphere", "radius": 0.05}, "boundary": flesh,
            "inside": [{"geometry": {"kind": "sphere", "radius": 0.01}, "boundary": gas}]}
    case = Case.from_dict(case, WATER, name="fish")
    (outer, inner) = surface_wavelengths(case, 38_000.0)
    assert outer[0] == "cases.fish" and inner[0] == "cases.fish.inside[0]"
    assert outer[2] == {"the water's at 38000 Hz": pytest.approx(1500 / 38_000),
                        "the body's interior at 38000 Hz": pytest.approx(1560 / 38_000)}
    assert inner[2] == {"the fluid's of cases.fish at 38000 Hz": pytest.approx(1560 / 38_000),
                        "the body's interior at 38000 Hz": pytest.approx(345 / 38_000)}
    fine_outer = icosphere(4, radius=0.05)  # edges ~ 4.9 mm
    fine_inner = icosphere(3, radius=0.01)  # edges ~ 2 mm: 4.5 per gas wavelength
    check_mesh_resolution(_TwoSurfaces(fine_outer, fine_inner), case, 38_000.0)
    coarse_inner = icosphere(1, radius=0.01)  # edges ~ 6 mm: 1.5 per gas wavelength
    with pytest.raises(MeshError) as refused:
        check_mesh_resolution(_TwoSurfaces(fine_outer, coarse_inner), case, 38_000.0)
    line = str(refused.value)
    assert line.startswith("cases.fish.inside[0]: the sphere mesh is 0.02 x")
    assert "(the body's interior at 38000 Hz)" in line
    assert "raise cases.fish.mesh.elements_per_wavelength" in line
    assert line.endswith("set cases.fish.mesh.allow_coarse: true to solve it anyway")
