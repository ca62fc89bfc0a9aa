"""`wavescat solve` and `wavescat collect` through the CLI: files, headers, attributes."""
import csv
import json
import math

import h5py
import numpy as np
import pytest

from wavescat import cli
from wavescat.problem import farfield
from wavescat.defaults import GMRES
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import rigid_sphere
from wavescat.solve import records

C = 1500.0


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("solve")
    mesh = icosphere(1)
    mesh.write(tmp / "mesh.msh")
    case = {"incident": {"direction": [0, 0, 1]}, "receivers": {"plane": "xz", "count": 37},
            "solver": {"operator_format": "dense", "backend": "cpu"}}
    freqs = [0.5 * C / (2 * math.pi), 0.75 * C / (2 * math.pi)]
    outs = []
    for i, f in enumerate(freqs):
        out = tmp / "solutions" / f"f{i}.h5"
        assert cli.main(["solve", "--case", json.dumps(case), "--medium",
                         json.dumps({"sound_speed": C}), "--mesh", str(tmp / "mesh.msh"),
                         "--frequency", repr(f), "--out", str(out), "--name", "ball"]) == 0
        outs.append(out)
    # an exact reference table in the farfield.csv format
    rec = np.linspace(0, 2 * np.pi, 37)
    dirs = np.column_stack([np.cos(rec), np.zeros_like(rec), np.sin(rec)])
    with open(tmp / "reference.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(records.FARFIELD_HEADER)
        theta, phi = farfield.directions_to_angles(dirs)
        for f in freqs:
            F = rigid_sphere.far_field(2 * math.pi * f / C, 1.0, [0, 0, 1], dirs)
            for t, p, v in zip(theta, phi, F):
                w.writerow([f, t, p, v.real, v.imag, 20 * np.log10(abs(v))])
    assert cli.main(["collect", "--name", "ball", "--inputs", *map(str, outs[::-1]),
                     "--farfield", str(tmp / "farfield.csv"), "--summary", str(tmp / "summary.json"),
                     "--plots", str(tmp / "plots"), "--reference", str(tmp / "reference.csv")]) == 0
    return tmp, mesh, outs, freqs


def test_solution_file_attributes(run):
    tmp, mesh, outs, freqs = run
    with h5py.File(outs[0]) as f:
        a = f.attrs
        assert a["mesh_fingerprint"] == mesh.fingerprint()
        assert a["formulation"] == "osrc_burton_miller" and a["precision"] == "double"
        assert a["wavenumber"] == pytest.approx(0.5)
        assert json.loads(a["solver_settings"])["gmres"] == GMRES
        for stage in records.STAGES:
            assert a[f"time_{stage}_s"] >= 0
        assert f["surface_pressure"].shape == (1, mesh.n_vertices)
        assert f["far_field"].shape == (1, 37) and f["iterations"][0] > 0


def test_farfield_csv_and_summary(run):
    tmp, mesh, outs, freqs = run
    with open(tmp / "farfield.csv") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["frequency_hz", "theta_deg", "phi_deg", "re_F", "im_F", "ts_db"]
    data = np.array(rows[1:], float)
    assert data.shape == (2 * 37, 6)
    assert np.allclose(data[:37, 0], freqs[0]) and np.allclose(data[37:, 0], freqs[1])
    # xz plane, angle a: (cos a, 0, sin a) -> theta = 90 - a at a = 0..90
    assert data[0, 1] == pytest.approx(90.0) and data[9, 1] == pytest.approx(0.0)
    assert np.allclose(data[:, 5], 20 * np.log10(np.hypot(data[:, 3], data[:, 4])))
    s = json.loads((tmp / "summary.json").read_text())
    assert s["dofs"] == mesh.n_vertices and s["elements"] == mesh.n_triangles
    assert s["backend"] == "cpu" and s["precision"] == "double" and s["device"]
    assert s["backend_reason"] == "requested cpu"
    # the operator format and why (auto's choice against the machine, or the config's)
    assert s["operator_format"] == "dense"
    assert s["operator_format_reason"] == "operator_format: dense"
    assert {f["operator_format"] for f in s["frequencies"]} == {"dense"}
    assert [f["frequency_hz"] for f in s["frequencies"]] == pytest.approx(freqs)
    for f in s["frequencies"]:
        assert set(f["stage_times_s"]) == set(records.STAGES) and f["iterations"][0] > 0
        assert f["relative_l2_error"] < 0.2  # 42 DOFs: plumbing, not accuracy
    plots = sorted(p.name for p in (tmp / "plots").iterdir())
    assert "bistatic_ts_polar.png" in plots and "ts_vs_frequency.png" in plots
    assert "ts_vs_exact_f0.png" in plots


def test_coarse_mesh_warns_and_failure_leaves_no_file(tmp_path, capsys):
    icosphere(0).write(tmp_path / "coarse.msh")
    case = {"incident": {"direction": [1, 0, 0]}, "receivers": {"plane": "xy", "count": 5},
            "solver": {"operator_format": "dense", "backend": "cpu"}}
    args = ["--medium", json.dumps({"sound_speed": C}), "--mesh", str(tmp_path / "coarse.msh"),
            "--frequency", repr(2.5 * C / (2 * math.pi))]  # 2.4 elements per wavelength
    out = tmp_path / "f0.h5"
    assert cli.main(["solve", "--case", json.dumps(case), *args, "--out", str(out)]) == 0
    assert "elements per wavelength" in records.read_solution(out)["warnings"][0]
    # at ka = 3 (1.99 elements per wavelength) the solve is refused before assembly
    refused = [*args[:-1], repr(3.0 * C / (2 * math.pi))]
    assert cli.main(["solve", "--case", json.dumps(case), *refused,
                     "--out", str(tmp_path / "no.h5")]) == 2
    assert "far too coarse to solve" in capsys.readouterr().err
    assert not (tmp_path / "no.h5").exists()
    case["solver"]["gmres"] = {"tol": 1e-12, "restart": 1, "maxiter": 1}
    bad = tmp_path / "bad.h5"
    assert cli.main(["solve", "--case", json.dumps(case), *args, "--out", str(bad)]) == 2
    assert "did not converge" in capsys.readouterr().err
    assert list(tmp_path.glob("bad*")) == [] and not list(tmp_path.glob(".*tmp"))


def test_monostatic_aspect_sweep(tmp_path):
    mesh = icosphere(1)
    mesh.write(tmp_path / "m.msh")
    case = {"incident": {"aspect": {"plane": "xy", "start_deg": 0, "stop_deg": 90, "count": 4}},
            "receivers": {"plane": "xz", "count": 5},
            "solver": {"operator_format": "dense", "backend": "cpu"}}
    f = 1.0 * C / (2 * math.pi)
    assert cli.main(["solve", "--case", json.dumps(case), "--medium", json.dumps({"sound_speed": C}),
                     "--mesh", str(tmp_path / "m.msh"), "--frequency", repr(f),
                     "--out", str(tmp_path / "f0.h5")]) == 0
    assert cli.main(["collect", "--name", "aspect", "--inputs", str(tmp_path / "f0.h5"),
                     "--farfield", str(tmp_path / "ff.csv"), "--summary", str(tmp_path / "s.json"),
                     "--plots", str(tmp_path / "plots")]) == 0
    data = records.read_farfield_csv(tmp_path / "ff.csv")
    # one row per aspect angle: the monostatic receiver sits at the aspect direction
    assert np.allclose(data["theta_deg"], 90) and np.allclose(data["phi_deg"], [0, 30, 60, 90])
    sol = records.read_solution(tmp_path / "f0.h5")
    assert np.allclose(sol["incident_directions"][1], [-np.cos(np.pi / 6), -0.5, 0])
    assert sol["far_field"].shape == (4, 5)
    # a sphere: the backscatter is (almost, on a polyhedron) the same from every aspect
    F = data["re_F"] + 1j * data["im_F"]
    exact = rigid_sphere.far_field(1.0, 1.0, [1, 0, 0], [[-1, 0, 0]])[0]
    assert np.abs(F - exact).max() < 0.1 * abs(exact)
    assert (tmp_path / "plots" / "monostatic_ts.png").is_file()
