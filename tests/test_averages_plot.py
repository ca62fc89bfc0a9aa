"""The averages plot (plots.averages_plot): its curves are the table's, beside the TS they
average, with the angle convention and the linear averaging said (Figure objects inspected)."""
import numpy as np
import pytest

from wavescat import plots
from wavescat.averages import averages_table, parse_averages, ts_of_sigma


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
