"""Report plots: the figures written for a case and a study carry TS in dB re 1 m, the angle
convention, the incidence direction and the exact series (Figure objects inspected, no pixels)."""
import math

import numpy as np
import pytest

from wavescat.results import plots
from wavescat.configuration.case import Case
from wavescat.commands.collect import make_plots
from wavescat.problem.farfield import incident_directions, receiver_directions, target_strength
from wavescat.reference import rigid_sphere
from wavescat.results.study_table import plot_study
from wavescat.solve.records import FARFIELD_HEADER

C = 1500.0
OFFSET = 1.05  # the "computed" far field: the exact one 0.42 dB high, so both curves show


def ka_hz(ka, radius=1.0):
    return ka * C / (2 * math.pi * radius)


def solution(case, f):
    """A solution dict as records.read_solution gives it, from the exact rigid unit sphere."""
    k = 2 * math.pi * f / C
    rec, inc = receiver_directions(case["receivers"]), incident_directions(case["incident"])
    receivers = {"theta_deg": rec.theta_deg, "phi_deg": rec.phi_deg, "directions": rec.vectors}
    if rec.angle_deg is not None:
        receivers.update(angle_deg=rec.angle_deg, plane=rec.plane)
    out = {"frequency_hz": f, "monostatic": inc.monostatic, "incident_directions": inc.directions,
           "receivers": receivers,
           "far_field": OFFSET * np.array([rigid_sphere.far_field(k, 1.0, d, rec.vectors)
                                           for d in inc.directions])}
    if inc.monostatic:
        out.update(aspect_deg=inc.aspect_deg, aspect_plane=inc.plane,
                   monostatic_far_field=OFFSET * np.array(
                       [rigid_sphere.far_field(k, 1.0, d, [-d])[0] for d in inc.directions]))
    return out


def reference_table(solutions):
    """The exact far field in the read_farfield_csv layout: receivers, or one row per aspect."""
    rows = []
    for s in solutions:
        F = s["monostatic_far_field"] if s["monostatic"] else s["far_field"].ravel()
        rows += [[s["frequency_hz"], 0.0, 0.0, v.real / OFFSET, v.imag / OFFSET, 0.0] for v in F]
    data = np.array(rows)
    return {name: data[:, i] for i, name in enumerate(FARFIELD_HEADER)}


@pytest.fixture
def figures(monkeypatch):
    """{file name: Figure} of every plot written while the test runs."""
    seen = {}
    save = plots._save

    def record(fig, path):
        seen[path.name] = fig
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", record)
    return seen


def texts(fig):
    """Every piece of text on a figure: titles, labels, tick labels, legends, notes."""
    from matplotlib.text import Text

    return [t.get_text() for t in fig.findobj(Text) if t.get_text()]


def prose(fig):
    """All text of a figure as one line (the notes under a plot are wrapped)."""
    return " ".join(" ".join(texts(fig)).split())


def polar_axes(fig):
    (ax,) = [a for a in fig.axes if a.name == "polar"]
    return ax


def legend_labels(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


BISTATIC = {"incident": {"direction": [0, 0, 1]}, "receivers": {"plane": "xz", "count": 361}}


def test_bistatic_polar_has_db_axis_convention_incidence_and_exact_series(tmp_path, figures):
    sols = [solution(BISTATIC, ka_hz(3.0))]
    written = make_plots(sols, tmp_path, "ball", reference_table(sols), "rigid unit sphere, ka = 3")
    assert {p.name for p in written} == {"bistatic_ts_polar.png", "ts_vs_exact_f0.png"}
    assert all(p.stat().st_size > 0 for p in written)
    fig = figures["bistatic_ts_polar.png"]
    ax, words = polar_axes(fig), texts(fig)
    assert ax.get_title() == ("ball: bistatic target strength, 716.2 Hz\nrigid unit sphere, ka = 3\n"
                              "radius: TS in dB re 1 m")
    # 0 deg to the right, counter-clockwise, the plane's axes named at 0 and 90 deg
    assert ax.get_theta_offset() == 0 and ax.get_theta_direction() == 1
    tick_labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "0\u00b0\n+x" in tick_labels and "90\u00b0 +z" in tick_labels
    assert "xz plane, 0\u00b0 = +x, 90\u00b0 = +z (counter-clockwise from +x towards +z)" in prose(fig)
    assert ("angle = receiver direction. Incident wave (arrow) travels along d = (0, 0, 1): "
            "backscatter at 270\u00b0, forward scatter at 90\u00b0") in prose(fig)
    # the incidence arrow comes from -z (below the centre), pointing up along d = +z
    (arrow,) = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None and not a.get_text()]
    (tail_x, tail_y), (head_x, head_y) = arrow.xyann, arrow.xy
    assert tail_x == pytest.approx(0.5) and head_x == pytest.approx(0.5) and tail_y < head_y < 0
    assert any(w == "incident\nwave" for w in words)
    # radial axis in dB: ring labels in dB, top a ring above the maximum, floor 20-80 dB below
    ts, exact = (target_strength(sols[0]["far_field"][0]),
                 target_strength(sols[0]["far_field"][0] / OFFSET))
    floor, top = ax.get_ylim()
    assert top >= ts.max() + 1 and top % 5 == 0 and 20 <= top - floor <= 80
    rings = [t for t in ax.texts if t.get_text().endswith(" dB")]
    assert [float(t.get_text()[:-3]) for t in rings] == list(np.arange(floor, top + 1e-9,
                                                                       plots.radial_step(top - floor))[1:])
    # ... placed away from the curve: where it is in the lower half of its range
    where = np.degrees(rings[0].get_position()[0]) % 360
    angle = np.linspace(0, 360, 361)
    assert np.interp(where, angle, ts) < 0.5 * (ts.min() + ts.max())
    # computed and exact series both drawn, told apart in the legend
    curves = [line.get_ydata() for line in ax.get_lines()]
    assert any(np.allclose(c, np.maximum(ts, floor)) for c in curves)
    assert any(np.allclose(c, np.maximum(exact, floor)) for c in curves)
    assert legend_labels(ax) == ["computed (BEM)", "exact series"]


def test_cartesian_against_exact_has_error_panel_and_direction_marks(tmp_path, figures):
    sols = [solution(BISTATIC, ka_hz(3.0))]
    make_plots(sols, tmp_path, "ball", reference_table(sols))
    top, err = figures["ts_vs_exact_f0.png"].axes[:2]
    assert top.get_ylabel() == "TS (dB re 1 m)"
    assert err.get_xlabel() == "receiver angle (deg), xz plane: 0\u00b0 = +x, 90\u00b0 = +z"
    assert np.allclose(err.get_lines()[0].get_ydata(), 20 * np.log10(OFFSET))
    assert legend_labels(top) == ["computed (BEM)", "exact series"]
    marks = {t.get_text(): t.get_position()[0] for t in top.texts}
    assert marks == {"backscatter": 270.0, "forward": 90.0}


def test_frequency_sweep_curves_colour_map_and_ts_against_frequency(tmp_path, figures):
    kas = [0.5, 1.0, 2.0, 3.0]
    sols = [solution(BISTATIC, ka_hz(ka)) for ka in kas]
    written = {p.name for p in make_plots(sols, tmp_path, "ball", reference_table(sols))}
    assert {"bistatic_ts_polar.png", "bistatic_ts.png", "ts_vs_frequency.png", "ts_map.png",
            "ts_vs_exact_f3.png"} <= written
    ax = polar_axes(figures["bistatic_ts_polar.png"])
    assert "119.4 Hz \u2013 716.2 Hz (4 frequencies)" in ax.get_title()
    assert legend_labels(ax) == ["119.4 Hz", "238.7 Hz", "477.5 Hz", "716.2 Hz", "exact series"]
    colours = {tuple(line.get_color()) for line in ax.get_lines() if line.get_linestyle() == "-"}
    assert len(colours) == 4  # one colour per frequency from the colour map
    assert len(ax.get_lines()) == 8  # computed and exact for each frequency
    fax = figures["ts_vs_frequency.png"].axes[0]
    assert fax.get_xlabel() == "frequency (Hz)" and fax.get_ylabel() == "TS (dB re 1 m)"
    assert legend_labels(fax) == ["backscatter (270\u00b0) (BEM)", "backscatter (270\u00b0) (exact series)",
                                  "forward (90\u00b0) (BEM)", "forward (90\u00b0) (exact series)"]
    back = [s["far_field"][0, 270] for s in sols]
    assert np.allclose(fax.get_lines()[0].get_ydata(), target_strength(back))
    assert np.allclose(fax.get_lines()[0].get_xdata(), [s["frequency_hz"] for s in sols])
    cbar = figures["ts_map.png"].axes[1]
    assert cbar.get_ylabel() == "TS (dB re 1 m)"


def test_monostatic_plots_say_the_angle_is_the_sonar_direction(tmp_path, figures):
    case = {"incident": {"aspect": {"plane": "xy", "start_deg": 0, "stop_deg": 180, "count": 19}},
            "receivers": {"plane": "xz", "count": 5}}
    sols = [solution(case, ka_hz(2.0))]
    written = {p.name for p in make_plots(sols, tmp_path, "mono", reference_table(sols))}
    assert written == {"monostatic_ts_polar.png", "ts_vs_exact_f0.png"}
    fig = figures["monostatic_ts_polar.png"]
    ax = polar_axes(fig)
    assert "monostatic" in ax.get_title()
    assert (ax.get_thetamin(), ax.get_thetamax()) == pytest.approx((0, 180))  # the sector swept
    assert ("angle = aspect, the direction of the sonar (source and receiver) seen from the body; "
            "the wave travels along d = \u2212x\u0302(aspect), the echo is received at \u2212d") in prose(fig)
    assert "xy plane, 0\u00b0 = +x, 90\u00b0 = +y" in prose(fig)
    assert not [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    assert legend_labels(ax) == ["computed (BEM)", "exact series"]
    exact = target_strength(sols[0]["monostatic_far_field"] / OFFSET)
    assert any(np.allclose(line.get_ydata(), exact) for line in ax.get_lines())
    err = figures["ts_vs_exact_f0.png"].axes[1]
    assert err.get_xlabel() == "aspect angle = sonar direction (deg), xy plane: 0\u00b0 = +x, 90\u00b0 = +y"


def test_several_incidence_directions_get_a_polar_plot_each(tmp_path, figures):
    case = {"incident": {"directions": [[0, 0, 1], [1, 0, 0]]}, "receivers": {"plane": "xz", "count": 73}}
    make_plots([solution(case, ka_hz(1.0))], tmp_path, "two")
    first, second = (polar_axes(figures[f"bistatic_ts_polar_inc{j}.png"]) for j in (0, 1))
    assert "two, incidence 1" in second.get_title()
    # the arrow of d = +x comes from -x: its tail left of the centre
    (arrow,) = [a for a in second.texts if getattr(a, "arrow_patch", None) is not None and not a.get_text()]
    assert arrow.xyann[0] < arrow.xy[0] < 0 and arrow.xyann[1] == pytest.approx(0.5)


def test_db_limits_round_the_top_up_and_keep_a_useful_range():
    assert plots.db_limits(np.array([-12.0, -3.2])) == (-20.0, 0.0)  # 1 dB headroom, 20 dB at least
    floor, top = plots.db_limits(np.array([-31.0, -30.5]))
    assert top == -25.0 and top - floor == 20.0
    floor, top = plots.db_limits(np.array([-300.0, 8.7]))
    assert top == 10.0 and floor == -70.0  # 80 dB at most


def test_db_limits_follow_the_data_not_a_fixed_range():
    """A swim bladder's pattern: a -20 dB lobe over broad oblique structure 35 to 75 dB under
    it, the floor sits below all of it; a pattern whose only deep values are a few narrow
    nulls keeps its floor just under the rest."""
    a = np.linspace(0.0, 360.0, 361)
    bladder = -20.0 - 55.0 * np.abs(np.sin(np.radians(a))) ** 0.3
    floor, top = plots.db_limits(bladder)
    assert top == -10.0 and floor <= bladder.min()
    lobes = -10.0 + 10.0 * np.cos(np.radians(4 * a))
    lobes[[40, 130, 220]] = -140.0  # three narrow nulls
    floor, top = plots.db_limits(lobes)
    assert top == 10.0 and floor == np.sort(lobes)[3] == -20.0


def test_sweep_at_one_aspect_plots_ts_against_frequency_only(tmp_path, figures):
    """A monostatic frequency sweep at a single aspect: no map over angle (it would be an empty
    frame) and no curve against angle (one point per frequency on one vertical line), but TS
    against frequency, with the one aspect in the legend."""
    case = {"incident": {"aspect": {"plane": "xz", "start_deg": 90, "stop_deg": 90, "count": 1}},
            "receivers": {"plane": "xz", "count": 5}}
    sols = [solution(case, ka_hz(ka)) for ka in (0.5, 1.0, 2.0)]
    written = {p.name for p in make_plots(sols, tmp_path, "one")}
    assert written == {"ts_vs_frequency.png"}
    ax = figures["ts_vs_frequency.png"].axes[0]
    assert legend_labels(ax) == ["aspect 90\u00b0"]
    assert np.allclose(ax.get_lines()[0].get_ydata(),
                       [target_strength(s["monostatic_far_field"])[0] for s in sols])


def write_farfield(path, solutions):
    from wavescat.solve.records import write_farfield_csv

    write_farfield_csv(path, solutions)
    return path


def test_study_plots_of_bistatic_sweep_and_monostatic_case(tmp_path, figures):
    mono = {"incident": {"aspect": {"plane": "xy", "start_deg": 0, "stop_deg": 360, "count": 37}},
            "receivers": {"plane": "xz", "count": 5}}
    cases = {"s_bi": BISTATIC, "s_mono": {**mono, "description": "aspect sweep"}}
    paths = {"s_bi": write_farfield(tmp_path / "bi.csv", [solution(BISTATIC, ka_hz(k)) for k in (1, 2)]),
             "s_mono": write_farfield(tmp_path / "mono.csv", [solution(mono, ka_hz(k)) for k in (1, 2)])}
    typed = {name: Case.from_dict(block, name=name) for name, block in cases.items()}
    written = {p.name for p in plot_study(typed, paths, tmp_path / "plots")}
    assert {"s_bi_ts_polar.png", "s_bi_ts_map.png", "s_bi_ts_vs_frequency.png",
            "s_mono_ts_polar.png", "s_mono_ts_map.png"} <= written
    bi = polar_axes(figures["s_bi_ts_polar.png"])
    assert "s_bi: bistatic target strength, 238.7 Hz \u2013 477.5 Hz (2 frequencies)" in bi.get_title()
    assert any(t.get_text() == "incident\nwave" for t in bi.texts)
    mono_ax = polar_axes(figures["s_mono_ts_polar.png"])
    assert mono_ax.get_title().startswith("s_mono: monostatic target strength, 238.7 Hz \u2013 477.5 Hz"
                                          " (2 frequencies)\naspect sweep\n")
    assert len(mono_ax.get_lines()[0].get_xdata()) == 37  # one point per aspect angle


def test_dg_against_bem_plot_names_probes_and_units(tmp_path, monkeypatch):
    import csv

    from wavescat.cli import main
    seen = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (seen.append(fig), save(fig, path)))
    probes = np.array([[0, 0, -1.6], [1.2, 0, 1.2], [0, 1.5, 0.5]])
    p = rigid_sphere.scattered_field(2.0, 1.0, [0, 0, 1], probes)
    for name, values in (("dg", 1.02 * p), ("bem", p)):
        with open(tmp_path / f"{name}.csv", "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["x", "y", "z", f"re_p_{name}", f"im_p_{name}"])
            w.writerows([*q, v.real, v.imag] for q, v in zip(probes, values))
    assert main(["dg-vs-bem", "--dg", str(tmp_path / "dg.csv"), "--bem", str(tmp_path / "bem.csv"),
                 "--out", str(tmp_path / "j.csv"), "--plot", str(tmp_path / "j.png")]) == 0
    (ax,) = seen[0].axes
    assert (tmp_path / "j.png").stat().st_size > 0
    assert ax.get_xlabel() == "probe number (x, y, z in m)"
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0\n(0, 0, -1.6)", "1\n(1.2, 0, 1.2)",
                                                            "2\n(0, 1.5, 0.5)"]
    assert "per unit incident amplitude" in ax.get_ylabel()
    assert "relative L2 difference 0.020" in ax.get_title()
    assert len(legend_labels(ax)) == 4 and all("BEM" in t or "DG" in t for t in legend_labels(ax))


def test_many_frequencies_get_a_frequency_colour_bar(tmp_path, figures):
    freqs = np.linspace(100.0, 1000.0, 12)
    axis = plots.AngleAxis(np.linspace(0, 360, 73), "xy", False, np.array([0.0, 1.0, 0.0]))
    ts = -20 + 10 * np.cos(np.radians(axis.angle_deg))[None, :] + np.log10(freqs)[:, None]
    plots.polar_ts(tmp_path / "p.png", axis, freqs, ts, title="many")
    fig = figures["p.png"]
    assert polar_axes(fig).get_legend() is None
    (cbar,) = [a for a in fig.axes if a.name != "polar"]
    assert cbar.get_ylabel() == "frequency (Hz)"
    assert cbar.get_ylim() == pytest.approx((100.0, 1000.0))


def test_incidence_out_of_the_plot_plane_is_said_so():
    oblique = plots.AngleAxis(np.linspace(0, 360, 37), "xy", False, np.array([1.0, 0.0, 1.0]))
    assert not oblique.in_plane() and oblique.incident_angle() == pytest.approx(0.0)
    assert "45\u00b0 out of the plot plane" in oblique.meaning("arrow")
    assert "backscatter at" not in oblique.meaning("arrow")
    normal = plots.AngleAxis(np.linspace(0, 360, 37), "xy", False, np.array([0.0, 0.0, -1.0]))
    assert normal.incident_angle() is None
    assert "d = (0, 0, -1), normal to the plot plane" in normal.meaning()
    curves, _ = plots.frequency_curves(oblique, np.zeros((2, 37)))
    assert list(curves) == ["nearest backscatter (180\u00b0)", "nearest forward (0\u00b0)"]


def test_aspect_sector_across_zero(tmp_path, figures):
    case = {"incident": {"aspect": {"plane": "xz", "start_deg": -90, "stop_deg": 90, "count": 37}},
            "receivers": {"plane": "xz", "count": 5}}
    make_plots([solution(case, ka_hz(1.0))], tmp_path, "fan")
    ax = polar_axes(figures["monostatic_ts_polar.png"])
    assert (ax.get_thetamin(), ax.get_thetamax()) == pytest.approx((-90, 90))
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "-90\u00b0 \u2212z" and labels[-1] == "90\u00b0 +z" and "0\u00b0\n+x" in labels
    rings = [t for t in ax.texts if t.get_text().endswith(" dB")]
    assert all(-90 < np.degrees(t.get_position()[0]) < 90 for t in rings)
    cart = figures["monostatic_ts.png"].axes[0]
    assert list(cart.get_xticks()) == [-90, -45, 0, 45, 90]


def test_listed_receivers_plot_against_their_number(tmp_path, figures):
    case = {"incident": {"direction": [0, 0, 1]},
            "receivers": {"directions_deg": [[180, 0], [90, 0], [0, 0]]}}
    written = {p.name for p in make_plots([solution(case, ka_hz(1.0))], tmp_path, "few")}
    assert written == {"bistatic_ts.png"}  # no plane: no polar plot
    fig = figures["bistatic_ts.png"]
    assert fig.axes[0].get_xlabel() == "receiver number (config order)"
    assert "receivers in the order of receivers.directions_deg" in prose(fig)
    assert "Incident wave travels along d = (0, 0, 1)." in prose(fig)


def test_a_case_with_warnings_carries_them_on_every_plot(tmp_path, figures):
    sols = [solution(BISTATIC, ka_hz(f)) for f in (1.0, 2.0)]
    warning = "case ball: cases.ball (a fluid ...) has an estimated interior Q of 3546"
    written = make_plots(sols, tmp_path, "ball", None, "", [warning, "another"])
    assert written and all(p.name in figures for p in written)
    for p in written:
        text = prose(figures[p.name])
        assert "WARNING (and 1 more), see summary.json:" in text, p.name
        assert "interior Q of 3546" in text
    make_plots(sols[:1], tmp_path / "clean", "ball")
    assert "WARNING" not in prose(figures["bistatic_ts_polar.png"])


def test_study_plots_ts_against_the_parameter_it_varies(tmp_path, figures):
    """A study over the radius of a rigid sphere at two frequencies: ts_vs_geometry.radius.png
    has the backscatter and forward panels, a line per frequency through the cases' TS in the
    order of the radius (the exact series here), and no plot for a varied list."""
    f1, f2 = ka_hz(1.0), ka_hz(2.0)
    cases, paths, back = {}, {}, {f1: [], f2: []}
    for a in (2.0, 0.5, 1.0):  # not in order: the plot sorts by the value
        name = f"r_ball_radius-{a}"
        cases[name] = {**BISTATIC, "study": {"name": "r", "base": "ball",
                                             "parameters": {"geometry.radius": a,
                                                            "geometry.center": [0, 0, 0]}}}
        sols = []
        for f in (f1, f2):
            k = 2 * math.pi * f / C
            rec = receiver_directions(BISTATIC["receivers"])
            F = rigid_sphere.far_field(k, a, [0, 0, 1], rec.vectors)
            sols.append({"frequency_hz": f, "monostatic": False, "receivers": {
                "theta_deg": rec.theta_deg, "phi_deg": rec.phi_deg}, "far_field": F[None]})
            back[f].append((a, target_strength(F[270])))
        paths[name] = write_farfield(tmp_path / f"{name}.csv", sols)
    typed = {name: Case.from_dict(block, name=name) for name, block in cases.items()}
    written = {p.name for p in plot_study(typed, paths, tmp_path)}
    assert "ts_vs_geometry.radius.png" in written
    assert not any("center" in w for w in written)
    back_ax, forward_ax = figures["ts_vs_geometry.radius.png"].axes
    assert back_ax.get_title() == "backscatter (270\u00b0)" and forward_ax.get_title() == "forward (90\u00b0)"
    assert back_ax.get_xlabel() == "geometry.radius"
    first, second = back_ax.get_lines()
    for line, f in ((first, f1), (second, f2)):
        x, y = zip(*sorted(back[f]))
        assert np.allclose(line.get_xdata(), x) and np.allclose(line.get_ydata(), y)
    assert legend_labels(forward_ax)[0].startswith(f"{f1:.6g} Hz")
