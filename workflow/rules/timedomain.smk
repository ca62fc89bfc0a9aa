rule hermite_convergence:
    """Hermite-Taylor convergence study (m = 1, 2, 3) against exact solutions."""
    output:
        csv="results/verification/hermite_convergence.csv",
        acoustics="results/verification/hermite_convergence_acoustics.csv",
        plot=report(
            "results/verification/hermite_convergence.png",
            caption="../report/hermite.rst",
            category="Verification",
        ),
    log:
        "results/verification/logs/hermite.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        flags=VERIFY_FLAGS,
    shell:
        "{params.python:q} -m wavescat verify-hermite"
        " --csv {output.csv} --plot {output.plot} {params.flags} > {log} 2>&1"


rule dg_convergence:
    """Nodal DG convergence study (cavity mode in a rigid box, N = 1..5)."""
    output:
        csv="results/verification/dg_convergence.csv",
        plot=report(
            "results/verification/dg_convergence.png",
            caption="../report/dg.rst",
            category="Verification",
        ),
    log:
        "results/verification/logs/dg.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        flags=VERIFY_FLAGS,
    shell:
        "{params.python:q} -m wavescat verify-dg"
        " --csv {output.csv} --plot {output.plot} {params.flags} > {log} 2>&1"


rule bem_probes:
    """BEM scattered pressure (the potential of the surface solution) at the probes of the
    case's dg_cross_check (results/{case}/dg/) or hermite_cross_check (.../hermite/, where its
    probes are not DG's), at every frequency of the case."""
    input:
        solutions,
    output:
        "results/{case}/{check}/bem_probes.csv",
    log:
        "results/{case}/logs/{check}_bem_probes.log",
    wildcard_constraints:
        check="dg|hermite",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
        points=lambda wc: json.dumps(cross_check_probes(wc)),
    shell:
        "{params.python:q} -m wavescat bem-probes"
        " --solution {input} --points {params.points:q} --out {output}"
        " > {log} 2>&1"


rule dg_scatter:
    """Time-domain DG run of the case's body: to a time-harmonic state (one frequency) or
    through one pulse (several); amplitudes at the probes (the case's: it needs nothing of
    the BEM, and runs beside its jobs). On the CPU it runs smaller sizes (logged;
    verification.full_on_cpu keeps the case's)."""
    output:
        amplitudes="results/{case}/dg/dg_probes.csv",
        summary="results/{case}/dg/dg_summary.json",
    log:
        "results/{case}/logs/dg_scatter.log",
    conda:
        "../envs/wavescat.yaml"
    resources:
        **gpu_resources(gpu_count(VERIFY.backend, CLUSTER)),
        runtime=120,
    params:
        python=JOB_PYTHON,
        case=case_param(
            "geometry", "boundary", "inside", "frequencies_hz", "incident", "dg_cross_check"
        ),
        medium=MEDIUM,
        flags=VERIFY_FLAGS + (" --full-on-cpu" if VERIFY.full_on_cpu else ""),
    shell:
        "{params.python:q} -m wavescat dg-scatter"
        " --case {params.case:q} --medium {params.medium:q}"
        " --out {output.amplitudes} --summary {output.summary} {params.flags} > {log} 2>&1"


rule dg_vs_bem:
    """DG time-domain against BEM scattered pressure at the probe points, at each frequency;
    fails beyond the tolerance of the DG run's sizes (in dg_summary.json)."""
    input:
        dg="results/{case}/dg/dg_probes.csv",
        bem="results/{case}/dg/bem_probes.csv",
        summary="results/{case}/dg/dg_summary.json",
    output:
        csv="results/{case}/dg_vs_bem.csv",
        errors="results/{case}/dg/dg_vs_bem.json",
        plot=report(
            "results/{case}/dg_vs_bem.png",
            caption="../report/dg_vs_bem.rst",
            category="Verification",
            subcategory="{case}",
        ),
    log:
        "results/{case}/logs/dg_vs_bem.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
    shell:
        "{params.python:q} -m wavescat dg-vs-bem"
        " --dg {input.dg} --bem {input.bem} --out {output.csv} --errors {output.errors}"
        " --plot {output.plot} --summary {input.summary} > {log} 2>&1"


rule hermite_scatter:
    """Time-domain Hermite-Taylor run of the case's rigid box on a Cartesian grid (the box's
    faces on grid planes), one pulse over its frequencies; amplitudes at the probes (it needs
    nothing of the BEM). On the CPU it runs a smaller grid with a wider tolerance (logged and
    in hermite_summary.json; verification.full_on_cpu keeps the case's)."""
    output:
        amplitudes="results/{case}/hermite/hermite_probes.csv",
        summary="results/{case}/hermite/hermite_summary.json",
    log:
        "results/{case}/logs/hermite_scatter.log",
    conda:
        "../envs/wavescat.yaml"
    resources:
        **gpu_resources(gpu_count(VERIFY.backend, CLUSTER)),
        runtime=120,
    params:
        python=JOB_PYTHON,
        case=case_param("geometry", "boundary", "frequencies_hz", "incident", "hermite_cross_check"),
        medium=MEDIUM,
        flags=VERIFY_FLAGS + (" --full-on-cpu" if VERIFY.full_on_cpu else ""),
    shell:
        "{params.python:q} -m wavescat hermite-scatter"
        " --case {params.case:q} --medium {params.medium:q}"
        " --out {output.amplitudes} --summary {output.summary} {params.flags} > {log} 2>&1"


rule hermite_vs_bem:
    """Hermite-Taylor time-domain against BEM scattered pressure at the probe points, at each
    frequency; fails beyond the tolerance of the run's sizes (in hermite_summary.json)."""
    input:
        hermite="results/{case}/hermite/hermite_probes.csv",
        bem=hermite_bem_table,
        summary="results/{case}/hermite/hermite_summary.json",
    output:
        csv="results/{case}/hermite_vs_bem.csv",
        errors="results/{case}/hermite/hermite_vs_bem.json",
        plot=report(
            "results/{case}/hermite_vs_bem.png",
            caption="../report/hermite_vs_bem.rst",
            category="Verification",
            subcategory="{case}",
        ),
    log:
        "results/{case}/logs/hermite_vs_bem.log",
    conda:
        "../envs/wavescat.yaml"
    params:
        python=JOB_PYTHON,
    shell:
        "{params.python:q} -m wavescat hermite-vs-bem"
        " --hermite {input.hermite} --bem {input.bem} --out {output.csv}"
        " --errors {output.errors} --plot {output.plot} --summary {input.summary} > {log} 2>&1"
