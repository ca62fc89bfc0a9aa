"""The averages plot (plots.averages_plot): its curves are the table's, beside the TS they
average, with the angle convention and the linear averaging said (Figure objects inspected)."""
import numpy as np
import pytest

from wavescat.results import plots
from wavescat.results.averages import averages_table, parse_averages, ts_of_sigma


@pytest.fixture
def figures(monkeypatch):
    seen = {}
    save = plots._save

    def record(fig, path):
        seen[path.name] = fig
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", record)
    return seen


def test_averages_plot_draws_the_table_beside_the_single_ts(tmp_path, figures):
    from matplotlib.text import Text

    f = np.linspace(30e3, 46e3, 9)
    a = np.linspace(30.0, 150.0, 121)
    sigma = 1e-4 * np.outer(f / 38e3, 1 + np.cos(np.radians(a - 80.0)) ** 8)
    bands, tilts = parse_averages({"band": {"center_hz": 38e3, "width_hz": 8e3},
                                   "tilt": [{"mean_deg": 0, "std_deg": 10},
                                            {"mean_deg": 10, "std_deg": 15}]})
    rows = averages_table(sigma, f, a, bands, tilts)
    plots.averages_plot(tmp_path / "ts_averages.png", rows, f, a, "xz", ts_of_sigma(sigma),
                        tilts, "fish\na test")
    fig = figures["ts_averages.png"]
    left, right = fig.axes
    tilt0 = [r["ts_db"] for r in rows if r["average"] == "tilt" and r["tilt_mean_deg"] == 0]
    assert np.allclose(left.get_lines()[0].get_ydata(), tilt0)
    assert np.allclose(left.get_lines()[1].get_ydata(), ts_of_sigma(sigma[:, 60]))  # aspect 90
    bar = [r for r in rows if r["average"] == "band_tilt"][0]
    assert any(len(line.get_xdata()) == 2 and np.allclose(line.get_xdata(), [34e3, 42e3])
               and np.allclose(line.get_ydata(), bar["ts_db"]) for line in left.get_lines())
    band = [r["ts_db"] for r in rows if r["average"] == "band"]
    assert np.allclose(right.get_lines()[0].get_ydata(), band)
    assert np.allclose(right.get_lines()[1].get_ydata(), ts_of_sigma(sigma[4]))  # 38 kHz
    assert right.get_xlabel() == ("aspect angle = sonar direction (deg), xz plane: "
                                  "0\u00b0 = +x, 90\u00b0 = +z")
    text = " ".join(" ".join(t.get_text() for t in fig.findobj(Text)).split())
    assert "sigma_bs = |F|^2, then converted" in text and "fish: TS averages" in text
    assert "tilt N(10, 15)\u00b0" in text and "aspect 80\u00b0 (mean tilt) alone" in text
    assert (tmp_path / "ts_averages.png").stat().st_size > 0


def test_one_frequency_plots_ts_against_tilt_with_the_tilt_distributions(tmp_path, figures):
    """At one frequency the tilt panel drew a dot per average on a 36-40 kHz axis and its
    one-point "aspect alone" lines not at all: it plots the TS against tilt, each average a
    level over it, and below, on the same tilt axis, each distribution's pdf."""
    f = np.array([38e3])
    a = np.linspace(60.0, 120.0, 31)
    sigma = 1e-4 * (0.05 + np.cos(np.radians(a - 85.0)) ** 16)[None]
    _, tilts = parse_averages({"tilt": [{"mean_deg": 0, "std_deg": 10, "sign": 1},
                                        {"mean_deg": 5, "std_deg": 8, "sign": 1}]})
    rows = averages_table(sigma, f, a, (), tilts)
    plots.averages_plot(tmp_path / "ts_averages.png", rows, f, a, "xz", ts_of_sigma(sigma),
                        tilts, "sardine")
    top, bottom = figures["ts_averages.png"].axes
    ts, *levels = top.get_lines()
    assert np.allclose(ts.get_xdata(), a - 90.0) and np.allclose(ts.get_ydata(), ts_of_sigma(sigma[0]))
    averaged = [r["ts_db"] for r in rows if r["average"] == "tilt"]
    assert [line.get_ydata()[0] for line in levels] == pytest.approx(averaged)
    assert all(np.ptp(line.get_xdata()) == 60.0 for line in levels)  # over the tilts weighed
    for line, tilt in zip(bottom.get_lines(), tilts):
        x, pdf = line.get_xdata(), line.get_ydata()
        assert np.trapezoid(pdf, x) == pytest.approx(1.0)
        assert x[np.argmax(pdf)] == pytest.approx(tilt.mean_deg, abs=0.2)
    assert bottom.get_xlabel() == "tilt (deg): aspect = 90 + tilt"
    assert bottom.get_shared_x_axes().joined(top, bottom)
    assert "averaged over tilt N(5, 8)\u00b0: " in " ".join(
        t.get_text() for t in top.get_legend().get_texts())
