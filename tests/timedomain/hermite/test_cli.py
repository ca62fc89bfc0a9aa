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
