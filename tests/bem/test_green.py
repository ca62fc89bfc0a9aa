"""The Green's function and the operator kernels of bem/kernels/green.py: the one convention
(d = x - y, x the test point, y the trial point) against finite differences of G, and the operator names."""
import numpy as np
import pytest

from wavescat.bem.assembly.hmatrix import kernels as hm_kernels
from wavescat.bem.kernels import green, gpu as kernels_gpu
from wavescat.errors import WavescatError


def _g(x, y, k):
    r = np.linalg.norm(x - y)
    return np.exp(1j * k * r) / (4 * np.pi * r)


@pytest.mark.parametrize("k", [0.0, 3.0, 3.0 + 0.7j])
def test_kernels_are_the_normal_derivatives_of_g(k):
    """K = dG/dn_y and K' = dG/dn_x (central differences), V = W = G, at d = x - y."""
    x, y = np.array([0.3, -0.2, 0.5]), np.array([-0.4, 0.1, -0.3])
    nx, ny = np.array([0.0, 0.6, 0.8]), np.array([1.0, 0.0, 0.0])
    h = 1e-5
    want = {green.Operator.single_layer: _g(x, y, k), green.Operator.hypersingular: _g(x, y, k),
            green.Operator.double_layer: (_g(x, y + h * ny, k) - _g(x, y - h * ny, k)) / (2 * h),
            green.Operator.adjoint_double_layer: (_g(x + h * nx, y, k) - _g(x - h * nx, y, k)) / (2 * h)}
    for op, value in want.items():
        re, im = green.kernel(int(op), *(x - y), *nx, *ny, complex(k).real, complex(k).imag)
        assert abs(re + 1j * im - value) <= 1e-8 * abs(value), op.name


def test_operator_names_and_codes():
    assert [op.name for op in green.Operator] == ["single_layer", "double_layer",
                                                  "adjoint_double_layer", "hypersingular"]
    assert green.Operator.named("double_layer") == 1
    with pytest.raises(WavescatError, match="operator name = 'double'"):
        green.Operator.named("double")


def test_dense_and_hmatrix_cuda_sources_share_the_header():
    assert kernels_gpu._SOURCE.startswith(green.CUDA_GREEN)
    assert hm_kernels._CUDA_SRC.startswith(green.CUDA_GREEN)
    assert "kernel_value<T>(" in hm_kernels._CUDA_SRC
