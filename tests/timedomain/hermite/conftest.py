"""`cuda_host`: run a generated CUDA kernel on the CPU, through the CUDA emulation of
tests/cuda_emulation.py (g++, one std::thread per CUDA thread)."""
import pytest


@pytest.fixture(scope="session")
def cuda_host(emulated_gpu):
    """run(source, kernel, grid, threads, args): launch `kernel` of `source` on the CPU.

    grid: blocks along x, y, z; args: NumPy arrays (passed as device pointers) and NumPy
    scalars, in parameter order."""
    def run(source, kernel, grid, threads, args):
        emulated_gpu.xp.RawKernel(source, kernel)(tuple(grid), (threads,), tuple(args))

    return run
