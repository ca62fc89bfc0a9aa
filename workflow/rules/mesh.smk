# One mesh per frequency band of a case (wavescat.geometry.sizing.frequency_bands): band 0,
# sized for the highest frequency, is results/{case}/mesh.msh; the coarser bands of a sweep
# are results/{case}/meshes/b{band}.msh. Every frequency is solved on its band's mesh.
MESH_SHELL = (
    "{params.python:q} -m wavescat mesh"
    " --name {wildcards.case} --case {params.case:q} --medium {params.medium:q}"
    " --mesh {output.mesh} --stats {output.stats} --gmsh-verbose > {log} 2>&1"
)


rule mesh:
    """Surface mesh of one case sized from its highest frequency and its geometry, checked,
    with statistics."""
    input:
        geometry_file,
    output:
        mesh="results/{case}/mesh.msh",
        stats="results/{case}/mesh_stats.json",
    log:
        "results/{case}/logs/mesh.log",
    conda:
        "../envs/wavescat.yaml"
    resources:
        mem_mb=mesh_resource("mem_mb"),
        runtime=mesh_resource("runtime"),
    params:
        python=JOB_PYTHON,
        case=band_case_json,
        medium=MEDIUM,
    shell:
        MESH_SHELL


rule mesh_band:
    """Coarser mesh of a sweep's lower frequency band, sized for the band's top frequency."""
    input:
        geometry_file,
    output:
        mesh="results/{case}/meshes/b{band}.msh",
        stats="results/{case}/meshes/b{band}_stats.json",
    log:
        "results/{case}/logs/mesh_b{band}.log",
    conda:
        "../envs/wavescat.yaml"
    resources:
        mem_mb=mesh_resource("mem_mb"),
        runtime=mesh_resource("runtime"),
    params:
        python=JOB_PYTHON,
        case=band_case_json,
        medium=MEDIUM,
    shell:
        MESH_SHELL
