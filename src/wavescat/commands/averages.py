"""`wavescat averages` (a case's farfield.csv -> ts_averages.csv: TS averaged over bands and
tilt distributions, wavescat.results.averages) and `wavescat study-averages` (a study's cases'
ts_averages.csv -> one long table)."""
from __future__ import annotations

import csv
import logging

from ..errors import ConfigError
from ..files import atomic_path
from ..results.averages import AVERAGES_HEADER, averages_table, monostatic_grid, ts_of_sigma
from ..results.plots import averages_plot
from ..results.study_table import gather_averages
from ..solve.records import read_farfield_csv
from . import case_arguments, study_cases

log = logging.getLogger("wavescat.averages")


def _cell(value) -> str:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def write_averages_csv(path, rows) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(AVERAGES_HEADER)
        for row in rows:
            writer.writerow([_cell(row[k]) for k in AVERAGES_HEADER])


def run_averages(args) -> int:
    case = case_arguments(args)
    if not (case.bands or case.tilts):
        raise ConfigError("--case: the case has no `averages` block")
    bands, tilts = case.bands, case.tilts
    freqs, aspects, sigma = monostatic_grid(read_farfield_csv(args.farfield), case.incidence)
    rows = averages_table(sigma, freqs, aspects, bands, tilts)
    write_averages_csv(args.out, rows)
    if args.plot:
        title = args.name + (f"\n{case.description}" if case.description else "")
        averages_plot(args.plot, rows, freqs, aspects, case.incidence.plane,
                      ts_of_sigma(sigma), tilts, title)
    for band in bands:
        used = [r for r in rows if r["average"] == "band" and r["band_center_hz"] == band.center_hz
                and r["band_width_hz"] == band.width_hz][0]
        if used["f_high_hz"] - used["f_low_hz"] < 0.5 * band.width_hz:
            log.warning("band %g-%g Hz: the case's frequencies in it span only %g-%g Hz; the "
                        "average is over that span", band.low_hz, band.high_hz,
                        used["f_low_hz"], used["f_high_hz"])
    for row in rows:
        if row["average"] != "band":
            log.info("%s: %s", row["average"], ", ".join(
                f"{k} {row[k]:g}" for k in AVERAGES_HEADER[1:] if row[k] is not None))
    log.info("wrote %s (%d rows)", args.out, len(rows))
    return 0


def run_study_averages(args) -> int:
    cases = study_cases(args.cases)
    if len(args.averages) != len(cases):
        raise ConfigError(f"--averages: {len(args.averages)} files for {len(cases)} cases")
    gather_averages(cases, dict(zip(cases, args.averages)), args.out)
    log.info("wrote %s", args.out)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("averages", help="TS averaged over bands and tilt distributions")
    p.add_argument("--case", required=True,
                   help="JSON with the case's `averages` and `incident` (an aspect sweep)")
    p.add_argument("--farfield", required=True, help="the case's farfield.csv")
    p.add_argument("--out", required=True, help="ts_averages.csv to write")
    p.add_argument("--plot", default="", help="PNG of the averages to write")
    p.add_argument("--name", default="", help="case name (plot title)")
    p.set_defaults(func=run_averages)

    s = subparsers.add_parser("study-averages",
                              help="gather a study's ts_averages.csv into one long table")
    s.add_argument("--cases", required=True, help="JSON {case name: normalised case}")
    s.add_argument("--averages", nargs="+", required=True,
                   help="ts_averages.csv per case, same order")
    s.add_argument("--out", required=True, help="ts_averages.csv of the study to write")
    s.set_defaults(func=run_study_averages)
