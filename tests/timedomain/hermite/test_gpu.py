"""The CUDA kernels (both forms, both precisions) against the Numba CPU path."""
import numpy as np
import pytest

from wavescat.timedomain.hermite import HermiteSolver, acoustics, advection
from wavescat.timedomain.hermite.convergence import period_error
from wavescat.timedomain.hermite.gpu_cell import MAX_VALUES
from wavescat.timedomain.hermite.gpu_propagator import Tile, fit_tile
from wavescat.timedomain.hermite.gpu_warp import MAX_VALUES as WARP_VALUES

SYSTEMS = {"advection": lambda: advection((0.7, -0.4, 0.55)), "acoustics": lambda: acoustics(1.5, 1.2)}


def stepped_pair(cpu, gpu, seed, steps=2):
    """(GPU state, CPU state) after `steps` steps of both solvers from one random state."""
    data = np.random.default_rng(seed).standard_normal(cpu.state.shape)
    cpu.set_state(data)
    gpu.set_state(data)
    cpu.step(steps)
    gpu.step(steps)
    return gpu.get_state(), cpu.get_state()


FORMS = ["monolithic-shared", "monolithic-register", "monolithic-warp", "two-kernel"]
STEP_CASES = [(equation, m, kernel, precision, tol) for equation in SYSTEMS for m in (1, 2, 3) for kernel in FORMS
              for precision, tol in (("double", 1e-11), ("single", 1e-4))]
# the CPU emulation (one thread per CUDA thread, slow): every form at m = 1 (both systems,
# double; single once) and the shared and two-kernel forms at m = 2
EMULATED = [c for c in STEP_CASES if (c[1] == 1 and (c[3] == "double" or c[2] == "monolithic-shared"))
            or (c[1] == 2 and c[2] in ("monolithic-shared", "two-kernel") and c[3] == "double")]


@pytest.fixture
def hermite_device(request, monkeypatch):
    """"gpu": the device; "emulated": HermiteSolver's backend "gpu" is the CUDA emulation."""
    if request.param == "emulated":
        from wavescat.backend import get_backend
        from wavescat.timedomain.hermite import solver

        be = request.getfixturevalue("emulated_gpu")
        monkeypatch.setattr(solver, "get_backend", lambda name: be if name == "gpu" else get_backend(name))
    return request.param


@pytest.mark.parametrize("hermite_device, equation, m, kernel, precision, tol",
                         [pytest.param("gpu", *c, marks=pytest.mark.gpu) for c in STEP_CASES]
                         + [("emulated",) + c for c in EMULATED], indirect=["hermite_device"])
def test_gpu_step_matches_cpu(hermite_device, equation, m, kernel, precision, tol):
    system = SYSTEMS[equation]()
    if kernel == "monolithic-register" and system.n_fields * (2 * m + 2) ** 3 > MAX_VALUES:
        pytest.skip("cell does not fit in registers")
    if kernel == "monolithic-warp" and system.n_fields * (2 * m + 2) ** 2 > WARP_VALUES:
        pytest.skip("plane does not fit in a lane's registers")
    cells, lengths = (5, 6, 7), (0.5, 0.6, 0.7)  # odd sizes: partial blocks and the seam
    cpu = HermiteSolver(system, cells, lengths, m, cfl=0.9, backend="cpu")
    gpu = HermiteSolver(system, cells, lengths, m, cfl=0.9, backend="gpu", precision=precision,
                        kernel=kernel)
    got, ref = stepped_pair(cpu, gpu, seed=m)
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()


@pytest.mark.parametrize("hermite_device", [pytest.param("gpu", marks=pytest.mark.gpu), "emulated"],
                         indirect=True)
@pytest.mark.parametrize("kernel", ["monolithic-shared", "two-kernel"])
def test_cells_per_block_reaches_the_shared_forms(hermite_device, kernel):
    """The shared forms' block size is the solver's argument (bench_hermite.py
    --cells-per-block), capped by what fits; the half step is the same for any of them."""
    system = acoustics(1.5, 1.2)
    cells, lengths = (5, 6, 7), (0.5, 0.6, 0.7)
    cpu = HermiteSolver(system, cells, lengths, 1, cfl=0.9, backend="cpu")
    gpu = HermiteSolver(system, cells, lengths, 1, cfl=0.9, backend="gpu", kernel=kernel, cells_per_block=3)
    assert gpu._gpu.cells == 3 and gpu._gpu.threads == 3 * 4 ** 2
    # 4 fields x 4^3 coefficients x 8 bytes per cell: 24 cells fill the 48 KiB of shared memory
    big = HermiteSolver(system, cells, lengths, 1, backend="gpu", kernel=kernel, cells_per_block=999)
    assert big._gpu.cells == 24
    got, ref = stepped_pair(cpu, gpu, seed=5)
    assert np.abs(got - ref).max() <= 1e-11 * np.abs(ref).max()


@pytest.mark.gpu
def test_gpu_convergence_run_matches_cpu():
    _, e_cpu = period_error("acoustics", 2, 6, backend="cpu")
    _, e_gpu = period_error("acoustics", 2, 6, backend="gpu")
    assert e_gpu == pytest.approx(e_cpu, rel=1e-6)


@pytest.mark.gpu
def test_default_monolithic_kernel_runs():
    # "monolithic" picks the register form for advection m = 1, 2 and the warp form for m = 3
    for m in (1, 2, 3):
        gpu = HermiteSolver(advection(), 6, 1.0, m, backend="gpu", kernel="monolithic")
        gpu.state[...] = 0.0
        gpu.state[0, 0, 0, 0] = 1.0  # u = 1: value 1, every derivative 0
        before = gpu.get_state()
        gpu.step()
        np.testing.assert_allclose(gpu.get_state(), before, atol=1e-12)


@pytest.mark.gpu
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


@pytest.mark.gpu
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


@pytest.mark.gpu
@pytest.mark.parametrize("precision, tol", [("double", 1e-11), ("single", 1e-4)])
@pytest.mark.parametrize("tile", ["", "8x4x2", "16x2x3", "32x3x1"])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_propagator_kernel_matches_cpu_reference(m, tile, precision, tol):
    """gpu_propagator.py against propagator.py: default and small tiles (partial tiles, several
    blocks along every axis, marches of 1-3 planes, shuffle width 16 and 8)."""
    system = advection((0.7, -0.4, 0.55))
    cells, lengths = (5, 6, 7), (0.5, 0.6, 0.7)
    cpu = HermiteSolver(system, cells, lengths, m, cfl=0.9, backend="cpu", kernel="propagator")
    gpu = HermiteSolver(system, cells, lengths, m, cfl=0.9, backend="gpu", precision=precision,
                        kernel="propagator", tile=Tile.parse(tile) if tile else None)
    assert gpu._gpu.tile == fit_tile(m, np.dtype(gpu.dtype).itemsize, Tile.parse(tile) if tile else None)
    got, ref = stepped_pair(cpu, gpu, seed=m)
    assert np.abs(got - ref).max() <= tol * np.abs(ref).max()


@pytest.mark.gpu
@pytest.mark.parametrize("precision, tol", [("double", 1e-11), ("single", 1e-4)])
def test_propagator_on_a_larger_grid_matches_cpu_recursion(precision, tol):
    # default tile and march length over many blocks; the reference is the Numba recursion
    system = advection((1.0, 0.8, -0.6))
    cells = (33, 40, 70)
    cpu = HermiteSolver(system, cells, 1.0, 2, backend="cpu", kernel="monolithic")
    gpu = HermiteSolver(system, cells, 1.0, 2, backend="gpu", precision=precision)
    assert gpu.kernel == "propagator"
    data = np.random.default_rng(4).standard_normal(cpu.state.shape)
    cpu.set_state(data)
    gpu.set_state(data)
    cpu.step()
    gpu.step()
    ref = cpu.get_state()
    assert np.abs(gpu.get_state() - ref).max() <= tol * np.abs(ref).max()


@pytest.mark.gpu
def test_auto_kernel_is_the_propagator_for_advection_only():
    for m in (1, 2, 3):
        gpu = HermiteSolver(advection(), 6, 1.0, m, backend="gpu", precision="single")
        assert gpu.kernel == "propagator"
        gpu.state[...] = 0.0
        gpu.state[0, 0, 0, 0] = 1.0  # u = 1 stays 1
        gpu.step()
        np.testing.assert_allclose(gpu.get_state()[0, 0, 0, 0], 1.0, rtol=1e-6)
    assert HermiteSolver(acoustics(), 6, 1.0, 1, backend="gpu").kernel == "monolithic"


@pytest.mark.parametrize("hermite_device", [pytest.param("gpu", marks=pytest.mark.gpu), "emulated"],
                         indirect=True)
@pytest.mark.parametrize("kernel", ["two-kernel", "monolithic-shared"])
def test_gpu_wall_half_step_on_a_block_matches_cpu(hermite_device, kernel):
    """The box's surface passes: a block of nodes of the wall half step on the device, between
    whole ones (the two-kernel form's coefficient buffer sized for the larger), is the CPU's."""
    system = acoustics(1.5, 1.2)
    cells, lengths = (5, 4, 3), (1.0, 0.8, 0.6)
    cpu = HermiteSolver(system, cells, lengths, 1, boundary="wall")
    gpu = HermiteSolver(system, cells, lengths, 1, boundary="wall", backend="gpu", kernel=kernel)
    dual = np.random.default_rng(5).standard_normal(cpu.state.shape)
    whole = cpu.wall_dual_to_primary(dual.copy())
    block = (slice(2, 6), slice(0, 3), slice(1, 4))
    xp, tol = gpu.backend.xp, 1e-12 * np.abs(whole).max()
    for cut in (None, block, None):
        got = gpu.backend.asnumpy(gpu.wall_dual_to_primary(xp.asarray(dual), cut))
        want = whole if cut is None else whole[(slice(None),) * 4 + cut]
        np.testing.assert_allclose(got, want, atol=tol)
