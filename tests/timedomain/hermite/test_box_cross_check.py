"""The Hermite-Taylor box cross-check of `verify_hermite`: the case key `hermite_cross_check`
(defaults, refusals), `wavescat hermite-scatter` at a tiny size and `wavescat hermite-vs-bem`
against a BEM table that agrees or not (no BEM solve: the table is the run's own, scaled)."""
import argparse
import copy
import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from wavescat.backend import Backend
from wavescat.cli import main
from wavescat.commands import hermite_box
from wavescat.configuration.config import prepare_config
from wavescat.errors import ConfigError

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = yaml.safe_load((ROOT / "config" / "examples" / "hermite_box.yaml").read_text())


def prepared(change=None):
    cfg = copy.deepcopy(EXAMPLE)
    if change:
        change(cfg["cases"]["box_band"])
    return prepare_config(cfg, base_dir=ROOT)["cases"]["box_band"]


def test_the_example_takes_the_defaults_and_dgs_probes():
    case = prepared()
    check = case["hermite_cross_check"]
    assert {k: check[k] for k in ("enabled", "degree", "cells_per_wavelength",
                                  "cells_per_half_side", "sponge_gap", "sponge_width")} == {
        "enabled": True, "degree": 2, "cells_per_wavelength": 16.0, "cells_per_half_side": 8.0,
        "sponge_gap": 0.5, "sponge_width": 1.0}
    assert check["probes"] == case["dg_cross_check"]["probes"]

    def own(c):
        c["hermite_cross_check"].update(probes=[[0, 0, -0.9]], degree=3, cells_per_wavelength=12)
        del c["dg_cross_check"]
    check = prepared(own)["hermite_cross_check"]
    assert (check["probes"], check["degree"], check["cells_per_wavelength"]) == ([[0, 0, -0.9]], 3, 12)


def _set(**keys):
    def change(case):
        for key, value in keys.items():
            if key.startswith("check_"):
                case["hermite_cross_check"][key[6:]] = value
            else:
                case[key] = value
    return change


def _no_dg(case):
    del case["dg_cross_check"]


WHY = "cases.box_band.hermite_cross_check"


@pytest.mark.parametrize("change, message", [
    (_set(geometry={"kind": "sphere", "radius": 0.5}),
     f"{WHY}: the Hermite cross-check models a rigid box (the grid holds its faces exactly); "
     "this body is a rigid sphere"),
    (_set(geometry={"kind": "cylinder", "radius": 0.5, "length": 1.0}, dg_cross_check={"enabled": False},
          check_probes=[[2, 0, 0]]),
     f"{WHY}: the Hermite cross-check models a rigid box (the grid holds its faces exactly); "
     "this body is a rigid cylinder"),
    (_set(boundary={"kind": "pressure_release"}),
     f"{WHY}: the Hermite cross-check models a rigid box (the grid holds its faces exactly); "
     "this body is a pressure_release box"),
    (_set(incident={"direction": [0, 3, 4]}),
     f"{WHY}: incident direction [0.0, 0.6, 0.8]: the Hermite "
     "cross-check needs it along one of the box's axes (x, y or z)"),
    (_set(geometry={"kind": "box", "size": [1.0, 1.3, 1.0]}),
     f"{WHY}: box size [1.0, 1.3, 1.0]: its half-sides must be whole multiples of the Hermite "
     "grid's cell"),
    (_no_dg, f"{WHY}.probes: required (the case has no dg_cross_check.probes to take)"),
    (_set(check_probes=[[2, 0, 0], [0.2, 0.4, -0.1]]),
     f"{WHY}.probes[1] = [0.2, 0.4, -0.1]: must lie outside the box"),
    (_set(check_degree=0), f"{WHY}.degree = 0: must be >= 1"),
    (_set(check_cells_per_wavelength=0), f"{WHY}.cells_per_wavelength = 0: must be > 0"),
    (_set(check_sponge_width=0), f"{WHY}.sponge_width = 0: must be > 0"),
    (_set(check_colour="red"), f"{WHY}"),
], ids=["sphere", "cylinder", "pressure-release", "oblique", "cell", "no-probes", "probe-inside",
        "degree", "cells", "sponge", "unknown-key"])
def test_cases_it_cannot_take_are_refused_in_one_line(change, message):
    with pytest.raises(ConfigError) as info:
        prepared(change)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_disabled_check_takes_anything():
    case = prepared(_set(geometry={"kind": "sphere", "radius": 0.5}, check_enabled=False,
                         dg_cross_check={"enabled": False}))
    assert case["hermite_cross_check"]["enabled"] is False


def test_the_cpu_sizes_cap_the_grid_on_the_cpu_only():
    cpu, gpu = Backend("cpu", np, "test cpu", reason="auto: no GPU"), Backend("gpu", np, "test gpu")

    def args(**kw):
        return argparse.Namespace(**{"cells_per_wavelength": 16.0, "cells_per_half_side": 8.0,
                                     "sponge_gap": 0.5, "sponge_width": 1.0, "full_on_cpu": False,
                                     "quick": False, **kw})
    small, full = (8.0, 4.0, 0.25, 0.5), (16.0, 8.0, 0.5, 1.0)
    for backend, kw, sizes, used in ((cpu, {}, "cpu", small), (gpu, {}, "full", full),
                                     (cpu, {"full_on_cpu": True}, "full", full),
                                     (gpu, {"quick": True}, "cpu", small),
                                     (cpu, {"cells_per_wavelength": 5.0, "sponge_gap": 0.1}, "cpu",
                                      (5.0, 4.0, 0.1, 0.5))):
        a = args(**kw)
        assert hermite_box._sizes(a, backend) == sizes
        assert (a.cells_per_wavelength, a.cells_per_half_side, a.sponge_gap, a.sponge_width) == used
    assert hermite_box.HERMITE_VS_BEM_TOLERANCE["full"] == 0.05


TINY = {"geometry": {"kind": "box", "size": [1.0, 1.0, 1.0]},
        "frequencies_hz": {"start": 400.0, "stop": 600.0, "count": 2},
        "incident": {"direction": [0, -1, 0]},
        "hermite_cross_check": {"cells_per_wavelength": 4, "cells_per_half_side": 1,
                                "sponge_gap": 0.1, "sponge_width": 0.3,
                                "probes": [[1, 0, 0], [0, -1, 0], [0.3, 0.9, 0.6]]}}
MEDIUM = json.dumps({"sound_speed": 1500.0, "density": 1000.0})


def read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """hermite-scatter on a 1 m cube over 400 and 600 Hz, 2 cells across it (h = 0.5 m)."""
    out = tmp_path_factory.mktemp("hermite")
    assert main(["hermite-scatter", "--case", json.dumps(TINY), "--medium", MEDIUM,
                 "--out", str(out / "hermite_probes.csv"), "--summary", str(out / "hermite_summary.json"),
                 "--backend", "cpu"]) == 0
    return out


def test_hermite_scatter_writes_its_table_and_summary(tiny_run):
    rows = read(tiny_run / "hermite_probes.csv")
    assert list(rows[0]) == ["frequency_hz", "x", "y", "z", "re_p_hermite", "im_p_hermite"]
    assert [float(r["frequency_hz"]) for r in rows] == [400.0] * 3 + [600.0] * 3
    assert [float(rows[1][k]) for k in "xyz"] == [0.0, -1.0, 0.0]
    p = np.array([complex(float(r["re_p_hermite"]), float(r["im_p_hermite"])) for r in rows])
    # the back-scattered field (the probe the wave meets first) is the strongest, and nothing vanishes
    assert np.all(np.abs(p) > 0.01) and abs(p[1]) > abs(p[0])
    run = json.loads((tiny_run / "hermite_summary.json").read_text())
    assert (run["sizes"], run["tolerance"], run["backend"]) == ("cpu", 0.1, "cpu")
    assert (run["degree"], run["cells_per_wavelength"], run["h"], run["signal"]) == (2, 4.0, 0.5, "pulse")
    assert run["cells"] == int(np.prod(run["grid"])) and run["steps"] > 10 and run["run_s"] > 0


def _bem_table(tiny_run, path, scale):
    rows = read(tiny_run / "hermite_probes.csv")
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["frequency_hz", "x", "y", "z", "re_p_bem", "im_p_bem"])
        for r in rows:
            p = complex(float(r["re_p_hermite"]), float(r["im_p_hermite"])) * scale[float(r["frequency_hz"])]
            w.writerow([r["frequency_hz"], r["x"], r["y"], r["z"], repr(p.real), repr(p.imag)])


def test_hermite_vs_bem_passes_when_the_bem_agrees_and_fails_naming_the_frequency(tiny_run, tmp_path, capsys):
    args = ["hermite-vs-bem", "--hermite", str(tiny_run / "hermite_probes.csv"),
            "--bem", str(tmp_path / "bem.csv"), "--out", str(tmp_path / "hermite_vs_bem.csv"),
            "--errors", str(tmp_path / "e.json"), "--plot", str(tmp_path / "hermite_vs_bem.png"),
            "--summary", str(tiny_run / "hermite_summary.json")]
    _bem_table(tiny_run, tmp_path / "bem.csv", {400.0: 1.0, 600.0: 1.001})
    assert main(args) == 0
    assert "within the tolerance 0.1 of the cpu sizes at all 2 frequencies" in capsys.readouterr().out
    joined = read(tmp_path / "hermite_vs_bem.csv")
    assert list(joined[0]) == ["x", "y", "z", "re_p_hermite", "im_p_hermite", "re_p_bem", "im_p_bem"]
    assert len(joined) == 6 and (tmp_path / "hermite_vs_bem.png").stat().st_size > 0
    errors = json.loads((tmp_path / "e.json").read_text())
    assert errors["frequencies_hz"] == [400.0, 600.0] and errors["tolerance"] == 0.1
    np.testing.assert_allclose(errors["relative_l2"], [0.0, 0.001 / 1.001], atol=1e-12)

    # the BEM 15% below the run at 600 Hz: Hermite 17.6% off, beyond the CPU sizes' 10%
    _bem_table(tiny_run, tmp_path / "bem.csv", {400.0: 1.0, 600.0: 0.85})
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "Hermite-Taylor vs BEM check failed: relative L2 difference 0.1765 at 3 probes at 600 Hz " \
           "exceeds 0.1 (cpu sizes: m 2, 4.0 cells per wavelength, " in err
    assert "400 Hz" not in err
    # and at the full sizes' 5%, the BEM 10% off fails too
    run = json.loads((tiny_run / "hermite_summary.json").read_text())
    (tmp_path / "full.json").write_text(json.dumps({**run, "sizes": "full", "tolerance": 0.05}))
    _bem_table(tiny_run, tmp_path / "bem.csv", {400.0: 1.1, 600.0: 1.0})
    assert main(args[:-1] + [str(tmp_path / "full.json")]) == 2
    assert "difference 0.0909 at 3 probes at 400 Hz exceeds 0.05 (full sizes" in capsys.readouterr().err


def test_hermite_vs_bem_refuses_other_probes(tiny_run, tmp_path, capsys):
    (tmp_path / "bem.csv").write_text("x,y,z,re_p_bem,im_p_bem\n2,0,0,1,0\n")
    assert main(["hermite-vs-bem", "--hermite", str(tiny_run / "hermite_probes.csv"),
                 "--bem", str(tmp_path / "bem.csv"), "--out", str(tmp_path / "o.csv")]) == 2
    assert "must list the same frequencies and probe points" in capsys.readouterr().err


def test_the_cell_follows_the_box_where_it_is_small_beside_the_wavelength():
    """The error at the edges falls with the cell over the half-side: a small box gets at least
    cells_per_half_side cells along its shortest half-side whatever the wavelength asks, a
    large one the wavelength's cell; either way the cell divides every half-side."""
    from wavescat.timedomain.hermite.box_checks import grid_cell

    assert grid_cell([0.3, 0.3, 0.6], 1.667, 8.0) == pytest.approx(0.15)  # the wavelength's
    assert grid_cell([0.3, 0.3, 0.6], 1.667, 8.0, 4.0) == pytest.approx(0.075)  # the box's
    assert grid_cell([0.5, 0.5, 0.5], 1.047, 16.0, 8.0) == pytest.approx(0.0625)  # both: a / 8
    assert grid_cell([2.0, 2.0, 4.0], 1.0, 8.0, 4.0) == pytest.approx(0.125)  # the wavelength's
