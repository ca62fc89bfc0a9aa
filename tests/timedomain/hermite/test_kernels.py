"""The generated straight-line GPU code and the kernels' 1D operator, checked on the CPU."""
import numpy as np
import pytest

from wavescat.timedomain.hermite import acoustics, advection
from wavescat.timedomain.hermite import cpu
from wavescat.timedomain.hermite.gpu import kernel_source
from wavescat.timedomain.hermite.gpu_common import interpolation_operator
from wavescat.timedomain.hermite import gpu_warp
from wavescat.timedomain.hermite.gpu_cell import emulate
from wavescat.timedomain.hermite.interpolation import hermite_matrix_1d


@pytest.mark.parametrize("m, system", [(1, advection((0.7, -0.4, 0.55))), (2, advection((0.3, 0.8, -0.5))),
                                       (1, acoustics(1.5, 1.2))])
def test_generated_register_code_matches_numba_half_step(m, system):
    """Run the exact statements of the register kernel (gpu_cell.py) in NumPy."""
    f, m1, q = system.n_fields, m + 1, 3 * (2 * m + 1)
    src = np.random.default_rng(m).standard_normal((f, m1, m1, m1, 2, 2, 2))
    dst = np.empty_like(src)
    cpl = system.couplings()
    lam = np.array([a * 0.45 / (0.5 + 0.1 * d) for d, _, _, a in cpl])
    cd, cf, cg = (np.array([c[i] for c in cpl]) for i in range(3))
    cpu.half_step(src, dst, hermite_matrix_1d(m), cd, cf, cg, lam, q, 0)  # cell (0,0,0) spans all 8 nodes
    got = emulate(src[..., None], lam, m, q, cpl)[..., 0]
    np.testing.assert_allclose(got, dst[..., 0, 0, 0], atol=1e-12 * np.abs(dst).max())


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_even_odd_operator_reproduces_the_full_operator(m):
    hleft, finv = interpolation_operator(m)
    m1 = m + 1
    full = hermite_matrix_1d(m) / finv[:, None]  # derivative form diag(j!) H
    sign = np.array([[(1 if j % 2 == 0 else -1) * (-1) ** k for k in range(m1)] for j in range(2 * m + 2)])
    np.testing.assert_allclose(np.hstack([hleft, sign * hleft]), full, atol=1e-12 * np.abs(full).max())


def test_shared_kernel_source_has_no_double_scaling():
    # the 1/s of a Taylor stage lives in the weights w = lam / s only
    src = kernel_source(2, 15, tuple(advection().couplings()), 1, np.float32)
    assert "w[c] = lam[c] * inv" in src and "inv * (" not in src


@pytest.mark.parametrize("m, system", [(1, advection((0.7, -0.4, 0.55))), (2, advection((0.3, 0.8, -0.5))),
                                       (3, advection((0.3, 0.5, -0.6))), (1, acoustics(1.5, 1.2))])
def test_generated_warp_code_matches_numba_half_step(m, system):
    """Run the exact statements of the warp kernel (gpu_warp.py), lanes as an array axis."""
    f, m1, q = system.n_fields, m + 1, 3 * (2 * m + 1)
    src = np.random.default_rng(m).standard_normal((f, m1, m1, m1, 2, 2, 2))
    dst = np.empty_like(src)
    cpl = system.couplings()
    lam = np.array([a * 0.45 / (0.5 + 0.1 * d) for d, _, _, a in cpl])
    cd, cf, cg = (np.array([c[i] for c in cpl]) for i in range(3))
    cpu.half_step(src, dst, hermite_matrix_1d(m), cd, cf, cg, lam, q, 0)
    got = gpu_warp.emulate(src, lam, m, q, cpl)
    np.testing.assert_allclose(got, dst[..., 0, 0, 0], atol=1e-12 * np.abs(dst).max())
