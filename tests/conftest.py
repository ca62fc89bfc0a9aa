"""Shared fixtures. GPU tests carry the `gpu` marker and skip cleanly without a GPU.
Tests that run Snakemake do so in a temporary copy of the repository (`repo`, `snakemake`),
never in the user's working tree: results/ or .snakemake/ left there by a real run must
neither change a test's outcome nor be touched by it."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

from wavescat.backend import follow_job_threads, get_backend, gpu_available


def _share_the_cores() -> None:
    """`pytest -n N` runs N workers on the machine's cores: each one's Numba pool takes its share,
    as a Snakemake job's does (backend.follow_job_threads). Two workers of two threads each on
    two cores stall on each other's parallel-loop barriers (tests/timedomain/dg/test_scattering.py
    with -n 2 on the shared 2-core machine: 195 CPU seconds so, 20 with one thread each).
    BLAS likewise, through threadpoolctl: it started one thread per core when NumPy was
    imported (above), and its idle threads spin (solve.parallel.share_cores); so under -n 2
    test_hodlr's 1e-4 inverse took 65 s, 5 s alone."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and "OMP_NUM_THREADS" not in os.environ:
        threads = max(1, (os.cpu_count() or 1) // workers)
        os.environ["OMP_NUM_THREADS"] = str(threads)
        follow_job_threads()
        threadpool_limits(limits=threads, user_api="blas")


_share_the_cores()


def pytest_configure(config):
    """Where a SLURM client is installed but no controller answers `scontrol ping`, the tests'
    Snakemake runs see no SLURM configuration (SLURM_CONF=/dev/null): Snakemake loads the SLURM
    executor plugin on every start, and the plugin asks `scontrol show config` for MinJobAge,
    which waits 9 s for the controller that is down (then gives up, as it does at once
    without a configuration). The runs that use SLURM skip without a controller anyway
    (test_cluster._slurm_ready)."""
    if shutil.which("scontrol") and subprocess.run(
            ["scontrol", "ping"], capture_output=True, timeout=60).returncode != 0:
        os.environ["SLURM_CONF"] = os.devnull


def pytest_collection_modifyitems(config, items):
    if gpu_available():
        return
    skip = pytest.mark.skip(reason="no CUDA GPU visible to CuPy")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def emulated_gpu(tmp_path_factory):
    """A "gpu" backend whose CuPy is the CPU emulation of tests/cuda_emulation.py: the GPU code
    paths run in CI, with their own launch geometry and arguments."""
    from wavescat.backend import Backend

    from .cuda_emulation import EmulatedCuda, compiler

    compiler()
    return Backend("gpu", EmulatedCuda(str(tmp_path_factory.mktemp("cuda_emulation"))), "CUDA emulated on the CPU")


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    """Run a test once on the CPU backend and once on the GPU backend (skipped without one)."""
    return get_backend(request.param)


ROOT = Path(__file__).resolve().parents[1]
# What a fresh clone brings to a run (the package itself comes from the test's interpreter).
WORKFLOW_PARTS = ("Snakefile", "workflow", "profiles", "config", "meshes")
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def copy_repository(dest: Path) -> Path:
    """The workflow files of this checkout copied to `dest`, without results or metadata."""
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", ".snakemake", "results")
    for part in WORKFLOW_PARTS:
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, dest / part, ignore=ignore)
        else:
            shutil.copy2(src, dest / part)
    return dest


@pytest.fixture
def repo(tmp_path) -> Path:
    """`tmp_path`, holding a copy of the repository's workflow to run Snakemake in."""
    return copy_repository(tmp_path)


@pytest.fixture
def snakemake(repo):
    """`snakemake(*args)` runs `snakemake ARGS` in the copy as a user types it there (the
    default profile applies); returns the CompletedProcess."""

    def run(*args, timeout=600) -> subprocess.CompletedProcess:
        return subprocess.run(SNAKEMAKE + [str(a) for a in args], cwd=repo, capture_output=True,
                              text=True, timeout=timeout)

    return run
