# wavescat: target strength of bodies under water (see README.md). Each case is meshed per
# frequency band (gmsh), solved per frequency with the BEM formulation of its boundary
# (Burton-Miller for rigid, pressure-release and impedance surfaces, Müller's for fluid
# bodies, a multi-domain system for nested ones), then gathered into far-field tables, TS
# plots and surface-pressure files (VTU), with near-field maps where a case asks for them;
# `verify` checks the BEM against exact series and time-domain solvers.
# Thin on purpose: configuration and helpers live in workflow/rules/common.smk, one rule
# file per stage, numerics in the `wavescat` package. Every rule runs `python -m wavescat`
# in the conda environment workflow/envs/wavescat.yaml under `--sdm conda`, in the container
# of the Dockerfile under `--sdm apptainer`, else with the Python that runs Snakemake.
import os
import sys

from snakemake.utils import min_version

from wavescat.configuration.config_files import load_config_file
from wavescat.errors import ConfigError

min_version("9.0")

# The embedded default study; found beside this Snakefile wherever Snakemake runs.
DEFAULT_CONFIG = os.path.join(workflow.basedir, "config", "config.yaml")
# Snakemake's own message for a YAML syntax error names neither the file nor the line.
try:
    load_config_file(DEFAULT_CONFIG)
except ConfigError as exc:
    sys.exit(f"invalid configuration: {exc}")


configfile: DEFAULT_CONFIG


# The image built from the Dockerfile (README.md, "Conda and containers"); used only with
# --sdm apptainer.
container: "wavescat.sif"


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/mesh.smk"
include: "workflow/rules/bem.smk"
include: "workflow/rules/timedomain.smk"


# The stale-file targets only look at files: never a cluster job.
localrules:
    stale,
    clean_stale,


onsuccess:
    report_warnings("ended")


onerror:
    report_warnings("failed")


rule target_strength:
    """Far field, TS tables, plots and summary of every case under `run:`."""
    input:
        expand("results/{case}/farfield.csv", case=RUN),
        expand("results/{case}/summary.json", case=RUN),
        expand("results/{case}/plots", case=RUN),
        expand("results/{study}/ts.csv", study=STUDIES),
        expand(
            "results/{case}/ts_averages.{ext}",
            case=[c for c in RUN if c in AVERAGE_CASES],
            ext=["csv", "png"],
        ),
        expand("results/{case}/near_field", case=[c for c in RUN if c in NEAR_FIELD_CASES]),
        expand(
            "results/{study}/ts_averages.csv", study=[s for s in STUDIES if s in AVERAGE_STUDIES]
        ),


rule meshes:
    """The checked surface meshes of every case under `run:` (one per frequency band)."""
    input:
        [case_meshes(case) for case in RUN],
        [case_meshes(case, stats=True) for case in RUN],


rule verify_bem:
    """Exact sphere far fields (series of each boundary condition) for the sphere cases, and
    the BEM compared with them."""
    input:
        expand("results/{case}/reference_farfield.csv", case=SPHERE_CASES),
        expand("results/{case}/bem_vs_exact.json", case=SPHERE_CASES),


rule verify_hermite:
    """Hermite-Taylor's convergence against exact solutions, and Hermite-Taylor against the
    BEM at the probes of every case with hermite_cross_check (rigid boxes)."""
    input:
        "results/verification/hermite_convergence.csv",
        expand("results/{case}/hermite_vs_bem.csv", case=HERMITE_CASES),


rule verify_dg:
    input:
        "results/verification/dg_convergence.csv",
        expand("results/{case}/dg_vs_bem.csv", case=DG_CASES),


rule verify:
    input:
        rules.verify_bem.input,
        rules.verify_hermite.input,
        rules.verify_dg.input,


rule stale:
    """List what the current config no longer builds in its cases' folders under results/:
    band meshes and solutions beyond its bands and frequencies, their logs, near-field maps
    and TS averages it no longer asks for. Deletes nothing."""
    log:
        "results/stale.log",
    conda:
        "workflow/envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        plan=stale_plan,
    shell:
        "{params.python:q} -m wavescat stale --plan {params.plan:q} 2>&1 | tee {log}"


rule clean_stale:
    """Delete what `stale` lists (the folders of other configs' cases are never touched)."""
    log:
        "results/clean_stale.log",
    conda:
        "workflow/envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        plan=stale_plan,
    shell:
        "{params.python:q} -m wavescat stale --plan {params.plan:q} --delete 2>&1 | tee {log}"
