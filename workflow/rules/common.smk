# Configuration checks and helpers shared by all rule files.
import json
import os
import shlex
import sys

from snakemake.utils import validate

from wavescat.config import case_json, medium_json, prepare_config, run_cases, run_studies
from wavescat.config_files import config_error
from wavescat.defaults import SCHEMA_PATH
from wavescat.studies import study_cases
from wavescat.reference.sphere import has_series
from wavescat.errors import ConfigError
from wavescat.geometry.bodies import body_tree
from wavescat.geometry.sizing import band_case, frequency_bands, sizing_frequencies
from wavescat.notices import config_warning_lines, print_run_warnings
from wavescat.resources import (check_limits, check_resolution, gpu_count, mesh_resources,
                                partition, solve_resources)

# Our own pass first: it names the key and value of the first problem and checks what a
# schema cannot (geometry keys per kind, mesh files on disk, `run` entries). The error is
# one line that also names the file and line setting the key (command-line files win over
# the Snakefile's), with no Snakemake stack around it.
CONFIG_FILES = [f for f in workflow.configfiles if f not in workflow.overwrite_configfiles]
CONFIG_FILES += list(workflow.overwrite_configfiles)
try:
    CONFIG = prepare_config(config, base_dir=os.getcwd())
except ConfigError as exc:
    sys.exit(config_error(exc, CONFIG_FILES))
validate(CONFIG, str(SCHEMA_PATH))  # the package's schema, the one prepare_config uses

# The wavescat CLI of the interpreter that runs Snakemake (no PATH set-up needed).
WAVESCAT = f"{shlex.quote(sys.executable)} -m wavescat"

RUN = run_cases(CONFIG)
STUDIES = run_studies(CONFIG)
CASES = CONFIG["cases"]
SPHERE_CASES = [c for c in RUN if has_series(CASES[c])]  # spheres, concentric spheres
DG_CASES = [c for c, v in CASES.items()
            if v.get("dg_cross_check", {}).get("enabled", False)]

# Refuse a case whose mesh or solve cannot fit the machine (config key `limits`).
try:
    check_limits(CONFIG, RUN + [c for c in DG_CASES if c not in RUN])
except ConfigError as exc:
    sys.exit(config_error(exc, CONFIG_FILES))

# Refuse a case whose stored mesh file is far too coarse for its wavelengths (a file in
# millimetres read as metres: wavescat.geometry.resolution), and say on the console, before
# any job starts, which cases' single-frequency TS is hypersensitive (wavescat.sensitivity).
try:
    CONFIG_WARNINGS = check_resolution(CONFIG, RUN)
except ConfigError as exc:
    sys.exit(config_error(exc, CONFIG_FILES))
if workflow.is_main_process:
    for _line in config_warning_lines(CONFIG_WARNINGS):
        print(_line, file=sys.stderr)


def report_warnings(ending):
    """Every warning of the run's cases (summary.json, mesh statistics, the config check's)
    on the console when the run ends: the jobs write them only to their logs."""
    print_run_warnings(RUN, "results", CONFIG_WARNINGS, ending)


wildcard_constraints:
    case="[A-Za-z0-9_.-]+",
    index="[0-9]+",
    band="[1-9][0-9]*",
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


def mesh_bands(case):
    """Frequency indices of each mesh band of `case`, finest (highest frequencies) first."""
    c = CASES[case]
    return frequency_bands(sizing_frequencies(c, CONFIG["medium"]), c["mesh"]["band_ratio"])


def band_mesh(case, band, stats=False):
    """Band 0 (the finest, sized for the highest frequency) is `mesh.msh`; coarser bands
    of a sweep live in `meshes/b<band>.msh`."""
    if int(band) == 0:
        return f"results/{case}/mesh_stats.json" if stats else f"results/{case}/mesh.msh"
    return f"results/{case}/meshes/b{int(band)}" + ("_stats.json" if stats else ".msh")


def case_meshes(case, stats=False):
    return [band_mesh(case, b, stats) for b in range(len(mesh_bands(case)))]


def band_of(case, index):
    return next(b for b, band in enumerate(mesh_bands(case)) if int(index) in band)


def solve_mesh(wildcards):
    """The mesh of the band that holds this frequency."""
    return band_mesh(wildcards.case, band_of(wildcards.case, wildcards.index))


def band_case_json(wildcards):
    """What a band's mesh depends on: geometry, mesh keys, the band's frequencies, the
    boundary (its kind: `mesh.match_volume: auto` matches fluid bodies' volume; a fluid's
    sound speed: `mesh.resolve_interior`) and the bodies inside."""
    band = mesh_bands(wildcards.case)[int(getattr(wildcards, "band", 0))]
    case = band_case(CASES[wildcards.case], band)
    keep = {k: case[k] for k in ("geometry", "frequencies_hz", "mesh", "inside") if k in case}
    keep["boundary"] = {"kind": "rigid", **(case.get("boundary") or {})}
    return json.dumps(keep, sort_keys=True, separators=(",", ":"))


def frequency_case(wildcards):
    """The case at one frequency (what a solve job's size follows)."""
    return band_case(CASES[wildcards.case], [int(wildcards.index)])


def frequency(wildcards):
    return CASES[wildcards.case]["frequencies_hz"][int(wildcards.index)]


def solutions(wildcards):
    return expand("results/{case}/solutions/f{index}.h5", case=wildcards.case,
                  index=frequency_indices(wildcards.case))


def geometry_file(wildcards):
    """The geometry files of a case's `file` and `krm` bodies (the body's and those inside it): inputs
    of its mesh, so editing one re-meshes."""
    return [body.geometry["path"] for body in body_tree(CASES[wildcards.case], CONFIG["medium"])
            if body.geometry["kind"] in ("file", "krm")]


def reference_if_sphere(wildcards):
    if has_series(CASES[wildcards.case]):
        return f"results/{wildcards.case}/reference_farfield.csv"
    return []


def solve_resource(key):
    """Resource `key` of a solve job, estimated from the case (see wavescat.resources)."""
    return lambda wildcards: solve_resources(frequency_case(wildcards), CONFIG["medium"],
                                             workflow.cores, CONFIG["cluster"])[key]


def gpu_resources(gpus):
    """`gpu` of a rule that can run on a GPU (a count, or a function of the wildcards) and,
    where the config names `cluster.partitions`, the `slurm_partition` that goes with it;
    otherwise the profile's partition applies."""
    resources = {"gpu": gpus}
    if CONFIG["cluster"].get("partitions"):
        count = gpus if callable(gpus) else (lambda wildcards: gpus)
        resources["slurm_partition"] = lambda wildcards: partition(count(wildcards),
                                                                   CONFIG["cluster"])
    return resources


def mesh_resource(key):
    def resource(wildcards):
        band = mesh_bands(wildcards.case)[int(getattr(wildcards, "band", 0))]
        return mesh_resources(band_case(CASES[wildcards.case], band), CONFIG["medium"])[key]

    return resource


def study_cases_json(wildcards):
    names = study_cases(CONFIG, wildcards.study)
    return json.dumps({n: CASES[n] for n in names}, sort_keys=True, separators=(",", ":"))
