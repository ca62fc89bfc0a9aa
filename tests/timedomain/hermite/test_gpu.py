"""The CUDA kernels (both forms, both precisions) against the Numba CPU path."""
import numpy as np
import pytest

from wavescat.timedomain.hermite import HermiteSolver, acoustics, advection
from wavescat.timedomain.hermite.convergence import period_error
from wavescat.timedomain.hermite.gpu_cell import MAX_VALUES
from wavescat.timedomain.hermite.gpu_warp import MAX_VALUES as WARP_VALUES

pytestmark = pytest.mark.gpu

SYSTEMS = {"advection": lambda: advection((0.7, -0.4, 0.55)), "acoustics": lambda: acoustics(1.5, 1.2)}


@pytest.mark.parametrize("precision, tol", [("double", 1e-11), ("single", 1e-4)])
@pytest.mark.parametrize("kernel", ["monolithic-shared", "monolithic-register", "monolithic-warp", "two-kernel"])
@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("equation", ["advection", "acoustics"])
def test_gpu_step_matches_cpu(equation, m, kernel, precision, tol):
    system = SYSTEMS[equation]()
    if kernel == "monolithic-register" and system.n_fields * (2 * m + 2) ** 3 > MAX_VALUES:
        pytest.skip("cell does not fit in registers")
    if kernel == "monolithic-warp" and system.n_fields * (2 * m + 2) ** 2 > WARP_VALUES:
        pytest.skip("plane does not fit in a lane's registers")
    cells, lengths = (5, 6, 7), (0.5, 0.6, 0.7)  # odd sizes: partial blocks and the seam
    cpu = HermiteSolver(system, cells, lengths, m, cfl=0.9, backend="cpu")
    gpu = HermiteSolver(system, cells, lengths, m, cfl=0.9, backend="gpu", precision=precision,
                        kernel=kernel)
    data = np.random.default_rng(m).standard_normal(cpu.state.shape)
    cpu.set_state(data)
    gpu.set_state(data)
    cpu.step(2)
    gpu.step(2)
    ref = cpu.get_state()
    assert np.abs(gpu.get_state() - ref).max() <= tol * np.abs(ref).max()


def test_gpu_convergence_run_matches_cpu():
    _, e_cpu = period_error("acoustics", 2, 6, backend="cpu")
    _, e_gpu = period_error("acoustics", 2, 6, backend="gpu")
    assert e_gpu == pytest.approx(e_cpu, rel=1e-6)


def test_default_monolithic_kernel_runs():
    # "monolithic" picks the register form for advection m = 1, 2 and the warp form for m = 3
    for m in (1, 2, 3):
        gpu = HermiteSolver(advection(), 6, 1.0, m, backend="gpu")
        gpu.state[...] = 0.0
        gpu.state[0, 0, 0, 0] = 1.0  # u = 1: value 1, every derivative 0
        before = gpu.get_state()
        gpu.step()
        np.testing.assert_allclose(gpu.get_state(), before, atol=1e-12)


def test_default_monolithic_acoustics_uses_shared_form_and_matches_cpu():
    system = acoustics(1.5, 1.2)
    cpu = HermiteSolver(system, (5, 4, 6), 1.0, 2, backend="cpu")
    gpu = HermiteSolver(system, (5, 4, 6), 1.0, 2, backend="gpu")
    data = np.random.default_rng(7).standard_normal(cpu.state.shape)
    cpu.set_state(data)
    gpu.set_state(data)
    cpu.step()
    gpu.step()
    np.testing.assert_allclose(gpu.get_state(), cpu.get_state(), atol=1e-11 * np.abs(data).max() * 10)


def test_gpu_rigid_walls_match_cpu():
    system = acoustics(1.5, 1.2)
    args = dict(cells=(5, 4, 6), lengths=1.0, m=1)
    cpu = HermiteSolver(system, args["cells"], args["lengths"], args["m"], boundary=("wall", "periodic", "wall"))
    gpu = HermiteSolver(system, args["cells"], args["lengths"], args["m"], boundary=("wall", "periodic", "wall"),
                        backend="gpu")
    data = np.random.default_rng(3).standard_normal(cpu.state.shape)
    cpu.set_state(data)
    gpu.set_state(data)
    cpu.step(2)
    gpu.step(2)
    np.testing.assert_allclose(gpu.get_state(), cpu.get_state(), atol=1e-10 * np.abs(cpu.get_state()).max())
