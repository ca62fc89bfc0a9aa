rule solve:
    """BEM solve of one case at one frequency, all incidence directions together: the
    formulation of its boundary (OSRC Burton-Miller for rigid, pressure-release and impedance
    surfaces, Müller's for a fluid body, the multi-domain system for nested bodies); on
    several MPI ranks where the case says `solver.ranks` (common.smk, mpi_launcher)."""
    input:
        mesh=solve_mesh,
    output:
        "results/{case}/solutions/f{index}.h5",
    log:
        "results/{case}/logs/solve_f{index}.log",
    conda:
        "../envs/wavescat.yaml"
    threads: solve_resource("threads")
    resources:
        **gpu_resources(solve_resource("gpu")),
        mem_mb=solve_resource("mem_mb"),
        runtime=solve_resource("runtime"),
        mpi=mpi_launcher,
        launch=mpi_launch,
        tasks=solve_resource("tasks"),
        cpus_per_task=cpus_per_rank,
        tasks_per_gpu=solve_resource("tasks_per_gpu"),
    params:
        python=JOB_PYTHON,
        case=case_param(*SOLVE_KEYS),
        medium=MEDIUM,
        frequency=frequency,
    shell:
        "{resources.launch}{params.python:q} -m wavescat solve"
        " --case {params.case:q} --medium {params.medium:q} --mesh {input.mesh}"
        " --frequency {params.frequency} --out {output} > {log} 2>&1"


rule far_field:
    """Far field and TS tables, summary and plots of one case over all its frequencies."""
    input:
        solutions=solutions,
        reference=reference_if_sphere,
        mesh_stats=lambda wc: case_meshes(wc.case, stats=True),
    output:
        farfield=report(
            "results/{case}/farfield.csv",
            caption="../report/farfield_table.rst",
            category="Tables",
            subcategory="{case}",
        ),
        summary="results/{case}/summary.json",
        plots=report(
            directory("results/{case}/plots"),
            patterns=["{name}.png"],
            caption="../report/ts_plots.rst",
            category="Target strength",
            subcategory="{case}",
        ),
        surface=report(
            directory("results/{case}/surface"),
            patterns=["{name}.vtu"],
            caption="../report/surface_pressure.rst",
            category="Surface pressure",
            subcategory="{case}",
        ),
    log:
        "results/{case}/logs/far_field.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        case=case_param(),
        reference=lambda wc, input: f"--reference {input.reference}" if input.reference else "",
    shell:
        "{params.python:q} -m wavescat collect"
        " --name {wildcards.case} --case {params.case:q} --inputs {input.solutions}"
        " {params.reference} --mesh-stats {input.mesh_stats}"
        " --farfield {output.farfield} --summary {output.summary}"
        " --plots {output.plots} --surface {output.surface} > {log} 2>&1"


rule near_field:
    """Scattered and total pressure on the plane of the case's `near_field`, per mapped
    frequency: a table and a map."""
    input:
        near_field_solutions,
    output:
        report(
            directory("results/{case}/near_field"),
            patterns=["{name}.png"],
            caption="../report/near_field.rst",
            category="Near field",
            subcategory="{case}",
        ),
    log:
        "results/{case}/logs/near_field.log",
    wildcard_constraints:
        case=only(NEAR_FIELD_CASES),
    conda:
        "../envs/wavescat.yaml"
    resources:
        **gpu_resources(near_field_gpus),
    params:
        python=JOB_PYTHON,
        case=case_param("near_field", "solver", "description"),
    shell:
        "{params.python:q} -m wavescat near-field --name {wildcards.case} --case {params.case:q}"
        " --solutions {input} --out {output} > {log} 2>&1"


rule reference_farfield:
    """Exact far field of a sphere case (partial-wave series of its boundary condition), in
    the farfield.csv format."""
    output:
        "results/{case}/reference_farfield.csv",
    log:
        "results/{case}/logs/reference_farfield.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        case=case_param(*REFERENCE_KEYS),
        medium=MEDIUM,
    shell:
        "{params.python:q} -m wavescat reference"
        " --case {params.case:q} --medium {params.medium:q} --out {output}"
        " > {log} 2>&1"


rule study_table:
    """One long TS table and plots over all cases of a parameter study."""
    input:
        study_farfields,
    output:
        table=report(
            "results/{study}/ts.csv",
            caption="../report/study_table.rst",
            category="Studies",
            subcategory="{study}",
        ),
        plots=report(
            directory("results/{study}/study_plots"),
            patterns=["{name}.png"],
            caption="../report/study_plots.rst",
            category="Studies",
            subcategory="{study}",
        ),
    log:
        "results/{study}/logs/study_table.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        cases=study_cases_json,
    shell:
        "{params.python:q} -m wavescat study"
        " --cases {params.cases:q} --farfields {input} --out {output.table}"
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
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
    shell:
        "{params.python:q} -m wavescat compare-farfield"
        " --computed {input.computed} --reference {input.reference}"
        " --out {output} > {log} 2>&1"


# TS averaged over bands and tilt distributions (wavescat.results.averages)
rule ts_averages:
    """TS of a monostatic sweep averaged in sigma_bs over bands and tilt distributions."""
    input:
        "results/{case}/farfield.csv",
    output:
        table=report(
            "results/{case}/ts_averages.csv",
            caption="../report/ts_averages.rst",
            category="Tables",
            subcategory="{case}",
        ),
        plot=report(
            "results/{case}/ts_averages.png",
            caption="../report/ts_averages_plot.rst",
            category="Target strength",
            subcategory="{case}",
        ),
    log:
        "results/{case}/logs/ts_averages.log",
    wildcard_constraints:
        case=only(AVERAGE_CASES),
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        case=case_param("averages", "incident", "description"),
    shell:
        "{params.python:q} -m wavescat averages"
        " --name {wildcards.case} --case {params.case:q} --farfield {input}"
        " --out {output.table} --plot {output.plot} > {log} 2>&1"


rule study_averages:
    """The TS averages of a study's cases (those with `averages`) in one long table."""
    input:
        lambda wc: expand("results/{case}/ts_averages.csv", case=study_average_cases(wc.study)),
    output:
        report(
            "results/{study}/ts_averages.csv",
            caption="../report/study_ts_averages.rst",
            category="Studies",
            subcategory="{study}",
        ),
    log:
        "results/{study}/logs/study_averages.log",
    wildcard_constraints:
        study=only(AVERAGE_STUDIES),
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        cases=study_averages_json,
    shell:
        "{params.python:q} -m wavescat study-averages --cases {params.cases:q} --averages {input}"
        " --out {output} > {log} 2>&1"
