"""`wavescat study`: gather a study's far-field tables into ts.csv, with plots."""
from __future__ import annotations

from ..errors import ConfigError
from ..results.study_table import gather, plot_study
from . import study_cases


def study(args) -> None:
    cases = study_cases(args.cases)
    if len(args.farfields) != len(cases):
        raise ConfigError(f"--farfields: {len(args.farfields)} files for {len(cases)} cases")
    paths = dict(zip(cases, args.farfields))
    gather(cases, paths, args.out)
    plot_study(cases, paths, args.plots)


def register(subparsers) -> None:
    p = subparsers.add_parser("study", help="gather a parameter study into one long table")
    p.add_argument("--cases", required=True, help="JSON {case name: normalised case}")
    p.add_argument("--farfields", nargs="+", required=True, help="farfield.csv per case, same order")
    p.add_argument("--out", required=True, help="ts.csv to write")
    p.add_argument("--plots", required=True, help="folder for the plots")
    p.set_defaults(func=study)
