"""`wavescat reference`: the exact far field of a sphere case (farfield.csv format), for the
case's boundary condition (rigid, pressure-release, fluid or impedance), or of concentric
spheres (a fluid shell around a fluid, rigid or pressure-release core)."""
from __future__ import annotations

import json
import logging

import numpy as np

from ..configuration.case import Case
from ..errors import ConfigError
from ..files import atomic_path
from ..problem.farfield import far_field_errors
from ..reference.sphere import case_series
from ..solve.records import read_farfield_csv, write_farfield_csv
from . import case_arguments

log = logging.getLogger(__name__)


def exact_solution(case: Case, frequency_hz: float) -> dict:
    """The exact far field of a sphere case at one frequency, laid out like a BEM solution
    file (`solve.records`), so that the table rows come out exactly as in farfield.csv:
    an aspect sweep gives the backscatter F(-d) per aspect direction d, otherwise every
    incidence direction gives F at all receivers."""
    k = case.medium.wavenumber(frequency_hz)
    series = case_series(case)
    incidence = case.incidence
    out = {"frequency_hz": frequency_hz, "incident_directions": incidence.directions}
    if incidence.monostatic:
        out["monostatic_far_field"] = series.monostatic_far_field(k, incidence.directions)
    else:
        receivers = case.receivers
        out["receivers"] = {"theta_deg": receivers.theta_deg, "phi_deg": receivers.phi_deg}
        out["far_field"] = np.array([series.far_field(k, d, receivers.vectors)
                                     for d in incidence.directions])
    return out


def reference_farfield(args) -> None:
    case = case_arguments(args, required=("geometry", "frequencies_hz"))
    case_series(case)  # a sphere (or concentric spheres) with a series, before any work
    solutions = []
    for f in case.frequencies_hz:
        s = exact_solution(case, float(f))
        F = s["monostatic_far_field"] if "monostatic_far_field" in s else s["far_field"]
        ka = case.medium.wavenumber(f) * case.geometry.radius
        log.info("f = %g Hz, ka = %.4g: max TS %.2f dB", f, ka, 20 * np.log10(np.abs(F).max()))
        solutions.append(s)
    write_farfield_csv(args.out, solutions)


def compare_farfield(args) -> None:
    """RMS TS error and relative L2 error of a computed far field against the exact one."""
    computed, exact = read_farfield_csv(args.computed), read_farfield_csv(args.reference)
    if computed["F"].shape != exact["F"].shape or not (
            np.allclose(computed["frequency_hz"], exact["frequency_hz"])
            and np.allclose(computed["theta_deg"], exact["theta_deg"])
            and np.allclose(computed["phi_deg"], exact["phi_deg"])):
        raise ConfigError(f"{args.computed} and {args.reference} list different frequencies or "
                          "receivers")
    report = {"computed": str(args.computed), "reference": str(args.reference),
              "per_frequency": []}
    for f in np.unique(exact["frequency_hz"]):
        sel = exact["frequency_hz"] == f
        report["per_frequency"].append({"frequency_hz": float(f),
                                        **far_field_errors(computed["F"][sel], exact["F"][sel])})
    report.update(far_field_errors(computed["F"], exact["F"]))
    for row in report["per_frequency"]:
        log.info("f = %g Hz: RMS TS error %.4f dB, relative L2 error %.3g", row["frequency_hz"],
                 row["rms_ts_error_db"], row["relative_l2_error"])
    with atomic_path(args.out) as tmp:
        tmp.write_text(json.dumps(report, indent=1))


def register(subparsers) -> None:
    p = subparsers.add_parser("reference", help="exact sphere far field of a case")
    p.add_argument("--case", required=True, help="case as JSON (normalised like the workflow's)")
    p.add_argument("--medium", required=True, help="medium as JSON")
    p.add_argument("--out", required=True, help="reference_farfield.csv to write")
    p.set_defaults(func=reference_farfield)
    c = subparsers.add_parser("compare-farfield", help="errors of a far field against the exact one")
    c.add_argument("--computed", required=True, help="farfield.csv of the BEM")
    c.add_argument("--reference", required=True, help="reference_farfield.csv")
    c.add_argument("--out", required=True, help="JSON with RMS TS and relative L2 errors")
    c.set_defaults(func=compare_farfield)
