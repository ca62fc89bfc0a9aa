"""The CuPy kernels against their Numba twins: dense matrices, element pairs and blocks agree
to 1e-12 (double) and 1e-5 (single), relative to the largest entry."""
import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly import operators, potentials
from wavescat.bem.discretisation import spaces
from wavescat.geometry.icosphere import icosphere

pytestmark = pytest.mark.gpu

MESH = icosphere(2)
P1, P0 = spaces.p1(MESH), spaces.p0(MESH)
TOL = {"double": 1e-12, "single": 1e-5}
CASES = [(name, trial, test) for name in operators.OPERATORS
         for trial, test in [(P1, P1), (P0, P0), (P1, P0)]
         if name != "hypersingular" or trial is test is P1]


def _rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / np.abs(np.asarray(b)).max()


@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("k", [0.0, 2.0 + 0.5j])
@pytest.mark.parametrize("name,trial,test", CASES)
def test_dense_twins(name, trial, test, k, precision):
    gpu = get_backend("gpu")
    # double precision reference through the general pair path (the CPU takes each unordered
    # pair once when test is trial, which moves touching entries by the quadrature error)
    cpu = operators.assemble(name, trial, spaces.function_space(MESH, test.kind), k)
    dev = operators.assemble(name, trial, test, k, backend=gpu, precision=precision)
    real = np.float32 if precision == "single" else np.float64
    assert dev.dtype == (real if k == 0 else np.result_type(real, 1j))
    assert _rel(gpu.asnumpy(dev), cpu) < TOL[precision]


@pytest.mark.parametrize("precision", ["double", "single"])
def test_entry_evaluator_twins(precision):
    gpu = get_backend("gpu")
    rng = np.random.default_rng(3)
    for name, k in [("double_layer", 2.0), ("hypersingular", 1.0 + 0.3j), ("single_layer", 0.0)]:
        ev_c = operators.EntryEvaluator(name, P1, P1, k)
        ev_g = operators.EntryEvaluator(name, P1, P1, k, backend=gpu, precision=precision)
        pa = rng.integers(0, MESH.n_triangles, 500)
        pb = np.concatenate([pa[:50], rng.integers(0, MESH.n_triangles, 450)])  # coincident ones too
        loc = ev_g.element_pairs(gpu.xp.asarray(pa), gpu.xp.asarray(pb))
        assert isinstance(loc, gpu.xp.ndarray)
        assert _rel(gpu.asnumpy(loc), ev_c.element_pairs(pa, pb)) < TOL[precision]
        rows, cols = rng.choice(P1.n_dofs, 30, replace=False), rng.choice(P1.n_dofs, 40, replace=False)
        blk = ev_g.block(rows, cols)
        assert isinstance(blk, gpu.xp.ndarray)
        assert _rel(gpu.asnumpy(blk), ev_c.block(rows, cols)) < TOL[precision]


def test_potential_twins():
    gpu = get_backend("gpu")
    pts = np.array([[0.1, 0.2, 0.3], [2.0, -1.0, 0.5]])
    for fn in (potentials.single_layer, potentials.double_layer):
        assert _rel(gpu.asnumpy(fn(P1, pts, 2.0, backend=gpu)), fn(P1, pts, 2.0)) < 1e-12
