# Configuration checks and helpers shared by all rule files.
import json
import os
import shlex
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from wavescat.config import case_json, medium_json, prepare_config, run_cases, run_studies
from wavescat.studies import study_cases
from wavescat.errors import ConfigError
from wavescat.resources import check_limits, mesh_resources, solve_resources

# Our own pass first: it names the key and value of the first problem and checks what a
# schema cannot (geometry keys per kind, mesh files on disk, `run` entries).
try:
    CONFIG = prepare_config(config, base_dir=os.getcwd())
except ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None
validate(CONFIG, "../schemas/config.schema.yaml")

# The wavescat CLI of the interpreter that runs Snakemake (no PATH set-up needed).
WAVESCAT = f"{shlex.quote(sys.executable)} -m wavescat"

RUN = run_cases(CONFIG)
STUDIES = run_studies(CONFIG)
CASES = CONFIG["cases"]
SPHERE_CASES = [c for c in RUN if CASES[c]["geometry"]["kind"] == "sphere"]
DG_CASES = [c for c, v in CASES.items()
            if v.get("dg_cross_check", {}).get("enabled", False)
            and v["geometry"]["kind"] == "sphere"]

# Refuse a case whose mesh or solve cannot fit the machine (config key `limits`).
try:
    check_limits(CONFIG, RUN + [c for c in DG_CASES if c not in RUN])
except ConfigError as exc:
    raise WorkflowError(f"invalid configuration: {exc}") from None


wildcard_constraints:
    case="[A-Za-z0-9_.-]+",
    index="[0-9]+",
    study="[A-Za-z0-9_.-]+",


def case_param(*keys):
    """Params function: the normalised case as JSON, restricted to `keys` when given, so a
    change to solver settings does not re-trigger meshing (params are a rerun trigger)."""

    def param(wildcards):
        return case_json(CONFIG, wildcards.case, keys or None)

    return param


MEDIUM = medium_json(CONFIG)


def frequency_indices(case):
    return [f"{i:03d}" for i in range(len(CASES[case]["frequencies_hz"]))]


def frequency(wildcards):
    return CASES[wildcards.case]["frequencies_hz"][int(wildcards.index)]


def solutions(wildcards):
    return expand("results/{case}/solutions/f{index}.h5", case=wildcards.case,
                  index=frequency_indices(wildcards.case))


def reference_if_sphere(wildcards):
    if CASES[wildcards.case]["geometry"]["kind"] == "sphere":
        return f"results/{wildcards.case}/reference_farfield.csv"
    return []


def solve_resource(key):
    """Resource `key` of a solve job, estimated from the case (see wavescat.resources)."""
    return lambda wildcards: solve_resources(CASES[wildcards.case], CONFIG["medium"],
                                             workflow.cores)[key]


def mesh_resource(key):
    return lambda wildcards: mesh_resources(CASES[wildcards.case], CONFIG["medium"])[key]


def study_cases_json(wildcards):
    names = study_cases(CONFIG, wildcards.study)
    return json.dumps({n: CASES[n] for n in names}, sort_keys=True, separators=(",", ":"))
