from wavescat.config import SOLVE_KEYS  # what `wavescat solve` gets; tests solve the same


rule solve:
    """OSRC Burton-Miller solve of one case at one frequency, all incidence directions."""
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
        **gpu_resources(solve_resource("gpu")),
    log:
        "results/{case}/logs/solve_f{index}.log",
    shell:
        "{WAVESCAT} solve --case {params.case:q} --medium {params.medium:q} --mesh {input.mesh}"
        " --frequency {params.frequency} --out {output} > {log} 2>&1"


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
        case=case_param("geometry", "boundary", "frequencies_hz", "incident", "receivers"),
        medium=MEDIUM,
    log:
        "results/{case}/logs/reference_farfield.log",
    shell:
        "{WAVESCAT} reference --case {params.case:q} --medium {params.medium:q} --out {output}"
        " > {log} 2>&1"


rule study_table:
    """One long TS table and plots over all cases of a parameter study."""
    input:
        lambda wc: expand("results/{case}/farfield.csv", case=study_cases(CONFIG, wc.study)),
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
