# Configuration checks and helpers shared by all rule files.
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

from wavescat.configuration.config import (
    SOLVE_KEYS,
    ClusterSettings,
    VerificationSettings,
    all_studies,
    medium_json,
    prepare_config,
    run_cases,
    run_studies,
    typed_cases,
)
from wavescat.configuration.config_files import config_error
from wavescat.configuration.studies import study_cases
from wavescat.defaults import SCHEMA_PATH
from wavescat.errors import ConfigError
from wavescat.geometry.sizing import frequency_bands, sizing_frequencies
from wavescat.planning.preflight import check_limits, check_resolution
from wavescat.planning.resources import (
    gpu_count,
    mesh_resources,
    mpiexec_command,
    partition,
    solve_resources,
)
from wavescat.reference.sphere import has_series
from wavescat.results.notices import config_warning_lines, print_run_warnings

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

# The Python whose `-m wavescat` runs each job (every rule's `params.python`): `python` of
# the conda environment (workflow/envs/wavescat.yaml) or of the container (Dockerfile) under
# `--sdm conda` or `--sdm apptainer`, else the interpreter that runs Snakemake (no PATH set-up
# needed). A Path, which Snakemake leaves out of its params rerun trigger: moving the venv or
# changing the deployment method redoes no job.
DEPLOYED = bool(
    {DeploymentMethod.CONDA, DeploymentMethod.APPTAINER}
    & set(workflow.deployment_settings.deployment_method)
)
JOB_PYTHON = Path("python" if DEPLOYED else sys.executable)

RUN = run_cases(CONFIG)
STUDIES = run_studies(CONFIG)
# Every case, typed (configuration.case.Case): what the helpers read, the JSON handed to the
# subcommands included (Case.as_json); the config sections the rules need, typed too.
CASES = typed_cases(CONFIG)
CLUSTER = ClusterSettings.from_config(CONFIG)
VERIFY = VerificationSettings.from_config(CONFIG)
SPHERE_CASES = [c for c in RUN if has_series(CASES[c])]  # spheres, concentric spheres
DG_CASES = [c for c in CASES if CASES[c].dg_cross_check]  # None where absent or disabled
HERMITE_CASES = [c for c in CASES if CASES[c].hermite_cross_check]

# Refuse a case whose mesh or solve cannot fit the machine (config key `limits`).
try:
    check_limits(CONFIG, RUN + [c for c in DG_CASES + HERMITE_CASES if c not in RUN])
except ConfigError as exc:
    sys.exit(config_error(exc, CONFIG_FILES))

# Refuse a case whose stored mesh file is far too coarse for its wavelengths (a file in
# millimetres read as metres: wavescat.geometry.resolution), and say on the console, before
# any job starts, which cases' single-frequency TS is hypersensitive
# (wavescat.planning.sensitivity).
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
        return CASES[wildcards.case].as_json(keys or None)

    return param


MEDIUM = medium_json(CONFIG)


def frequency_indices(case):
    return [f"{i:03d}" for i in range(len(CASES[case].frequencies_hz))]


def mesh_bands(case):
    """Frequency indices of each mesh band of `case`, finest (highest frequencies) first."""
    return frequency_bands(sizing_frequencies(CASES[case]), CASES[case].mesh.band_ratio)


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


# What a band's mesh depends on: geometry, mesh keys, the band's frequencies, the boundary
# (its kind: `mesh.match_volume: auto` matches fluid bodies' volume; a fluid's sound speed:
# `mesh.resolve_interior`) and the bodies inside.
MESH_KEYS = ("geometry", "frequencies_hz", "mesh", "inside", "boundary")


def band_case(wildcards):
    """The case at the frequencies of the band of its mesh (`band`, else band 0)."""
    band = mesh_bands(wildcards.case)[int(getattr(wildcards, "band", 0))]
    freqs = CASES[wildcards.case].frequencies_hz
    return CASES[wildcards.case].with_frequencies([freqs[i] for i in band])


def band_case_json(wildcards):
    return band_case(wildcards).as_json(MESH_KEYS)


def frequency_case(wildcards):
    """The case at one frequency (what a solve job's size follows)."""
    return CASES[wildcards.case].with_frequencies([frequency(wildcards)])


def frequency(wildcards):
    return CASES[wildcards.case].frequencies_hz[int(wildcards.index)]


def solutions(wildcards):
    return expand(
        "results/{case}/solutions/f{index}.h5",
        case=wildcards.case,
        index=frequency_indices(wildcards.case),
    )


def geometry_file(wildcards):
    """The geometry files of a case's `file` and `krm` bodies (the body's and those inside it):
    inputs of its mesh, so editing one re-meshes."""
    return [path for body in CASES[wildcards.case].bodies for path in body.geometry.files()]


# What a sphere case's exact series depends on (a rerun trigger of reference_farfield).
REFERENCE_KEYS = ("geometry", "boundary", "inside", "frequencies_hz", "incident", "receivers")


def reference_if_sphere(wildcards):
    if has_series(CASES[wildcards.case]):
        return f"results/{wildcards.case}/reference_farfield.csv"
    return []


def total_cores():
    """--cores; 1 where the command runs no job and sets none (--report builds the DAG, and
    with it the solve's MPI resources, without it)."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def solve_resource(key):
    """Resource `key` of a solve job, estimated from the case (see wavescat.planning.resources)."""
    return lambda wildcards: solve_resources(frequency_case(wildcards), total_cores(), CLUSTER)[key]


# Snakemake's MPI support: a case with solver.ranks > 1 starts its solve as that many MPI
# ranks. The solve rule's `tasks` resource is the ranks and its `mpi` resource the launcher
# (both unset on one rank), which the SLURM executor reads: such a job is submitted with
# --ntasks and its step runs the command without srun of its own. The launcher is
# `cluster.mpi_launcher` where the config names one; else inside a SLURM job srun, with the
# PMI-2 interface MPICH's wheel speaks; elsewhere the mpiexec beside this Python (pip install
# -e '.[mpi]'), else the PATH's, unbound where it is Open MPI's (mpiexec_command). The
# command starts with the `launch` resource, `<mpi> -n <tasks> ` or nothing (a resource, not
# a param: params are a rerun trigger, and the submitting process and the job step name
# different launchers).
# Under --sdm conda or apptainer, the mpiexec of the job's environment.
MPIEXEC = (
    "mpiexec"
    if DEPLOYED
    else shlex.quote(shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or "mpiexec")
)
SRUN = "srun --mpi=pmi2"


def solve_ranks(wildcards):
    return CASES[wildcards.case].solver.ranks


def mpi_launcher(wildcards):
    """The `mpi` resource of a solve: None on one rank (an ordinary job)."""
    if solve_ranks(wildcards) == 1:
        return None
    if CLUSTER.mpi_launcher:
        return CLUSTER.mpi_launcher
    if os.environ.get("SLURM_JOB_ID"):
        return SRUN
    return MPIEXEC if DEPLOYED else mpiexec_command(MPIEXEC)


def mpi_launch(wildcards):
    """The `launch` resource of a solve: how its command starts."""
    launcher = mpi_launcher(wildcards)
    return f"{launcher} -n {solve_ranks(wildcards)} " if launcher else ""


def cpus_per_rank(wildcards, threads):
    """A solve's threads shared by its ranks (SLURM's --cpus-per-task of each task)."""
    ranks = solve_ranks(wildcards)
    return max(1, threads // ranks) if ranks > 1 else None


def gpu_resources(gpus):
    """`gpu` of a rule that can run on a GPU (a count, or a function of the wildcards) and,
    where the config names `cluster.partitions`, the `slurm_partition` that goes with it;
    otherwise the profile's partition applies."""
    resources = {"gpu": gpus}
    if CLUSTER.partitions:
        count = gpus if callable(gpus) else (lambda wildcards: gpus)
        resources["slurm_partition"] = lambda wildcards: partition(count(wildcards), CLUSTER)
    return resources


def mesh_resource(key):
    return lambda wildcards: mesh_resources(band_case(wildcards))[key]


def study_farfields(wildcards):
    """Sorted: the order of `--cases` (JSON with sorted keys), so each table gets its case."""
    return expand("results/{case}/farfield.csv", case=sorted(study_cases(CONFIG, wildcards.study)))


def study_cases_json(wildcards):
    names = study_cases(CONFIG, wildcards.study)
    return json.dumps({n: CASES[n].as_dict() for n in names}, sort_keys=True, separators=(",", ":"))


# --- TS averages (wavescat.results.averages): the cases and studies that have them ---
AVERAGE_CASES = [c for c in CASES if CASES[c].has_averages]
AVERAGE_STUDIES = [
    s for s in all_studies(CONFIG) if any(CASES[c].has_averages for c in study_cases(CONFIG, s))
]


def only(names):
    """A wildcard constraint matching exactly `names` (nothing when empty): a case's and a
    study's ts_averages.csv share the pattern results/<name>/ts_averages.csv."""
    return "|".join(re.escape(n) for n in names) or "(?!)"


def study_average_cases(study):
    """Sorted, as the keys of the JSON given with them (sort_keys)."""
    return sorted(c for c in study_cases(CONFIG, study) if CASES[c].has_averages)


def study_averages_json(wildcards):
    return json.dumps(
        {n: {"study": CASES[n].study} for n in study_average_cases(wildcards.study)},
        sort_keys=True,
        separators=(",", ":"),
    )


# --- near-field maps (wavescat.results.near_field): the cases that ask for one ---
NEAR_FIELD_CASES = [c for c in CASES if CASES[c].near_field]


def near_field_solutions(wildcards):
    """The solutions a case's near-field maps are made of: its highest frequency's, or all."""
    case = CASES[wildcards.case]
    freqs = case.frequencies_hz
    which = case.near_field.frequencies
    indices = range(len(freqs)) if which == "all" else [freqs.index(max(freqs))]
    return [f"results/{wildcards.case}/solutions/f{i:03d}.h5" for i in indices]


def near_field_gpus(wildcards):
    """The potentials run where the case's solves run: ask for a GPU as a solve does."""
    return gpu_count(CASES[wildcards.case].solver.backend, CLUSTER)


# --- time-domain verification (timedomain.smk) ---
VERIFY_FLAGS = f"--backend {VERIFY.backend} --precision {VERIFY.precision}" + (
    " --quick" if VERIFY.quick else ""
)


def cross_check_probes(wildcards):
    """The probes of the case's `{check}_cross_check` (dg or hermite), for its BEM table, as
    its block gives them: a param's text is a rerun trigger (the typed probes read 1 as 1.0)."""
    return CASES[wildcards.case].as_dict()[f"{wildcards.check}_cross_check"]["probes"]


def hermite_bem_table(wildcards):
    """The BEM probe table hermite_vs_bem compares with: DG's where the two checks share their
    probes (one table for both), else the Hermite check's own."""
    case = CASES[wildcards.case]
    dg = case.dg_cross_check  # None where absent or disabled
    shared = dg is not None and dg.probes == case.hermite_cross_check.probes
    return f"results/{wildcards.case}/{'dg' if shared else 'hermite'}/bem_probes.csv"


def stale_plan(wildcards):
    """What this config builds in each of its cases' folders (wavescat stale)."""
    plan = {
        case: {
            "bands": len(mesh_bands(case)),
            "frequencies": len(CASES[case].frequencies_hz),
            "near_field": case in NEAR_FIELD_CASES,
            "averages": case in AVERAGE_CASES,
        }
        for case in CASES
    }
    return json.dumps(plan, sort_keys=True, separators=(",", ":"))
