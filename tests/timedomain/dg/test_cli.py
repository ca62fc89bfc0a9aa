"""The verify-dg, dg-scatter and dg-vs-bem subcommands write the contract files."""
import csv

import numpy as np
import pytest

from wavescat.cli import main


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


def test_dg_scatter_coarse_run_near_exact_series(tmp_path):
    """A deliberately coarse (N = 1, ~5k nodes) end-to-end run at ka = 1: amplitudes within
    20% of the exact rigid-sphere series (the fine GPU run is quoted in the report)."""
    probes = tmp_path / "probes.csv"
    probes.write_text("x,y,z\n1.4,0,0\n0,0,1.4\n0,0,-1.4\n")
    out, bem = tmp_path / "dg.csv", tmp_path / "bem.csv"
    args = ["dg-scatter", "--radius", "1", "--k", "1", "--direction", "0", "0", "1",
            "--probes", str(probes), "--out", str(out), "--order", "1", "--points-per-wavelength", "3",
            "--h-surface", "0.7", "--settle-periods", "0", "--dft-periods", "1", "--backend", "cpu",
            "--sponge-gap", "0.1", "--sponge-width", "0.6"]
    assert main(args) == 0
    rows = read(out)
    assert rows[0] == ["x", "y", "z", "re_p_dg", "im_p_dg"]
    from wavescat.reference.rigid_sphere import scattered_field

    pts = np.array([[float(v) for v in r[:3]] for r in rows[1:]])
    p = np.array([float(r[3]) + 1j * float(r[4]) for r in rows[1:]])
    exact = scattered_field(1.0, 1.0, [0, 0, 1], pts)
    assert np.linalg.norm(p - exact) / np.linalg.norm(exact) < 0.2
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
