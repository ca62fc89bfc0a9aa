"""Validation and normalisation of a wavescat configuration.

`prepare_config(config)` checks a config dict against the package's config.schema.yaml
(defaults.SCHEMA_PATH), fills in the defaults, expands the studies, then runs on every case
the checks a schema cannot express (case.normalise: keys that belong to another geometry
kind, a missing mesh file, ...) and reads it into its typed Case once, which checks the
rest. Every error names the key path and the value, e.g.
``cases.sub.frequencies_hz[0] = -50: must be > 0``. The result is what the Snakemake rules
hand to `wavescat` subcommands, one case at a time, as JSON that `Case.from_json` reads.
"""
from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path

from ..defaults import SCHEMA_PATH, load_schema
from ..errors import ConfigError
from .case import (Case, check_boxes, compact_json, frequencies,  # noqa: F401 (frequencies)
                   medium_from, normalise)
from .schema import check_finite, raise_first, read_exponent_numbers, validator
from .studies import expand_studies, study_cases


# A case or study name is one folder under results/: a single path component, not hidden.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _check_names(cfg: dict) -> None:
    for section in ("cases", "studies"):
        names = cfg.get(section)
        for name in names if isinstance(names, dict) else ():
            if not (isinstance(name, str) and SAFE_NAME.fullmatch(name)):
                raise ConfigError(
                    f"{section}: name {name!r} is not usable (it names the folder "
                    "results/<name>): use letters, digits, '_', '-' and '.', not starting with "
                    "'.' or '-'")


def run_cases(config: dict) -> list[str]:
    """Cases that `target_strength` builds: those named in `run` and those of named studies."""
    out = []
    for name in config["run"]:
        names = study_cases(config, name) if name in config["studies"] else [name]
        out += [n for n in names if n not in out]
    return out


def run_studies(config: dict) -> list[str]:
    return [n for n in config["run"] if n in config["studies"]]


def all_studies(config: dict) -> list[str]:
    """Every study of a config, under `run` or not."""
    return list(config["studies"])


def typed_cases(config: dict) -> dict[str, Case]:
    """Every case of a prepared config (under `run` or not, studies' generated ones too) as
    its typed Case: what the rules read."""
    return {name: Case.from_config(config, name) for name in config["cases"]}


@dataclass(frozen=True)
class ClusterSettings:
    """The config's `cluster` block: whether the nodes have GPUs, the MPI launcher of solves
    on several ranks (None: the workflow's choice), the SLURM partitions {cpu, gpu}; the
    defaults, the schema's, are those of a config without the block."""

    gpus: bool = False
    mpi_launcher: str | None = None
    partitions: dict[str, str] | None = None

    @classmethod
    def from_config(cls, config: dict) -> ClusterSettings:
        block = config.get("cluster") or {}
        return cls(bool(block.get("gpus", False)), block.get("mpi_launcher"),
                   dict(block["partitions"]) if block.get("partitions") else None)


@dataclass(frozen=True)
class VerificationSettings:
    """The `verification` block of a prepared config (the schema's defaults filled in): the
    time-domain studies' size, backend and precision, and whether the GPU-sized DG
    cross-check also runs on the CPU."""

    quick: bool
    backend: str
    precision: str
    full_on_cpu: bool

    @classmethod
    def from_config(cls, config: dict) -> VerificationSettings:
        return cls(**config["verification"])


def prepare_config(config: dict, base_dir: str | Path = ".", schema_path=SCHEMA_PATH) -> dict:
    """Validate `config`, fill defaults and normalise it; raise ConfigError naming the key."""
    cfg = copy.deepcopy(dict(config))
    check_finite(cfg)
    _check_names(cfg)
    check = validator(load_schema(schema_path))
    read_exponent_numbers(check, cfg)
    raise_first(check, cfg)
    # Studies copy their (defaults-filled) base cases; check the generated ones again.
    expand_studies(cfg)
    raise_first(check, cfg)
    for i, name in enumerate(cfg["run"]):
        if name not in cfg["cases"] and name not in cfg["studies"]:
            raise ConfigError(f"run[{i}] = {name!r}: no such case or study (cases: "
                              f"{', '.join(sorted(cfg['cases']))})")
    medium = medium_from(cfg["medium"])
    for name, case in cfg["cases"].items():
        normalise(case, f"cases.{name}", Path(base_dir).resolve(), medium)
        # the types check what the schema and normalise leave; bodies that cannot be inside
        # one another by their bounding boxes are refused before any job (the mesher checks
        # the surfaces)
        check_boxes(Case.from_config(cfg, name).bodies)
    return cfg


# The keys of a case that the `solve` rule hands to `wavescat solve`.
SOLVE_KEYS = ("geometry", "boundary", "inside", "incident", "receivers", "solver", "mesh")


def solve_case(config: dict, name: str) -> Case:
    """Case `name` of a prepared config exactly as `wavescat solve` receives it from the
    rule (its SOLVE_KEYS as JSON, read by Case.from_json)."""
    return Case.from_json(case_json(config, name, SOLVE_KEYS), medium_json(config))


def case_json(config: dict, name: str, keys=None) -> str:
    """The normalised case (only `keys` of it, if given) as compact JSON for a subcommand."""
    case = config["cases"][name]
    if keys is not None:
        case = {k: case[k] for k in keys if k in case}
    return compact_json(case)


def medium_json(config: dict) -> str:
    return compact_json(config["medium"])
