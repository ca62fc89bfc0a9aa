"""`wavescat averages` and `wavescat study-averages` on far-field tables written here, and the
workflow's DAG for cases and studies with `averages` (a dry run)."""
import csv
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from wavescat.results.averages import AVERAGES_HEADER
from wavescat.configuration.case import Case
from wavescat.cli import main
from wavescat.problem.farfield import directions_to_angles, plane_directions
from wavescat.solve.records import FARFIELD_HEADER
from wavescat.results.study_table import gather_averages

SWEEP = {"plane": "xz", "start_deg": 30.0, "stop_deg": 150.0, "count": 121}
FREQS = [36e3, 37e3, 38e3, 39e3, 40e3]


def write_farfield(path, F, sweep=SWEEP, freqs=FREQS):
    a = np.linspace(sweep["start_deg"], sweep["stop_deg"], sweep["count"])
    theta, phi = directions_to_angles(plane_directions(sweep["plane"], a))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FARFIELD_HEADER)
        for i, f in enumerate(freqs):
            for j in range(len(a)):
                v = F[i, j]
                w.writerow([repr(float(f)), f"{theta[j]:.10g}", f"{phi[j]:.10g}",
                            repr(float(v.real)), repr(float(v.imag)),
                            f"{20 * np.log10(abs(v)):.8f}"])
    return a


def read_rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_averages_command_writes_the_documented_table(tmp_path):
    # sigma = |F|^2 linear in frequency and the same at every aspect: band rows are the value
    # at the band's middle, tilt rows the value at their frequency
    f = np.array(FREQS)
    sigma = 1e-4 * (1 + (f - 38e3) / 4e3)
    F = np.sqrt(sigma)[:, None] * np.exp(1j * np.linspace(0, 3, 121))[None, :]
    write_farfield(tmp_path / "farfield.csv", F)
    case = {"incident": {"aspect": SWEEP},
            "averages": {"band": [{"center_hz": 38e3, "width_hz": 2e3},
                                  {"center_hz": 37.5e3, "width_hz": 3e3}],
                         "tilt": [{"mean_deg": 0, "std_deg": 10}]}}
    out = tmp_path / "ts_averages.csv"
    rc = main(["averages", "--case", json.dumps(case), "--farfield",
               str(tmp_path / "farfield.csv"), "--out", str(out), "--plot",
               str(tmp_path / "ts_averages.png"), "--name", "fish"])
    assert rc == 0 and (tmp_path / "ts_averages.png").stat().st_size > 0
    assert out.read_text().splitlines()[0] == ",".join(AVERAGES_HEADER)
    rows = read_rows(out)
    kinds = [r["average"] for r in rows]
    assert kinds == ["band"] * 242 + ["tilt"] * 5 + ["band_tilt"] * 2
    first = rows[0]
    assert (first["f_low_hz"], first["f_high_hz"], first["frequencies"]) == (
        "37000.0", "39000.0", "3")
    assert first["tilt_mean_deg"] == "" and first["aspect_low_deg"] == "30.0"
    assert float(first["sigma_bs_m2"]) == pytest.approx(1e-4, rel=1e-13)
    assert float(rows[121]["sigma_bs_m2"]) == pytest.approx(1e-4 * (1 - 0.5 / 4), rel=1e-13)
    for i, r in enumerate(rows[242:247]):
        assert float(r["sigma_bs_m2"]) == pytest.approx(sigma[i], rel=1e-13)
        assert r["band_center_hz"] == "" and r["aspects"] == "121"
        assert float(r["ts_db"]) == pytest.approx(10 * np.log10(sigma[i]), abs=1e-12)
    assert float(rows[-1]["sigma_bs_m2"]) == pytest.approx(1e-4 * (1 - 0.5 / 4), rel=1e-13)


def test_averages_command_refuses_a_table_of_another_sweep(tmp_path, capsys):
    F = np.ones((len(FREQS), 121), complex)
    write_farfield(tmp_path / "farfield.csv", F)
    case = {"incident": {"aspect": {**SWEEP, "start_deg": 20.0}},
            "averages": {"tilt": {"mean_deg": 0, "std_deg": 10}}}
    rc = main(["averages", "--case", json.dumps(case), "--farfield",
               str(tmp_path / "farfield.csv"), "--out", str(tmp_path / "out.csv")])
    assert rc == 2 and "not the sweep's aspects" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()


def test_study_table_pairs_each_case_with_its_file(tmp_path):
    paths = {}
    for name, value in (("s_b", "2.0"), ("s_a", "1.0")):
        paths[name] = tmp_path / f"{name}.csv"
        paths[name].write_text(",".join(AVERAGES_HEADER) + "\n" +
                               ",".join(["tilt"] + [""] * 10 + [value, "0"]) + "\n")
    cases = {n: Case.from_dict({"study": {"base": "b",
                                          "parameters": {"geometry.radius": float(v)}}}, name=n)
             for n, v in (("s_a", "1.0"), ("s_b", "2.0"))}
    gather_averages(cases, paths, tmp_path / "study.csv")
    rows = read_rows(tmp_path / "study.csv")
    assert [(r["case"], r["geometry.radius"], r["sigma_bs_m2"]) for r in rows] == [
        ("s_a", "1.0", "1.0"), ("s_b", "2.0", "2.0")]


DRY = """
run: [fish, tilts]
cases:
  fish:
    geometry: {kind: spheroid, semi_axes: [0.3, 0.1, 0.1]}
    frequencies_hz: {start: 400, stop: 600, count: 3}
    incident: {aspect: {plane: xz, start_deg: 30, stop_deg: 150, count: 25}}
    averages: {tilt: {mean_deg: 0, std_deg: 15}, band: {center_hz: 500, width_hz: 200}}
  plain:
    geometry: {kind: sphere, radius: 0.2}
    frequencies_hz: [500]
studies:
  tilts:
    cases: [fish]
    vary: {geometry.semi_axes: [[0.3, 0.1, 0.1], [0.25, 0.1, 0.1], [0.2, 0.1, 0.1]]}
"""


def test_workflow_builds_case_and_study_averages(repo):
    (repo / "dry.yaml").write_text(DRY)
    out = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--configfile=dry.yaml",
                          "target_strength"], cwd=repo, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert re.search(r"^ts_averages\s+4$", text, re.M)  # fish and the study's three cases
    assert re.search(r"^study_averages\s+1$", text, re.M)
    assert "results/tilts/ts_averages.csv" in text and "results/fish/ts_averages.csv" in text
    # the study tables get each case's file in the order of the cases they are told
    for command, flag in (("study-averages", "--averages"), ("wavescat study ", "--farfields")):
        line = next(ln for ln in text.splitlines() if command in ln)
        names = list(json.loads(re.search(r"--cases '(\{.*?\})' ", line).group(1)))
        files = re.search(flag + r" (.*?) --out", line).group(1).split()
        assert [f.split("/")[1] for f in files] == names
        assert len(names) == 3
