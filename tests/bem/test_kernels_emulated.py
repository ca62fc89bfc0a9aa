"""The CUDA BEM kernels of kernels_gpu.py (regular, dense, singular and scatter kernels) agree
with their Numba twins without a GPU: the GPU code path runs with CuPy replaced by the g++
emulation of tests/cuda_emulation.py, with the launch geometry and arguments of the
production code (the `emulated_gpu` fixture)."""
import numpy as np
import pytest

from wavescat.bem.assembly import operators
from wavescat.bem.discretisation import spaces
from wavescat.geometry.icosphere import icosphere


@pytest.fixture(scope="module")
def p1_sphere():
    return spaces.p1(icosphere(1))


# every operator in Helmholtz; Laplace, a damped wavenumber, P0 and single precision once
CASES = [("single_layer", 2.0, "P1", "double"), ("double_layer", 2.0, "P1", "double"),
         ("adjoint_double_layer", 2.0, "P1", "double"), ("hypersingular", 2.0, "P1", "double"),
         ("single_layer", 0.0, "P1", "double"), ("double_layer", 2.0 + 0.5j, "P0", "double"),
         ("hypersingular", 2.0 + 0.5j, "P1", "single")]


@pytest.mark.parametrize("name, k, kind, precision", CASES)
def test_dense_matrix_matches_cpu_twin(emulated_gpu, name, k, kind, precision):
    """The dense matrix through the GPU path (dense_regular, singular_local for touching pairs,
    regular_local with the near rule, scatter_local) against the CPU assembly."""
    space = spaces.function_space(icosphere(1), kind)
    # the CPU's general pair path (as test_gpu_twins.py): with test is trial it takes each
    # unordered pair once, which moves touching entries by the quadrature error
    want = operators.assemble(name, space, spaces.function_space(space.mesh, kind), k, backend="cpu")
    got = operators.assemble(name, space, space, k, backend=emulated_gpu, precision=precision)
    tol = 1e-12 if precision == "double" else 1e-5
    assert got.dtype == operators.EntryEvaluator(name, space, space, k, precision=precision).dtype
    assert np.abs(got - want).max() <= tol * np.abs(want).max()


def test_blocks_and_element_pairs_match_cpu_twin(emulated_gpu, p1_sphere):
    """Blocks of rows x cols (scatter_local with row and column maps) and element pairs of
    every kind (regular_local, singular_local) against the CPU twin."""
    k = 3.0 + 0.2j
    cpu = operators.EntryEvaluator("double_layer", p1_sphere, p1_sphere, k, backend="cpu")
    gpu = operators.EntryEvaluator("double_layer", p1_sphere, p1_sphere, k, backend=emulated_gpu)
    rng = np.random.default_rng(0)
    rows, cols = rng.choice(p1_sphere.n_dofs, 9, replace=False), rng.choice(p1_sphere.n_dofs, 13, replace=False)
    want = cpu.block(rows, cols)
    assert np.abs(gpu.block(rows, cols) - want).max() <= 1e-12 * np.abs(want).max()
    m = p1_sphere.mesh.n_triangles
    pa, pb = rng.integers(0, m, 200), rng.integers(0, m, 200)
    pa[:20] = pb[:20]  # coincident pairs too
    want = cpu.element_pairs(pa, pb)
    assert np.abs(gpu.element_pairs(pa, pb) - want).max() <= 1e-12 * np.abs(want).max()
