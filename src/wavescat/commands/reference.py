"""`wavescat reference`: the exact far field of a rigid-sphere case (farfield.csv format)."""
from __future__ import annotations

import json
import logging
import math

import numpy as np

from ..errors import ConfigError
from . import case_arguments
from ..farfield import far_field_errors, incident_directions, receiver_directions
from ..reference.rigid_sphere import far_field
from ..tables import atomic_path, read_farfield_csv, write_farfield_csv

log = logging.getLogger(__name__)


def reference_farfield(args) -> None:
    case, medium = case_arguments(args)
    geometry = case["geometry"]
    if geometry["kind"] != "sphere":
        raise ConfigError(f"geometry.kind = {geometry['kind']!r}: the exact series needs a sphere")
    receivers = receiver_directions(case["receivers"])
    incidence = incident_directions(case["incident"])
    if len(incidence.directions) != 1 and not incidence.monostatic:
        raise ConfigError("incident.directions: the reference table holds one incidence direction")
    rows = []
    for f in case["frequencies_hz"]:
        k = 2.0 * math.pi * f / medium["sound_speed"]
        if incidence.monostatic:  # receiver -d for each aspect angle
            F = np.array([far_field(k, geometry["radius"], d, -d[None, :], geometry["center"])[0]
                          for d in incidence.directions])
        else:
            F = far_field(k, geometry["radius"], incidence.directions[0], receivers.vectors,
                          geometry["center"])
        log.info("f = %g Hz, ka = %.4g: max TS %.2f dB", f, k * geometry["radius"],
                 20 * np.log10(np.abs(F).max()))
        rows.append(F)
    write_farfield_csv(args.out, case["frequencies_hz"], receivers, np.array(rows))


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
    p = subparsers.add_parser("reference", help="exact rigid-sphere far field of a case")
    p.add_argument("--case", required=True, help="case as JSON (normalised like the workflow's)")
    p.add_argument("--medium", required=True, help="medium as JSON")
    p.add_argument("--out", required=True, help="reference_farfield.csv to write")
    p.set_defaults(func=reference_farfield)
    c = subparsers.add_parser("compare-farfield", help="errors of a far field against the exact one")
    c.add_argument("--computed", required=True, help="farfield.csv of the BEM")
    c.add_argument("--reference", required=True, help="reference_farfield.csv")
    c.add_argument("--out", required=True, help="JSON with RMS TS and relative L2 errors")
    c.set_defaults(func=compare_farfield)
