"""The propagator form (scalar advection, full q): the recursion's operator, on the CPU.

The CUDA kernel itself runs here too, compiled for the host by the `cuda_host` fixture,
and compiles with nvcc where it is installed.
"""
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from wavescat.errors import InputError
from wavescat.timedomain.hermite import HermiteSolver, acoustics, advection, cpu, propagator
from wavescat.timedomain.hermite.gpu_propagator import Tile, fit_tile, kernel_source, model
from wavescat.timedomain.hermite.interpolation import hermite_matrix_1d

VELOCITY = (0.7, -0.4, 0.55)
CELLS = (5, 6, 7)  # odd sizes: partial tiles, and the periodic seam inside a tile
H, TAU = np.array([0.11, 0.1, 0.09]), 0.06


def _case(m, seed=0):
    system = advection(VELOCITY)
    lam = np.array([a * TAU / H[d] for d, _, _, a in system.couplings()])
    src = np.random.default_rng(seed + m).standard_normal((1,) + (m + 1,) * 3 + CELLS)
    return system, lam, src


@pytest.mark.parametrize("shift", [0, -1])
@pytest.mark.parametrize("m", [1, 2, 3])
def test_propagator_equals_the_recursion_half_step(m, shift):
    system, lam, src = _case(m)
    cpl = system.couplings()
    cd, cf, cg = (np.array([c[i] for c in cpl]) for i in range(3))
    ref, got = np.empty_like(src), np.empty_like(src)
    cpu.half_step(src, ref, hermite_matrix_1d(m), cd, cf, cg, lam, 3 * (2 * m + 1), shift)
    propagator.half_step(src, got, propagator.operators(m, propagator.shifts(system, lam)), shift)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-13 * np.abs(ref).max())


def test_operator_without_shift_evaluates_the_interpolant_at_the_centre():
    # lam = 0: P = the centre rows of H (scaled derivatives at z = 0 are the coefficients b_k)
    m = 2
    np.testing.assert_allclose(propagator.operators(m, np.zeros(3))[1], hermite_matrix_1d(m)[:m + 1], atol=1e-15)


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 2e-6)])
@pytest.mark.parametrize("m, tile", [(1, Tile(8, 4, 2)), (2, Tile(16, 2, 3)), (3, Tile(8, 4, 2)),
                                     (1, Tile(32, 8, 0)), (3, Tile(32, 6, 3))])
def test_cuda_kernel_on_host_matches_reference(cuda_host, m, tile, dtype, tol):
    """The generated CUDA source, run by one host thread per CUDA thread, both half steps;
    the last tile fills shared memory, so it has one buffer and two barriers per plane."""
    system, lam, src = _case(m, seed=5)
    ops = propagator.operators(m, propagator.shifts(system, lam))
    tile = fit_tile(m, np.dtype(dtype).itemsize, tile)
    source = kernel_source(m, dtype, tile.lanes, tile.rows)
    assert f"#define BUFFERS {tile.buffers(m, np.dtype(dtype).itemsize)}" in source
    blocks, planes = tile.grid(CELLS, resident=4096)
    params = tuple(np.dtype(dtype).type(v) for v in ops.ravel())
    for shift in (0, -1):
        ref = np.empty_like(src)
        propagator.half_step(src, ref, ops, shift)
        data = src.astype(dtype)
        out = np.full_like(data, np.nan)
        cuda_host(source, "hermite_propagator", blocks, tile.threads,
                  (data, out, np.int32(shift), *(np.int32(n) for n in CELLS), np.int32(planes)) + params)
        np.testing.assert_allclose(out, ref, rtol=0, atol=tol * np.abs(ref).max())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found")
def test_cuda_source_compiles_with_nvcc(tmp_path):
    def compile_one(job):
        m, dtype = job
        tile = fit_tile(m, np.dtype(dtype).itemsize)
        path = tmp_path / f"propagator_m{m}_{np.dtype(dtype).name}.cu"
        path.write_text(kernel_source(m, dtype, tile.lanes, tile.rows))
        return subprocess.run(["nvcc", "-arch=sm_90", "-c", "-o", "/dev/null", str(path)],
                              capture_output=True, text=True)

    # the bench's largest tile, and the smallest with register spills (all of m = 1..4 x both
    # precisions compile; a subset keeps the test short)
    jobs = [(1, np.float32), (3, np.float32), (4, np.float64)]
    with ThreadPoolExecutor(2) as pool:
        for job, res in zip(jobs, pool.map(compile_one, jobs)):
            assert res.returncode == 0, (job, res.stderr[-2000:])


def test_tiles_shrink_to_fit_shared_memory():
    assert fit_tile(1, 4) == Tile(32, 8, 0)
    assert fit_tile(3, 4) == Tile(32, 6, 0)      # 64 values x 4 B x 192 threads = 48 KiB
    assert fit_tile(4, 8) == Tile(16, 2, 0)
    for m, size in ((1, 4), (3, 4), (3, 8), (4, 8)):
        t = fit_tile(m, size)
        assert t.shared_bytes(m, size) <= 48 * 1024 and t.threads % 32 == 0
    with pytest.raises(InputError, match="shared memory"):
        fit_tile(6, 8)
    with pytest.raises(InputError, match="LANES"):
        fit_tile(1, 4, Tile(24, 4, 0))


def test_tile_from_text():
    """bench_hermite.py --tiles: LANESxROWSxPLANES, the tile the kernel then gets."""
    assert fit_tile(1, 4, Tile.parse("16x4x12")) == Tile(16, 4, 12)
    with pytest.raises(InputError, match="LANESxROWSxPLANES"):
        Tile.parse("big")


def test_grid_covers_every_cell_once():
    tile = Tile(32, 8, 0)
    (gx, gy, gz), planes = tile.grid((150, 150, 150), resident=132 * 2048)
    assert gx * 31 >= 150 > (gx - 1) * 31 and gy * 7 >= 150 > (gy - 1) * 7
    assert gz * planes >= 150 > (gz - 1) * planes
    assert 1.5 <= gx * gy * gz * tile.threads / (132 * 2048) <= 3  # about two waves


def test_model_counts_three_passes():
    assert model(1, 4) == {"flops": 192, "bytes": 64}
    assert model(3, 4) == {"flops": 3072, "bytes": 512}


def test_auto_form_is_the_propagator_where_it_applies():
    assert HermiteSolver(advection(), 4, 1.0, 2).kernel == "propagator"
    assert HermiteSolver(advection(), 4, 1.0, 2, q=14).kernel == "monolithic"
    assert HermiteSolver(advection(), 4, 1.0, 2, q=16).kernel == "propagator"
    assert HermiteSolver(acoustics(), 4, 1.0, 2).kernel == "monolithic"


@pytest.mark.parametrize("system, q, match", [(acoustics(), None, "single advected field"),
                                              (advection(), 8, r"q = 8 .*q >= 3\(2m\+1\) = 9")])
def test_propagator_is_refused_where_it_is_not_the_method(system, q, match):
    with pytest.raises(InputError, match=match):
        HermiteSolver(system, 4, 1.0, 1, q=q, kernel="propagator")


def test_solver_steps_agree_between_propagator_and_recursion():
    runs = {}
    for kernel in ("propagator", "monolithic"):
        solver = HermiteSolver(advection(VELOCITY), CELLS, (0.5, 0.6, 0.7), 2, cfl=0.9, kernel=kernel)
        solver.set_state(np.random.default_rng(1).standard_normal(solver.state.shape))
        solver.step(3)
        runs[kernel] = solver.get_state()
    np.testing.assert_allclose(runs["propagator"], runs["monolithic"], rtol=0,
                               atol=1e-12 * np.abs(runs["monolithic"]).max())
