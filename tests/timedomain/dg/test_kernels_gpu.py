"""The CuPy kernels agree with their Numba twin (run on the device: pytest -m gpu)."""
import numpy as np
import pytest


def rhs_pair(dg_solver, order, precision, media=True, **tuning):
    cpu = dg_solver(order, "cpu", precision, media)
    gpu = dg_solver(order, "gpu", precision, media, **tuning)
    a = cpu.backend.asnumpy(cpu.rhs(cpu.q, 0.3)).copy()
    return a, gpu.backend.asnumpy(gpu.rhs(gpu.q, 0.3))


def tolerance(precision):
    return 1e-11 if precision == "double" else 2e-4


@pytest.mark.gpu
@pytest.mark.parametrize("order", range(1, 7))
@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("media", [True, False])
def test_rhs_cpu_and_gpu_agree(dg_solver, order, precision, media):
    """Every boundary kind, with and without a second medium (the surface kernel's MEDIA)."""
    a, b = rhs_pair(dg_solver, order, precision, media)
    np.testing.assert_allclose(b, a, atol=tolerance(precision) * np.abs(a).max())


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_volume_variants_agree(dg_solver, volume_variant, precision):
    """Every variant of conftest.VOLUME_VARIANTS (each volume-kernel option)."""
    order, tuning = volume_variant
    a, b = rhs_pair(dg_solver, order, precision, **tuning._asdict())
    np.testing.assert_allclose(b, a, atol=tolerance(precision) * np.abs(a).max())


@pytest.mark.gpu
@pytest.mark.parametrize("order, kb_volume, d_shared, ept",
                         [(3, 1, False, 1), (3, 3, True, 2), (3, 5, False, 4), (5, 2, False, 3), (6, 1, False, 4)])
def test_kernel_tunings_agree(dg_solver, order, kb_volume, d_shared, ept):
    """Five time steps (volume, surface and update kernels) with several tunings, including
    partly filled last blocks (K = 72 elements)."""
    cpu = dg_solver(order, "cpu", "double")
    gpu = dg_solver(order, "gpu", "double", kb_volume=kb_volume, kb_surface=kb_volume, d_shared=d_shared,
                    elements_per_thread=ept)
    for dg in (cpu, gpu):
        dt = dg.stable_dt()
        for _ in range(5):
            dg.step(dt)
    a, b = cpu.state(), gpu.state()
    np.testing.assert_allclose(b, a, atol=1e-11 * np.abs(a).max())


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["double", "single"])
def test_persistent_grid_loops_over_batches(dg_solver, precision):
    """A persistent grid smaller than the batch count (as if the device had one SM): every
    block computes and prefetches several batches, the last one partly filled."""
    cpu = dg_solver(4, "cpu", precision)
    gpu = dg_solver(4, "gpu", precision, kb_volume=3, elements_per_thread=2, nodes_per_thread=2, persistent=2)
    gpu.kernels.sms = 1
    assert gpu.kernels.layout.elements == 6 and -(-72 // 6) > 2  # 12 batches over 2 blocks
    a = cpu.backend.asnumpy(cpu.rhs(cpu.q, 0.3)).copy()
    b = gpu.backend.asnumpy(gpu.rhs(gpu.q, 0.3))
    np.testing.assert_allclose(b, a, atol=tolerance(precision) * np.abs(a).max())
