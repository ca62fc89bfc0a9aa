"""`wavescat check-config`: check config files the way the workflow does, without Snakemake.

Snakemake reads `--configfile` itself and reports a YAML syntax error without file or line;
this command names both, and runs every check of the workflow on the merged config.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from ..configuration.config import prepare_config, run_cases
from ..configuration.config_files import DEFAULT_CONFIG, config_error, load_config_files
from ..errors import ConfigError
from ..planning.preflight import check_resolution


def check_config(args) -> None:
    # the default config of the clone the user stands in, as Snakemake would read it
    here = Path("config", "config.yaml")
    default = None if args.no_default else (here if here.is_file() else DEFAULT_CONFIG)
    config = load_config_files(args.files, default=default)
    try:
        config = prepare_config(config, base_dir=os.getcwd())
    except ConfigError as exc:
        raise ConfigError(config_error(exc, [default, *args.files])) from None
    cases = run_cases(config)
    try:  # a stored mesh file far too coarse for its wavelengths is refused here too
        warnings = check_resolution(config, cases)
    except ConfigError as exc:
        raise ConfigError(config_error(exc, [default, *args.files])) from None
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"valid: target_strength builds {len(cases)} case(s): {', '.join(cases)}"
          + (f", with {len(warnings)} warning(s) above" if warnings else ""))


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check-config", help="check config files as `snakemake --configfile FILE...` would read "
        "them (merged over the default config), naming file and line of every error")
    p.add_argument("files", nargs="+", metavar="FILE", help="YAML config files, later ones win")
    p.add_argument("--no-default", action="store_true",
                   help="check the files alone, not merged over config/config.yaml")
    p.set_defaults(func=check_config)
