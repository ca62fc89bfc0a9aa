"""TS averages over a band and a tilt distribution (wavescat.results.averages) against exact
answers."""
import math

import numpy as np
import pytest

from wavescat.results.averages import (AveragesError, Band, Tilt, averages_table, band_average,
                                       band_weights, parse_averages, tilt_average, tilt_weights,
                                       ts_of_sigma)


def test_constant_sigma_averages_to_itself():
    f = np.linspace(30e3, 46e3, 9)
    a = np.linspace(40.0, 140.0, 101)
    sigma = np.full((len(f), len(a)), 3.7e-5)
    band, tilt = Band(38e3, 8e3), Tilt(-5.0, 12.0)  # aspect 95 +- 24
    assert np.allclose(band_average(sigma, f, band), 3.7e-5, rtol=1e-14)
    assert np.allclose(tilt_average(sigma, a, tilt), 3.7e-5, rtol=1e-14)
    rows = averages_table(sigma, f, a, [band], [tilt])
    assert {r["average"] for r in rows} == {"band", "tilt", "band_tilt"}
    assert all(math.isclose(r["sigma_bs_m2"], 3.7e-5, rel_tol=1e-14) for r in rows)
    assert all(math.isclose(r["ts_db"], 10 * math.log10(3.7e-5), rel_tol=1e-12) for r in rows)


def test_linear_sigma_averages_to_the_midpoint_exactly():
    # unevenly spaced frequencies, some outside the band: the trapezoid rule is exact for a
    # linear integrand, so the average is the value at the middle of the frequencies used
    f = np.array([9e3, 10e3, 10.5e3, 12e3, 12.2e3, 14e3, 15e3])
    sigma = 2e-6 + 3e-10 * f
    band = Band(12e3, 4e3)  # 10-14 kHz: 10, 10.5, 12, 12.2, 14 kHz
    expected = 2e-6 + 3e-10 * 12e3
    assert band_average(sigma, f, band) == pytest.approx(expected, rel=1e-14)
    w = band_weights(f, band)
    assert w[0] == 0 and w[-1] == 0 and w.sum() == pytest.approx(1.0, rel=1e-14)
    # frequencies in any order give the same weights per frequency
    order = np.array([3, 0, 6, 1, 5, 2, 4])
    assert np.allclose(band_weights(f[order], band), w[order], rtol=1e-14)


def test_tilt_average_of_a_gaussian_lobe_is_the_closed_form_convolution():
    # sigma(aspect) = s0 exp(-(a - b)^2 / (2 s^2)) against tilt N(m, t): over the whole line
    # the average is s0 s / sqrt(s^2 + t^2) exp(-(m_a - b)^2 / (2 (s^2 + t^2)))
    s0, b, s = 4e-4, 97.0, 6.0
    tilt = Tilt(mean_deg=3.0, std_deg=8.0, cover_std=2.0)  # aspect 87 (zero 90, sign -1)
    a = np.linspace(0.0, 180.0, 721)  # 0.25 deg; the pdf is ~1e-14 at the sweep's ends
    sigma = s0 * np.exp(-0.5 * ((a - b) / s) ** 2)
    ma = 90.0 - 3.0
    var = s**2 + tilt.std_deg**2
    exact = s0 * s / math.sqrt(var) * math.exp(-0.5 * (ma - b) ** 2 / var)
    assert tilt_average(sigma, a, tilt) == pytest.approx(exact, rel=1e-10)


def test_tilt_maps_to_aspect_with_zero_and_sign():
    a = np.linspace(0.0, 180.0, 361)
    sigma = a.copy()  # sigma = aspect angle: the average is the mean aspect (symmetric pdf)
    assert tilt_average(sigma, a, Tilt(10.0, 5.0)) == pytest.approx(80.0, rel=1e-12)
    assert tilt_average(sigma, a, Tilt(10.0, 5.0, zero_deg=90.0, sign=1)) == pytest.approx(100.0)
    assert tilt_average(sigma, a, Tilt(0.0, 5.0, zero_deg=30.0, sign=1)) == pytest.approx(30.0)


def test_averaging_is_in_linear_units():
    # two lobes of equal width: the linear mean is not the dB mean
    f = np.array([100.0, 200.0, 300.0])
    sigma = np.array([1e-2, 1e-4, 1e-2])
    band = Band(200.0, 200.0)
    lin = band_average(sigma, f, band)
    assert lin == pytest.approx(0.25 * 1e-2 + 0.5 * 1e-4 + 0.25 * 1e-2, rel=1e-14)
    db_mean = 0.25 * -20 + 0.5 * -40 + 0.25 * -20
    assert ts_of_sigma(lin) == pytest.approx(10 * math.log10(5.05e-3), rel=1e-12)
    assert ts_of_sigma(lin) - db_mean > 7.0  # -22.97 dB against -30 dB
    rows = averages_table(sigma[:, None], f, [90.0], bands=[band])
    assert rows[0]["ts_db"] == pytest.approx(float(ts_of_sigma(lin)))


def test_truncation_renormalises():
    # sigma = aspect against a normal truncated asymmetrically by the sweep: the mean of the
    # truncated normal, m + t (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha))
    a = np.linspace(60.0, 150.0, 1801)
    tilt = Tilt(mean_deg=10.0, std_deg=10.0, cover_std=2.0)  # aspect 80; the sweep starts at -2 std
    m, t = 80.0, 10.0
    alpha, beta = (60.0 - m) / t, (150.0 - m) / t

    def phi(x):
        return math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)

    def Phi(x):
        return 0.5 * (1 + math.erf(x / math.sqrt(2)))

    exact = m + t * (phi(alpha) - phi(beta)) / (Phi(beta) - Phi(alpha))
    assert exact > m + 0.5  # the truncation moves the mean
    assert tilt_average(a, a, tilt) == pytest.approx(exact, rel=1e-7)
    w = tilt_weights(a, tilt)
    assert w.sum() == pytest.approx(1.0, rel=1e-14) and np.all(w > 0)


def test_whole_circle_sweep_is_periodic():
    # 0..360 with both ends: the repeated 360 counts once; a tilt across 0 wraps around
    a = np.linspace(0.0, 360.0, 361)
    tilt = Tilt(mean_deg=0.0, std_deg=5.0, zero_deg=0.0, sign=1)
    w = tilt_weights(a, tilt)
    assert w[-1] == 0 and w[1] == pytest.approx(w[359], rel=1e-12)
    sigma = np.cos(np.radians(a)) ** 2
    # <cos^2> over a wrapped normal of std t (radians): (1 + exp(-2 t^2)) / 2
    t = math.radians(5.0)
    assert tilt_average(sigma, a, tilt) == pytest.approx(0.5 * (1 + math.exp(-2 * t * t)),
                                                         rel=1e-10)


def test_tilt_moved_by_whole_turns_into_the_sweep():
    a = np.linspace(-70.0, 50.0, 241)  # symmetric about -10
    tilt = Tilt(mean_deg=-5.0, std_deg=10.0, zero_deg=355.0, sign=1)  # aspect 350 = -10
    assert tilt_average(a, a, tilt) == pytest.approx(-10.0, abs=1e-9)


@pytest.mark.parametrize("tilt, message", [
    (Tilt(20.0, 12.0), "outside the swept aspects"),            # 70 - 24 < 60
    (Tilt(0.0, 1.0), "angles per standard deviation"),          # step 2 deg, std 1 deg
    (Tilt(0.0, 0.0), "standard deviation must be > 0"),
])
def test_tilt_refusals(tilt, message):
    a = np.linspace(60.0, 120.0, 31)
    with pytest.raises(AveragesError, match=message):
        tilt_weights(a, tilt)


def test_band_with_fewer_than_three_frequencies_is_refused():
    f = np.array([36e3, 37.5e3, 38.5e3, 40e3])
    with pytest.raises(AveragesError, match=r"holds 2 of the case's frequencies \(37500, 38500\)"):
        band_weights(f, Band(38e3, 2e3))


def test_table_rows_and_spans():
    f = np.linspace(1000.0, 2000.0, 5)
    a = np.linspace(0.0, 180.0, 181)
    sigma = np.outer(f / 1000.0, np.ones(len(a))) * 1e-3
    bands, tilts = parse_averages({"band": [{"center_hz": 1500, "width_hz": 500}],
                                   "tilt": {"mean_deg": 0, "std_deg": 10}})
    rows = averages_table(sigma, f, a, bands, tilts)
    kinds = [r["average"] for r in rows]
    assert kinds.count("band") == len(a) and kinds.count("tilt") == len(f)
    assert kinds.count("band_tilt") == 1
    band_row = rows[0]
    assert (band_row["f_low_hz"], band_row["f_high_hz"], band_row["frequencies"]) == (1250, 1750, 3)
    assert band_row["tilt_mean_deg"] is None and band_row["aspects"] == 1
    both = rows[-1]
    assert both["sigma_bs_m2"] == pytest.approx(1.5e-3, rel=1e-14)
    assert (both["aspect_low_deg"], both["aspect_high_deg"], both["aspects"]) == (0, 180, 181)


def test_tilt_defaults_are_the_documented_ones():
    from dataclasses import asdict

    from wavescat.results.averages import TILT_DEFAULTS

    assert {k: v for k, v in asdict(Tilt(1.0, 2.0)).items() if k in TILT_DEFAULTS} == TILT_DEFAULTS
    assert parse_averages({"tilt": {"mean_deg": 1, "std_deg": 2}})[1] == [Tilt(1.0, 2.0)]
