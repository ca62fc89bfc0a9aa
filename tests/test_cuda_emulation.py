"""The CUDA emulation the CPU tests of the GPU kernels rely on: it must not skip on CI, it
must see a kernel that writes outside its arguments, its barriers must hold the threads of a
block, and threads that wait at barriers the others never reach must fail the launch."""
import shutil

import numpy as np
import pytest

from .cuda_emulation import EmulatedCuda, compiler

OVERRUN = r"""
extern "C" __global__ void fill(const int n, double* out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) out[i] = 1.0;  /* one past the end */
}
"""


def test_missing_compiler_skips_only_outside_ci(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        compiler()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="no C.. compiler"):
        compiler()


def test_write_past_an_array_is_caught(tmp_path):
    compiler()
    cuda = EmulatedCuda(str(tmp_path))
    fill = cuda.RawKernel(OVERRUN, "fill")
    out = np.zeros(40)
    with pytest.raises(AssertionError, match="write outside array argument 1"):
        fill((2,), (32,), (np.int32(40), out))
    fill((2,), (32,), (np.int32(39), out[:40]))  # within bounds: no complaint
    assert (out[:40] == 1).all()


NEIGHBOUR = r"""
extern "C" __global__ void neighbour(double* out, const int sync) {
    __shared__ double value[64];
    const int t = threadIdx.x;
    value[t] = 100.0 * blockIdx.x + t;
    if (sync) __syncthreads();
    out[blockIdx.x * blockDim.x + t] = value[(t + 1) % blockDim.x];
}
"""
MISMATCH = r"""
extern "C" __global__ void mismatch(double* out) {
    double v = threadIdx.x;
    if (threadIdx.x == 0) v = __shfl_sync(0xffffffffu, v, 1);  /* the warp's other lanes never come */
    else __syncthreads();
    out[threadIdx.x] = v;
}
"""


def test_a_barrier_holds_the_block_and_its_absence_shows(tmp_path):
    """Each thread reads its neighbour's shared value: after __syncthreads every one of 2
    blocks of 40 threads (a warp and a part) reads what the neighbour wrote; without it the
    threads that run before their neighbour read what the previous block left there."""
    compiler()
    kernel = EmulatedCuda(str(tmp_path)).RawKernel(NEIGHBOUR, "neighbour")
    t = np.arange(40)
    want = np.concatenate([100.0 * b + (t + 1) % 40 for b in range(2)])
    out = np.zeros(80)
    kernel((2,), (40,), (out, np.int32(1)))
    assert np.array_equal(out, want)
    kernel((2,), (40,), (out, np.int32(0)))
    assert not np.array_equal(out, want)


def test_threads_that_wait_at_different_barriers_fail_the_launch(tmp_path):
    compiler()
    kernel = EmulatedCuda(str(tmp_path)).RawKernel(MISMATCH, "mismatch")
    with pytest.raises(AssertionError, match="barriers that the others never reach"):
        kernel((1,), (32,), (np.zeros(32),))
