VERIFY = CONFIG["verification"]
VERIFY_FLAGS = (f"--backend {VERIFY['backend']} --precision {VERIFY['precision']}"
                + (" --quick" if VERIFY["quick"] else ""))


rule hermite_convergence:
    """Hermite-Taylor convergence study (m = 1, 2, 3) against exact solutions."""
    output:
        csv="results/verification/hermite_convergence.csv",
        plot=report("results/verification/hermite_convergence.png",
                    caption="../report/hermite.rst", category="Verification"),
    params:
        flags=VERIFY_FLAGS,
    log:
        "results/verification/logs/hermite.log",
    shell:
        "{WAVESCAT} verify-hermite --csv {output.csv} --plot {output.plot} {params.flags} > {log} 2>&1"


rule dg_convergence:
    """Nodal DG convergence study (cavity mode in a rigid box, N = 1..5)."""
    output:
        csv="results/verification/dg_convergence.csv",
        plot=report("results/verification/dg_convergence.png", caption="../report/dg.rst",
                    category="Verification"),
    params:
        flags=VERIFY_FLAGS,
    log:
        "results/verification/logs/dg.log",
    shell:
        "{WAVESCAT} verify-dg --csv {output.csv} --plot {output.plot} {params.flags} > {log} 2>&1"


rule dg_vs_bem:
    """Time-domain DG scattered field at probe points against the BEM (first frequency)."""
    input:
        mesh="results/{case}/mesh.msh",
        solution="results/{case}/solutions/f000.h5",
    output:
        csv="results/{case}/dg_vs_bem.csv",
        plot=report("results/{case}/dg_vs_bem.png", caption="../report/dg_vs_bem.rst",
                    category="Verification", subcategory="{case}"),
    params:
        case=case_param(),
        medium=MEDIUM,
        flags=VERIFY_FLAGS,
    log:
        "results/{case}/logs/dg_vs_bem.log",
    shell:
        "{WAVESCAT} dg-vs-bem --case {params.case:q} --medium {params.medium:q} --mesh {input.mesh}"
        " --solution {input.solution} --csv {output.csv} --plot {output.plot} {params.flags}"
        " > {log} 2>&1"
