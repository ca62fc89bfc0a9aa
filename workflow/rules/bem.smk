from wavescat.config import SOLVE_KEYS  # what `wavescat solve` gets; tests solve the same


rule solve:
    """OSRC Burton-Miller solve of one case at one frequency, all incidence directions; on
    several MPI ranks where the case says `solver.ranks` (common.smk, mpi_launcher)."""
    input:
        mesh=solve_mesh,
    output:
        "results/{case}/solutions/f{index}.h5",
    params:
        case=case_param(*SOLVE_KEYS),
        medium=MEDIUM,
        frequency=frequency,
    threads: solve_resource("threads")
    resources:
        mem_mb=solve_resource("mem_mb"),
        runtime=solve_resource("runtime"),
        mpi=mpi_launcher,
        launch=mpi_launch,
        tasks=solve_resource("tasks"),
        cpus_per_task=cpus_per_rank,
        tasks_per_gpu=solve_resource("tasks_per_gpu"),
        **gpu_resources(solve_resource("gpu")),
    log:
        "results/{case}/logs/solve_f{index}.log",
    shell:
        "{resources.launch}{WAVESCAT} solve --case {params.case:q} --medium {params.medium:q}"
        " --mesh {input.mesh} --frequency {params.frequency} --out {output} > {log} 2>&1"


rule far_field:
    """Far field and TS tables, summary and plots of one case over all its frequencies."""
    input:
        solutions=solutions,
        reference=reference_if_sphere,
        mesh_stats=lambda wc: case_meshes(wc.case, stats=True),
    output:
        farfield=report("results/{case}/farfield.csv", caption="../report/farfield_table.rst",
                         category="Tables", subcategory="{case}"),
        summary="results/{case}/summary.json",
        plots=report(directory("results/{case}/plots"), patterns=["{name}.png"],
                     caption="../report/ts_plots.rst", category="Target strength",
                     subcategory="{case}"),
    params:
        case=case_param(),
        reference=lambda wc, input: f"--reference {input.reference}" if input.reference else "",
    log:
        "results/{case}/logs/far_field.log",
    shell:
        "{WAVESCAT} collect --name {wildcards.case} --case {params.case:q} --inputs {input.solutions}"
        " {params.reference} --mesh-stats {input.mesh_stats}"
        " --farfield {output.farfield} --summary {output.summary}"
        " --plots {output.plots} > {log} 2>&1"


rule reference_farfield:
    """Exact far field of a sphere case (partial-wave series of its boundary condition), farfield.csv format."""
    output:
        "results/{case}/reference_farfield.csv",
    params:
        case=case_param("geometry", "boundary", "inside", "frequencies_hz", "incident",
                          "receivers"),
        medium=MEDIUM,
    log:
        "results/{case}/logs/reference_farfield.log",
    shell:
        "{WAVESCAT} reference --case {params.case:q} --medium {params.medium:q} --out {output}"
        " > {log} 2>&1"


rule study_table:
    """One long TS table and plots over all cases of a parameter study."""
    input:
        # sorted: the order of --cases (JSON with sorted keys), so each table gets its case
        lambda wc: expand("results/{case}/farfield.csv",
                          case=sorted(study_cases(CONFIG, wc.study))),
    output:
        table=report("results/{study}/ts.csv", caption="../report/study_table.rst",
                     category="Studies", subcategory="{study}"),
        plots=report(directory("results/{study}/study_plots"), patterns=["{name}.png"],
                     caption="../report/study_plots.rst", category="Studies",
                     subcategory="{study}"),
    params:
        cases=study_cases_json,
    log:
        "results/{study}/logs/study_table.log",
    shell:
        "{WAVESCAT} study --cases {params.cases:q} --farfields {input} --out {output.table}"
        " --plots {output.plots} > {log} 2>&1"


rule bem_vs_exact:
    """RMS TS and relative L2 far-field errors of a sphere case against the exact series."""
    input:
        computed="results/{case}/farfield.csv",
        reference="results/{case}/reference_farfield.csv",
    output:
        "results/{case}/bem_vs_exact.json",
    log:
        "results/{case}/logs/bem_vs_exact.log",
    shell:
        "{WAVESCAT} compare-farfield --computed {input.computed} --reference {input.reference}"
        " --out {output} > {log} 2>&1"


# --- averages (issue 26): TS averaged over bands and tilt distributions (wavescat.averages) ---
import re as _re

AVERAGE_CASES = [c for c, v in CASES.items() if v.get("averages")]
AVERAGE_STUDIES = [s for s in CONFIG["studies"]
                   if any(CASES[c].get("averages") for c in study_cases(CONFIG, s))]


def _only(names):
    """A wildcard constraint matching exactly `names` (nothing when empty): a case's and a
    study's ts_averages.csv share the pattern results/<name>/ts_averages.csv."""
    return "|".join(_re.escape(n) for n in names) or "(?!)"


def study_average_cases(study):
    """Sorted, as the keys of the JSON given with them (sort_keys)."""
    return sorted(c for c in study_cases(CONFIG, study) if CASES[c].get("averages"))


rule ts_averages:
    """TS of a monostatic sweep averaged in sigma_bs over bands and tilt distributions."""
    input:
        "results/{case}/farfield.csv",
    output:
        table=report("results/{case}/ts_averages.csv", caption="../report/ts_averages.rst",
                     category="Tables", subcategory="{case}"),
        plot=report("results/{case}/ts_averages.png", caption="../report/ts_averages_plot.rst",
                    category="Target strength", subcategory="{case}"),
    params:
        case=case_param("averages", "incident", "description"),
    wildcard_constraints:
        case=_only(AVERAGE_CASES),
    log:
        "results/{case}/logs/ts_averages.log",
    shell:
        "{WAVESCAT} averages --name {wildcards.case} --case {params.case:q} --farfield {input}"
        " --out {output.table} --plot {output.plot} > {log} 2>&1"


rule study_averages:
    """The TS averages of a study's cases (those with `averages`) in one long table."""
    input:
        lambda wc: expand("results/{case}/ts_averages.csv", case=study_average_cases(wc.study)),
    output:
        report("results/{study}/ts_averages.csv", caption="../report/study_ts_averages.rst",
               category="Studies", subcategory="{study}"),
    params:
        cases=lambda wc: json.dumps({n: {"study": CASES[n]["study"]}
                                     for n in study_average_cases(wc.study)},
                                    sort_keys=True, separators=(",", ":")),
    wildcard_constraints:
        study=_only(AVERAGE_STUDIES),
    log:
        "results/{study}/logs/study_averages.log",
    shell:
        "{WAVESCAT} study-averages --cases {params.cases:q} --averages {input}"
        " --out {output} > {log} 2>&1"
