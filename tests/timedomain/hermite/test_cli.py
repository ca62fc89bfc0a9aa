"""`wavescat verify-hermite` writes the contract table, the acoustics table and the plot."""
import csv

from wavescat.cli import main
from wavescat.timedomain.hermite import convergence


def test_verify_hermite_writes_tables_and_plot(tmp_path, monkeypatch):
    monkeypatch.setattr(convergence, "QUICK_GRIDS", {1: (4, 6), 2: (4, 6), 3: (4, 6)})
    out = tmp_path / "verification"
    rc = main(["verify-hermite", "--csv", str(out / "hermite_convergence.csv"),
               "--plot", str(out / "hermite_convergence.png"), "--backend", "cpu", "--quick"])
    assert rc == 0
    for name in ("hermite_convergence.csv", "hermite_convergence_acoustics.csv"):
        with open(out / name) as fh:
            rows = list(csv.reader(fh))
        assert rows[0] == ["m", "q", "cells", "h", "error_max", "observed_order"]
        assert [r[0] for r in rows[1:]] == ["1", "1", "2", "2", "3", "3"]
        assert [r[1] for r in rows[1:]] == ["9", "9", "15", "15", "21", "21"]
        assert rows[1][5] == "" and float(rows[2][5]) > 2.0  # first grid has no order
    assert (out / "hermite_convergence.png").stat().st_size > 10_000
    assert sorted(p.name for p in out.iterdir()) == [
        "hermite_convergence.csv", "hermite_convergence.png", "hermite_convergence_acoustics.csv"]


def test_verify_hermite_fails_when_a_degree_is_missed(tmp_path, monkeypatch, capsys):
    """Errors falling like h^(2m) instead of h^(2m+1) for m = 2: the run fails naming it."""
    def study(equation, quick=False, backend="cpu", precision="double"):
        rows = []
        for m in (1, 2):
            order = 2 * m + 1 if m == 1 else 2 * m
            for n in (4, 8):
                rows.append({"m": m, "q": 9, "cells": n**3, "h": 1.0 / n, "error_max": (1.0 / n) ** order,
                             "observed_order": float("nan")})
        return rows

    monkeypatch.setattr(convergence, "convergence_study", study)
    out = tmp_path / "verification"
    rc = main(["verify-hermite", "--csv", str(out / "h.csv"), "--plot", str(out / "h.png"),
               "--backend", "cpu"])
    assert rc == 2
    err = capsys.readouterr().err
    assert ("Hermite-Taylor convergence check failed: advection m = 2: observed order 4.00 from "
            "h = 0.25 to 0.125, expected 5 (at least 4.5); acoustics m = 2") in err
