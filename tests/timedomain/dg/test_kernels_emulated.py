"""The generated CUDA volume, surface and LSERK-update kernels, run on the CPU by the CUDA
emulation of tests/cuda_emulation.py (one std::thread per CUDA thread, std::barrier for
__syncthreads, `static` for __shared__, blocks one after another), agree with the Numba twin
without a GPU. GpuKernels itself compiles and launches them: the sources, launch geometry and
arguments are those of the device (where test_kernels_gpu.py repeats the comparison).

This checks the index arithmetic of every volume-kernel variant (which thread computes which
element and node, padding nodes, the operator layout, partly filled blocks), the grid each
kernel gets, and that no kernel writes outside its arguments or its shared memory. It cannot
see device-only faults: races the host schedule hides, shared-memory limits, NVRTC dialect
(test_kernels_nvcc.py compiles the sources for sm_90).
"""
import itertools
from unittest import mock

import numpy as np
import pytest

from wavescat.timedomain.dg import layout
from wavescat.timedomain.dg.gpu_kernels import GpuKernels
from wavescat.timedomain.dg.tuning import default_volume_tuning
from wavescat.timedomain.dg.cpu_kernels import CpuKernels
from wavescat.timedomain.dg.reference import reference_tetrahedron

from ...cuda_emulation import EmulatedCuda, compiler
from .conftest import VOLUME_VARIANTS, make_solver

PRECISIONS = {"single": np.float32, "double": np.float64}


def _index32(order, tuning, precision):
    """32-bit indices for the defaults (as GpuKernels on any mesh below 2^32 / 4 Np nodes); the
    variants alternate between 32 and 64 bits, each getting both over the two precisions."""
    return tuning is None or (VOLUME_VARIANTS.index((order, tuning)) + list(PRECISIONS).index(precision)) % 2 == 0


def gpu_kernels(cuda, dg, order, tuning, precision):
    """GpuKernels of the solver's operators on the emulated device, for `tuning` (None: the
    default), with the index width of `_index32`."""
    index32 = _index32(order, tuning, precision)
    with mock.patch.object(layout, "fits_index32", lambda *_: index32):
        return GpuKernels(dg.ops, cuda, **(tuning._asdict() if tuning else {}))


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    """The emulated device with every kernel of the tests below compiled (in one library)."""
    compiler()
    cuda = EmulatedCuda(str(tmp_path_factory.mktemp("cuda_emulation")))
    cases = [(order, None) for order in range(1, 7)] + VOLUME_VARIANTS
    for (order, tuning), precision in itertools.product(cases, PRECISIONS):
        gpu_kernels(cuda, make_solver(order, "cpu", precision), order, tuning, precision)
    for order, precision in itertools.product(range(1, 7), PRECISIONS):  # one medium: MEDIA 0
        gpu_kernels(cuda, make_solver(order, "cpu", precision, media=False), order, None, precision)
    cuda.build()
    return cuda


def emulated_rhs(cuda, dg, order, tuning, precision, t):
    """rhs of the solver's state by the emulated volume and surface kernels."""
    kernels = gpu_kernels(cuda, dg, order, tuning, precision)
    rhs = np.zeros_like(dg.q)
    kernels.volume(dg.q, rhs)
    kernels.surface(dg.q, rhs, np.asarray(dg.boundary_data(t), dtype=dg.dtype))
    return rhs


def check(emulated, dg_solver, order, tuning, precision, media=True):
    dg = dg_solver(order, "cpu", precision, media)
    want = dg.rhs(dg.q, 0.3).copy()
    got = emulated_rhs(emulated, dg, order, tuning, precision, 0.3)
    tol = 1e-11 if precision == "double" else 1e-5  # 3xTF32 included: one TF32 product fails
    np.testing.assert_allclose(got, want, atol=tol * np.abs(want).max())


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("order", range(1, 7))
@pytest.mark.parametrize("media", [True, False])
def test_default_kernels_match_cpu_twin(emulated, dg_solver, order, precision, media):
    """Every boundary kind, with and without a second medium (the surface kernel's MEDIA)."""
    check(emulated, dg_solver, order, None, precision, media)


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_volume_variants_match_cpu_twin(emulated, dg_solver, volume_variant, precision):
    order, tuning = volume_variant
    check(emulated, dg_solver, order, tuning, precision)


@pytest.mark.parametrize("order", range(1, 7))
def test_node_map_covers_each_node_once(order, volume_variants):
    """Thread slot -> node map of the default and every variant: each node exactly once."""
    npn = reference_tetrahedron(order).n_nodes
    tunings = [default_volume_tuning(npn, np.float32)] + [t for o, t in volume_variants if o == order]
    for tuning in (t for t in tunings if not t.tensor):
        lay = layout.volume_layout(npn, tuning, 4)
        nodes = layout.volume_node_map(npn, lay, tuning.nodes_per_thread)
        assert np.array_equal(np.sort(nodes[nodes >= 0]), np.arange(npn)), tuning
        assert (nodes[lay.nt:] < 0).all() and lay.threads == tuning.kb_volume * lay.nt


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_shared_pool_holds_exactly_the_staged_operators(precision, volume_variants):
    """With d_shared the pool's operator part is the size of the table the kernel copies in
    (too small overruns the pool, too large costs occupancy)."""
    itemsize = np.dtype(PRECISIONS[precision]).itemsize
    for order, tuning in volume_variants:
        if not tuning.d_shared:
            continue
        ref = reference_tetrahedron(order)
        lay = layout.volume_layout(ref.n_nodes, tuning, itemsize)
        D = layout.volume_operators(*(a.astype(PRECISIONS[precision]) for a in (ref.Dr, ref.Ds, ref.Dt)), tuning, lay)
        assert lay.shared_bytes - lay.operator_offset == D.nbytes, tuning


@pytest.mark.parametrize("precision", list(PRECISIONS))
@pytest.mark.parametrize("order", [1, 4])
def test_lserk_update_matches_cpu_twin(emulated, dg_solver, order, precision):
    """The low-storage Runge-Kutta stage res = a res + dt rhs, q += b res, launched by GpuKernels
    (its grid and block), against the CPU update."""
    dg = dg_solver(order, "cpu", precision)
    kernels = gpu_kernels(emulated, dg, order, None, precision)
    rng = np.random.default_rng(order)
    q, res, rhs = (rng.standard_normal(dg.q.shape).astype(dg.dtype) for _ in range(3))
    a, b, dt = -0.41789047449985195, 1.4965451450201855, 0.0125  # a stage of Carpenter-Kennedy's scheme
    want_q, want_res = q.copy(), res.copy()
    CpuKernels.update(want_q, want_res, rhs, a, b, dt)
    kernels.update(q, res, rhs, a, b, dt)
    assert emulated.launches[-1][0] == "lserk_update"
    tol = 1e-14 if precision == "double" else 1e-6
    np.testing.assert_allclose(res, want_res, rtol=0, atol=tol * np.abs(want_res).max())
    np.testing.assert_allclose(q, want_q, rtol=0, atol=tol * np.abs(want_q).max())
