"""`wavescat reference`: the exact far field of a rigid-sphere case (farfield.csv format)."""
from __future__ import annotations

import json
import logging
import math

import numpy as np

from ..errors import ConfigError
from ..farfield import incident_directions, receiver_directions
from ..reference.rigid_sphere import far_field
from ..tables import write_farfield_csv

log = logging.getLogger(__name__)


def reference_farfield(args) -> None:
    case, medium = json.loads(args.case), json.loads(args.medium)
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


def register(subparsers) -> None:
    p = subparsers.add_parser("reference", help="exact rigid-sphere far field of a case")
    p.add_argument("--case", required=True, help="normalised case as JSON")
    p.add_argument("--medium", required=True, help="medium as JSON")
    p.add_argument("--out", required=True, help="reference_farfield.csv to write")
    p.set_defaults(func=reference_farfield)
