"""The H-matrix pair kernel's CUDA source (hm_pairs) agrees with the Numba kernel without a GPU,
run by the g++ emulation of tests/cuda_emulation.py (hmatrix/test_gpu.py: on a device)."""
import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix.kernels import OPERATORS, PairKernel


@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("k", [0.0, 5.0, 5.0 + 0.5j])
@pytest.mark.parametrize("name", list(OPERATORS))
def test_pair_kernel_matches_cpu_twin(emulated_gpu, p1_cloud, name, k, precision):
    """hm_pairs (the H-matrix's entries) against the Numba kernel, as hmatrix/test_gpu.py."""
    rng = np.random.default_rng(0)
    ti = rng.integers(0, p1_cloud.n, 3000)
    sj = rng.integers(0, p1_cloud.n, 3000)
    want = PairKernel(name, k, p1_cloud, p1_cloud, get_backend("cpu"), "double")(ti, sj)
    got = PairKernel(name, k, p1_cloud, p1_cloud, emulated_gpu, precision)(ti, sj)
    tol = 1e-12 if precision == "double" else 2e-5
    assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want)
