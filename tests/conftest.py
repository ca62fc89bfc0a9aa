"""Shared fixtures. GPU tests carry the `gpu` marker and skip cleanly without a GPU."""
import pytest

from wavescat.backend import get_backend, gpu_available


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
