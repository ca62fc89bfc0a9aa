# The container of every wavescat rule (`snakemake --sdm apptainer`): Debian's Python with
# wavescat and its pinned dependencies (pyproject.toml) in /opt/wavescat, first on PATH, so
# the rules' `python -m wavescat` finds them; the X and GL libraries are those gmsh's
# library links against, even without a display.
#   docker build -t wavescat:0.1.0 .                       (or podman / buildah)
#   apptainer build wavescat.sif docker-daemon://wavescat:0.1.0
# The Snakefile's `container:` names wavescat.sif in the directory Snakemake runs in
# (README.md, "Conda and containers"). --build-arg EXTRAS=gpu adds CuPy for CUDA 12 nodes,
# EXTRAS=mpi mpi4py and MPICH for solver.ranks > 1 (EXTRAS=gpu,mpi both).
ARG BASE=debian:bookworm-slim
FROM ${BASE}
ARG EXTRAS=""
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
        libgl1 libglu1-mesa libxrender1 libxcursor1 libxfixes3 libxext6 libxft2 libxinerama1 \
        libx11-6 libgomp1 \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/wavescat
ENV PATH=/opt/wavescat/bin:$PATH \
    MPLBACKEND=Agg \
    PYTHONDONTWRITEBYTECODE=1
COPY pyproject.toml README.md /src/wavescat/
COPY src /src/wavescat/src
RUN pip install --no-cache-dir "/src/wavescat${EXTRAS:+[$EXTRAS]}" \
    && python -m wavescat --version
