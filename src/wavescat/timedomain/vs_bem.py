"""The time-domain cross-checks against the BEM (DG and Hermite-Taylor alike): the body a
time-domain run models, and the comparison of its probe amplitudes with the BEM's at the
same frequencies and points, with the tolerance its run's summary carries."""
from __future__ import annotations

import csv
import json
import os

import numpy as np

from ..errors import ConfigError, InputError
from ..files import atomic_path
from ..results.plots import band_comparison, probe_comparison
from .checks import require
from .dg.scatterer import Body
from .dg.scattering import relative_l2, write_vs_bem


def single_body(case) -> Body:
    """The time-domain Body of a case of one body (nested ones refused)."""
    if case.nested:
        raise ConfigError("case.inside: the time-domain cross-check models one body, not nested ones")
    try:
        return Body(case.geometry, case.boundary, case.medium)
    except InputError as exc:
        raise ConfigError(f"case: {exc}") from None


def read_columns(path, names, optional=()):
    """The columns `names` (and those of `optional` that the file has, else NaN) of a CSV."""
    if not os.path.exists(path):
        raise ConfigError(f"{path!r}: file not found")
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = set(names) - set(reader.fieldnames or ())
        if missing:
            raise ConfigError(f"{path}: missing columns {sorted(missing)}")
        cols = list(optional) + list(names)
        return np.array([[float(r.get(n) or "nan") for n in cols] for r in reader]).reshape(-1, len(cols))


def compare_with_bem(args, method: str, label: str, describe) -> int:
    """`<method>-vs-bem`: the time-domain amplitudes (args.<method>, columns re_p_<method>,
    im_p_<method>) against the BEM's at the same frequencies and probes; the joined table, the
    errors, the plot; fails beyond the summary's tolerance, naming the frequency, the error
    and the run's sizes (`describe(summary)`)."""
    td_path = getattr(args, method)
    td = read_columns(td_path, ["x", "y", "z", f"re_p_{method}", f"im_p_{method}"], ["frequency_hz"])
    bem = read_columns(args.bem, ["x", "y", "z", "re_p_bem", "im_p_bem"], ["frequency_hz"])
    if td.shape == bem.shape:  # a file without frequencies matches any (one frequency)
        td[:, 0] = np.where(np.isnan(td[:, 0]), bem[:, 0], td[:, 0])
        bem[:, 0] = np.where(np.isnan(bem[:, 0]), td[:, 0], bem[:, 0])
    if td.shape != bem.shape or not np.allclose(td[:, 0], bem[:, 0], rtol=1e-9, equal_nan=True) \
            or not np.allclose(td[:, 1:4], bem[:, 1:4], rtol=0, atol=1e-9):
        raise ConfigError(f"--{method} {td_path} and --bem {args.bem} must list the same frequencies "
                          "and probe points in order")
    p_td, p_bem = td[:, 4] + 1j * td[:, 5], bem[:, 4] + 1j * bem[:, 5]
    write_vs_bem(args.out, td[:, 1:4], p_td, p_bem, method)
    freqs, blocks = np.unique(td[:, 0], return_inverse=True) if not np.isnan(td[:, 0]).any() \
        else (np.array([np.nan]), np.zeros(len(td), int))
    errors = [relative_l2(p_td[blocks == i], p_bem[blocks == i]) for i in range(len(freqs))]
    for f, err in zip(freqs, errors):
        at = "" if np.isnan(f) else f" at {f:.6g} Hz"
        print(f"{method}-vs-bem: relative L2 difference {err:.4f} at {np.sum(blocks == 0)} probes{at}")
    tolerance, run = None, {}
    if args.summary:
        with open(args.summary) as fh:
            run = json.load(fh)
        tolerance = run.get("tolerance")
    if args.errors:
        with atomic_path(args.errors) as tmp:
            tmp.write_text(json.dumps({"frequencies_hz": [None if np.isnan(f) else float(f) for f in freqs],
                                       "relative_l2": errors, "tolerance": tolerance}, indent=2))
    if args.plot:
        if len(freqs) > 1:
            band_comparison(args.plot, freqs, td[blocks == 0, 1:4],
                            np.array([p_td[blocks == i] for i in range(len(freqs))]),
                            np.array([p_bem[blocks == i] for i in range(len(freqs))]), errors, tolerance,
                            label=label)
        else:
            probe_comparison(args.plot, td[:, 1:4], p_td, p_bem, errors[0], label=label)
    if tolerance is not None:
        n = int(np.sum(blocks == 0))
        require([f"relative L2 difference {err:.4f} at {n} probes"
                 + ("" if np.isnan(f) else f" at {f:.6g} Hz") + f" exceeds {tolerance:g} "
                 f"({run.get('sizes')} sizes: {describe(run)})"
                 for f, err in zip(freqs, errors) if not err <= tolerance], f"{label} vs BEM")
        print(f"{method}-vs-bem: within the tolerance {tolerance:g} of the {run.get('sizes')} sizes"
              + (f" at all {len(freqs)} frequencies" if len(freqs) > 1 else ""))
    return 0
