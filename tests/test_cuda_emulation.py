"""The CUDA emulation the CPU tests of the GPU kernels rely on: it must not skip on CI, and it
must see a kernel that writes outside its arguments."""
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
