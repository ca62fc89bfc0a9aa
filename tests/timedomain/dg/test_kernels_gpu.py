"""The CuPy kernels agree with their Numba twin (run on the device: pytest -m gpu)."""
import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.timedomain.dg import (BC_ABSORBING, BC_RIGID, BC_SCATTERER, AcousticsDG,
                                    box_tet_mesh, build_space)


def mixed_space(order):
    """All three boundary kinds on one mesh: scatterer at x=0, absorbing at x=1, rigid else."""
    def rule(centroids, normals):
        return np.where(centroids[:, 0] < 1e-9, BC_SCATTERER,
                        np.where(centroids[:, 0] > 1 - 1e-9, BC_ABSORBING, BC_RIGID))
    return build_space(box_tet_mesh((3, 2, 2)), order, rule)


def solvers(order, precision, **tuning):
    space = mixed_space(order)
    rng = np.random.default_rng(order)
    q0 = rng.standard_normal((4, space.n_elements, space.ref.n_nodes))
    sigma = rng.uniform(0, 2, (space.n_elements, space.ref.n_nodes))
    bvn = rng.standard_normal(len(space.boundary_codes))
    out = []
    for name in ("cpu", "gpu"):
        be = get_backend(name)
        dg = AcousticsDG(space, be, precision, rho=1.3, c=0.7, sigma=sigma,
                         boundary_velocity=lambda t, be=be: be.xp.asarray(bvn * np.cos(t)),
                         **(tuning if name == "gpu" else {}))
        dg.set_state(q0)
        out.append(dg)
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("order", range(1, 7))
@pytest.mark.parametrize("precision", ["double", "single"])
def test_rhs_cpu_and_gpu_agree(order, precision):
    cpu, gpu = solvers(order, precision)
    a = cpu.backend.asnumpy(cpu.rhs(cpu.q, 0.3)).copy()
    b = gpu.backend.asnumpy(gpu.rhs(gpu.q, 0.3))
    tol = 1e-11 if precision == "double" else 2e-4
    np.testing.assert_allclose(b, a, atol=tol * np.abs(a).max())


@pytest.mark.gpu
@pytest.mark.parametrize("order, kb_volume, d_shared, ept",
                         [(3, 1, False, 1), (3, 3, True, 2), (3, 5, False, 4), (5, 2, False, 3), (6, 1, False, 4)])
def test_kernel_tunings_agree(order, kb_volume, d_shared, ept):
    """Elements per block, operators in shared memory, register blocking over elements (EPT),
    including partly filled last blocks (K = 72 elements)."""
    cpu, gpu = solvers(order, "double", kb_volume=kb_volume, kb_surface=kb_volume, d_shared=d_shared,
                       elements_per_thread=ept)
    for dg in (cpu, gpu):
        dt = dg.stable_dt()
        for _ in range(5):
            dg.step(dt)
    a, b = cpu.state(), gpu.state()
    np.testing.assert_allclose(b, a, atol=1e-11 * np.abs(a).max())
