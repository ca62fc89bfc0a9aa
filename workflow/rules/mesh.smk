rule mesh:
    """Surface mesh of one case sized from its highest frequency, checked, with statistics."""
    input: geometry_file
    output:
        mesh="results/{case}/mesh.msh",
        stats="results/{case}/mesh_stats.json",
    params:
        case=case_param("geometry", "frequencies_hz", "mesh"),
        medium=MEDIUM,
    resources:
        mem_mb=mesh_resource("mem_mb"),
        runtime=mesh_resource("runtime"),
    log:
        "results/{case}/logs/mesh.log",
    shell:
        "{WAVESCAT} mesh --name {wildcards.case} --case {params.case:q} --medium {params.medium:q}"
        " --mesh {output.mesh} --stats {output.stats} --gmsh-verbose > {log} 2>&1"
