"""The verify-dg, dg-scatter and dg-vs-bem subcommands write the contract files."""
import argparse
import csv
import json

import numpy as np
import pytest

from wavescat.backend import Backend
from wavescat.cli import main
from wavescat.commands import dg


def read(path):
    with open(path, newline="") as fh:
        return list(csv.reader(fh))


def test_verify_dg_writes_convergence_table(tmp_path):
    out, plot = tmp_path / "v" / "dg_convergence.csv", tmp_path / "v" / "dg.png"
    assert main(["verify-dg", "--csv", str(out), "--plot", str(plot), "--orders", "2", "--quick"]) == 0
    rows = read(out)
    assert rows[0] == ["order", "elements", "h", "error_l2", "observed_order"]
    assert [int(r[1]) for r in rows[1:]] == [48, 384]
    assert float(rows[2][4]) > 2.3 and plot.stat().st_size > 0


def sphere_case(boundary=None, frequencies=(1 / (2 * np.pi),), order=1, ppw=3.0):
    """A unit sphere in a unit medium (c = 1: k = 2 pi f) with incidence along +z."""
    case = {"geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": list(frequencies),
            "incident": {"direction": [0, 0, 1]},
            "dg_cross_check": {"order": order, "points_per_wavelength": ppw}}
    if boundary:
        case["boundary"] = boundary
    return json.dumps(case)


COARSE = ["--h-surface", "0.7", "--settle-periods", "0", "--dft-periods", "1", "--backend", "cpu",
          "--sponge-gap", "0.1", "--sponge-width", "0.5"]
UNIT_MEDIUM = json.dumps({"density": 1.0, "sound_speed": 1.0})


def test_dg_scatter_coarse_run_near_exact_series(tmp_path, monkeypatch, capsys, caplog):
    """A deliberately coarse (N = 1, ~5k nodes) end-to-end run at ka = 1: amplitudes within
    20% of the exact rigid-sphere series; the time stepping reports rate and ETA."""
    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0")
    probes = tmp_path / "probes.csv"
    probes.write_text("x,y,z\n1.4,0,0\n0,0,1.4\n0,0,-1.4\n")
    out, bem, summary = tmp_path / "dg.csv", tmp_path / "bem.csv", tmp_path / "dg_summary.json"
    args = ["dg-scatter", "--case", sphere_case(), "--medium", UNIT_MEDIUM,
            "--probes", str(probes), "--out", str(out), "--summary", str(summary), *COARSE]
    with caplog.at_level("INFO"):
        assert main(args) == 0
    steps = [line for line in capsys.readouterr().err.splitlines() if line.startswith("DG scattering N=1")]
    run = json.loads(summary.read_text())
    assert len(steps) >= 2 and f"{run['steps']}/{run['steps']}" in steps[-1]
    assert "steps/s" in steps[-1] and "<00:00" in steps[-1]  # rate and time left
    # on the CPU the sizes are capped (these are all within the caps) and the log says so
    assert run["sizes"] == "cpu" and run["tolerance"] == dg.DG_VS_BEM_TOLERANCE["cpu"]
    assert "dg-scatter on the CPU (requested cpu): CPU sizes order 1," in caplog.text
    rows = read(out)
    assert rows[0] == ["frequency_hz", "x", "y", "z", "re_p_dg", "im_p_dg"]
    from wavescat.reference.rigid_sphere import scattered_field

    pts = np.array([[float(v) for v in r[1:4]] for r in rows[1:]])
    p = np.array([float(r[4]) + 1j * float(r[5]) for r in rows[1:]])
    exact = scattered_field(1.0, 1.0, [0, 0, 1], pts)
    assert np.linalg.norm(p - exact) / np.linalg.norm(exact) < 0.2
    assert run["relative_l2_vs_exact"][0] == pytest.approx(np.linalg.norm(p - exact) / np.linalg.norm(exact))
    # the join with BEM values (here: the exact series standing in for them)
    bem.write_text("x,y,z,re_p_bem,im_p_bem\n" + "".join(
        f"{a},{b},{c},{float(e.real)!r},{float(e.imag)!r}\n" for (a, b, c), e in zip(pts, exact)))
    joined = tmp_path / "dg_vs_bem.csv"
    assert main(["dg-vs-bem", "--dg", str(out), "--bem", str(bem), "--out", str(joined)]) == 0
    assert read(joined)[0] == ["x", "y", "z", "re_p_dg", "im_p_dg", "re_p_bem", "im_p_bem"]


def test_bad_order_is_reported_not_raised(tmp_path, capsys):
    assert main(["verify-dg", "--csv", str(tmp_path / "a.csv"), "--plot", str(tmp_path / "a.png"),
                 "--orders", "9"]) == 2
    assert "order N = 9" in capsys.readouterr().err
    assert not (tmp_path / "a.csv").exists()


def _scatter_args(**kw):
    base = dict(order=4, points_per_wavelength=16.0, sponge_gap=0.5, sponge_width=2.0,
                settle_periods=4.0, dft_periods=2, h_surface=None, full_on_cpu=False)
    return argparse.Namespace(**{**base, **kw})


def test_cpu_sizes_cap_the_gpu_sizes_only_on_the_cpu():
    cpu, gpu = Backend("cpu", np, "test cpu", reason="auto: no GPU"), Backend("gpu", np, "test gpu")
    args = _scatter_args()
    assert dg._cpu_sizes(args, cpu, 2.0) == "cpu"
    caps = dg.CPU_SIZES
    assert (args.order, args.points_per_wavelength, args.sponge_gap, args.sponge_width,
            args.settle_periods, args.dft_periods) == (caps["order"], caps["points_per_wavelength"],
                                                       caps["sponge_gap"], caps["sponge_width"],
                                                       caps["settle_periods"], caps["dft_periods"])
    assert args.h_surface == pytest.approx(caps["h_surface_radii"] * 2.0)  # coarser than 0.2 radii
    for backend, kw in ((gpu, {}), (cpu, {"full_on_cpu": True})):
        args = _scatter_args(**kw)
        assert dg._cpu_sizes(args, backend, 2.0) == "full"
        assert (args.order, args.points_per_wavelength, args.h_surface) == (4, 16.0, None)


def _probe_files(tmp_path, p_dg, p_bem, tolerance):
    pts = [(1.5, 0, 0), (0, 1.5, 0), (0, 0, 1.5)]
    (tmp_path / "dg.csv").write_text("x,y,z,re_p_dg,im_p_dg\n" + "".join(
        f"{x},{y},{z},{float(p.real)!r},{float(p.imag)!r}\n" for (x, y, z), p in zip(pts, p_dg)))
    (tmp_path / "bem.csv").write_text("x,y,z,re_p_bem,im_p_bem\n" + "".join(
        f"{x},{y},{z},{float(p.real)!r},{float(p.imag)!r}\n" for (x, y, z), p in zip(pts, p_bem)))
    (tmp_path / "s.json").write_text(json.dumps({"tolerance": tolerance, "sizes": "cpu",
                                                 "order": 2, "elements": 4704}))
    return ["dg-vs-bem", "--dg", str(tmp_path / "dg.csv"), "--bem", str(tmp_path / "bem.csv"),
            "--out", str(tmp_path / "dg_vs_bem.csv"), "--summary", str(tmp_path / "s.json")]


def test_dg_vs_bem_fails_beyond_the_runs_tolerance(tmp_path, capsys):
    p_bem = np.array([1 + 1j, -0.5 + 0.2j, 0.3 - 0.7j])
    p_dg = p_bem * 1.1  # relative L2 difference exactly 0.1
    assert main(_probe_files(tmp_path, p_dg, p_bem, 0.15)) == 0
    assert "within the tolerance 0.15 of the cpu sizes" in capsys.readouterr().out
    assert main(_probe_files(tmp_path, p_dg, p_bem, 0.05)) == 2
    assert ("DG vs BEM check failed: relative L2 difference 0.1000 at 3 probes exceeds 0.05 "
            "(cpu sizes: order 2, 4704 elements)") in capsys.readouterr().err
    assert (tmp_path / "dg_vs_bem.csv").exists()  # the table is written for a look at it


def test_verify_dg_fails_when_an_order_is_missed(tmp_path, monkeypatch, capsys):
    from wavescat.timedomain.dg import cavity

    def half_order(orders, cells, *args):  # error ~ h^N: one order short of N + 1
        return [cavity.ConvergenceRow(o, 6 * c**3, 1.0 / c, (1.0 / c) ** o, float("nan"))
                for o in orders for c in cells]

    monkeypatch.setattr(cavity, "convergence_study", half_order)
    rc = main(["verify-dg", "--csv", str(tmp_path / "a.csv"), "--plot", str(tmp_path / "a.png"),
               "--orders", "2", "3"])
    assert rc == 2
    err = capsys.readouterr().err
    assert ("DG convergence check failed: N = 2: observed order 2.00 from h = 0.25 to 0.125, "
            "expected 3 (at least 2.5); N = 3: observed order 3.00") in err


def test_dg_vs_bem_over_a_band_plots_each_frequency(tmp_path, capsys):
    """A pulse run's table (a frequency column): one difference per frequency, each against
    the tolerance, and the band plot (DG and BEM at every probe over the band)."""
    pts = [(1.5, 0, 0), (0, 1.5, 0), (0, 0, 1.5)]
    p_bem = {100.0: np.array([1 + 1j, -0.5 + 0.2j, 0.3 - 0.7j]),
             200.0: np.array([0.2 - 1j, 0.4 + 0.1j, -0.6 - 0.3j])}
    scale = {100.0: 1.02, 200.0: 1.04}  # relative L2 differences 0.02 and 0.04
    for name, column in (("dg", "dg"), ("bem", "bem")):
        rows = "".join(f"{f},{x},{y},{z},{q.real!r},{q.imag!r}\n" for f, p in p_bem.items()
                       for (x, y, z), q in zip(pts, (complex(q) for q in p * (scale[f] if name == "dg" else 1.0))))
        (tmp_path / f"{name}.csv").write_text(
            f"frequency_hz,x,y,z,re_p_{column},im_p_{column}\n" + rows)
    (tmp_path / "s.json").write_text(json.dumps({"tolerance": 0.05, "sizes": "cpu"}))
    plot = tmp_path / "band.png"
    assert main(["dg-vs-bem", "--dg", str(tmp_path / "dg.csv"), "--bem", str(tmp_path / "bem.csv"),
                 "--out", str(tmp_path / "out.csv"), "--errors", str(tmp_path / "e.json"),
                 "--plot", str(plot), "--summary", str(tmp_path / "s.json")]) == 0
    errors = json.loads((tmp_path / "e.json").read_text())
    np.testing.assert_allclose(errors["relative_l2"], [0.02, 0.04], rtol=1e-9)
    assert "within the tolerance 0.05 of the cpu sizes at all 2 frequencies" in capsys.readouterr().out
    assert plot.stat().st_size > 0
