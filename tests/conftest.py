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


@pytest.fixture(params=["cpu", pytest.param("gpu", marks=pytest.mark.gpu)])
def backend(request):
    """Run a test once on the CPU backend and once on the GPU backend (skipped without one)."""
    return get_backend(request.param)
