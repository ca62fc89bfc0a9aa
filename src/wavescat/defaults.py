"""The default of every case key, read from the one place that holds them: the `default:`
entries of the package's configuration/config.schema.yaml (`SCHEMA_PATH`). Every layer reads
them (bem, geometry, problem, configuration), so this module sits at the top of the package,
below them all; the schema file lives beside the validator that checks against it.

The schema is what `prepare_config` and Snakemake's `validate` fill into each case before any
job runs, so the numerics take their keyword defaults from here rather than writing the
numbers again: a case solved through the workflow and a direct library call with the same
(partial) settings run the same quadrature, H-matrix and GMRES parameters.
(Submarine shape parameters are the builder's own, in `wavescat.geometry.submarine.DEFAULTS`.)
"""
from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import yaml

from .files import parsed_once

# package data (pyproject.toml)
SCHEMA_PATH = Path(__file__).resolve().parent / "configuration" / "config.schema.yaml"


# libyaml's parser where PyYAML has it (the same documents, a tenth of the time): every
# `wavescat` job and every prepare_config reads the schema.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_schema(path: str | Path = SCHEMA_PATH) -> dict:
    """The schema at `path`: a fresh copy (the caller may change it) of the file's one parse
    per version (files.parsed_once), so an edited file is read again."""
    return copy.deepcopy(parsed_once(path, _load_yaml))


def _load_yaml(path: Path) -> dict:
    with open(path) as fh:
        return yaml.load(fh, Loader=_LOADER)


def _resolve(node: dict, defs: dict) -> dict:
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def filled(node: dict, defs: dict):
    """What validation fills into an absent key of schema `node`: its default, with the
    defaults of its own properties filled in (as `prepare_config` does, level by level)."""
    node = _resolve(node, defs)
    value = copy.deepcopy(node.get("default"))
    if isinstance(value, dict):
        for name, sub in node.get("properties", {}).items():
            if "default" in sub and name not in value:
                value[name] = filled(sub, defs)
    return value


@lru_cache(maxsize=None)
def _schema() -> dict:
    return load_schema()


def block_defaults(*path: str) -> dict:
    """Defaults of the keys of the case block at `path` that has none of its own, e.g.
    ("incident", "aspect") -> {"start_deg": 0.0, "stop_deg": 360.0}."""
    defs = _schema()["$defs"]
    node = defs["case"]
    for name in path:
        node = _resolve(node["properties"][name], defs)
    return {name: filled(sub, defs) for name, sub in node.get("properties", {}).items()
            if "default" in sub}


@lru_cache(maxsize=None)
def _schema_defaults() -> tuple[dict, dict]:
    schema = _schema()
    defs = schema["$defs"]
    case = {name: filled(sub, defs) for name, sub in defs["case"]["properties"].items()
            if "default" in sub}
    medium = filled(schema["properties"]["medium"], defs)
    return case, medium


def case_defaults() -> dict:
    """A fresh copy of the keys validation fills into a case that sets none of them."""
    return copy.deepcopy(_schema_defaults()[0])


_CASE = _schema_defaults()[0]
SOLVER = _CASE["solver"]          # read-only views; copy before changing
GMRES = SOLVER["gmres"]
OSRC = SOLVER["osrc"]
HMATRIX = SOLVER["hmatrix"]
QUADRATURE = SOLVER["quadrature"]
MESH = _CASE["mesh"]
BOUNDARY = _CASE["boundary"]  # a case without a boundary block: {"kind": "rigid"}
INCIDENT = _CASE["incident"]
RECEIVERS = _CASE["receivers"]
ASPECT = block_defaults("incident", "aspect")
DG_CROSS_CHECK = block_defaults("dg_cross_check")
HERMITE_CROSS_CHECK = block_defaults("hermite_cross_check")
MEDIUM = _schema_defaults()[1]
