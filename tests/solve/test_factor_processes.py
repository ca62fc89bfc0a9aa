"""Sparse LU factorisations held by worker processes (bem/linalg/factor_processes.py,
osrc.PROCESS_UNKNOWNS): the same factors and solves as in this process, the device's
level-scheduled solves built from a worker's factors, and errors that name the worker."""
import os
import signal
from collections import OrderedDict

import numpy as np
import pytest
import scipy.sparse as sp

from wavescat.bem.discretisation import spaces
from wavescat.bem.formulations import osrc
from wavescat.bem.formulations.burton_miller import solve_real_spd
from wavescat.bem.linalg import factor_processes, sparse_lu, triangular
from wavescat.errors import WavescatError
from wavescat.geometry.icosphere import icosphere


@pytest.fixture(scope="module")
def space():
    return spaces.p1(icosphere(2))


def test_the_ntd_map_in_workers_is_the_map_in_this_process(space, monkeypatch):
    """Every factor of the OSRC NtD map and the mass matrix in worker processes: the map and
    the mass solves bitwise those of the factors made here (one column and a block)."""
    rng = np.random.default_rng(3)
    y = rng.standard_normal((space.n_dofs, 3)) + 1j * rng.standard_normal((space.n_dofs, 3))
    here = osrc.OsrcNtD(space, 3.0, mass_factor=True)
    monkeypatch.setattr(osrc, "PROCESS_UNKNOWNS", 0)
    away = osrc.OsrcNtD(space, 3.0, mass_factor=True)
    assert all(isinstance(lu.lu, factor_processes.RemoteLU) for _, lu in away._terms)
    assert isinstance(away.mass_lu.lu, factor_processes.RemoteLU)
    assert {lu.lu._worker for _, lu in away._terms} <= set(factor_processes._POOL)
    for block in (y[:, 0], y):
        assert np.array_equal(away.apply_to_weak(block), here.apply_to_weak(block))
        assert np.array_equal(solve_real_spd(away.mass_lu, block), solve_real_spd(here.mass_lu, block))


def test_device_solves_from_a_workers_factors(emulated_gpu, space, monkeypatch):
    """The level-scheduled device solve (run by the CUDA emulation) reads a worker's L, U
    and permutations: it agrees with the worker's own solve."""
    monkeypatch.setattr(osrc, "PROCESS_UNKNOWNS", 0)
    mass, stiff = osrc.mass_and_stiffness(space)
    lu = osrc.factorise(mass.astype(complex) - (0.3 + 0.1j) * stiff)
    b = np.random.default_rng(4).standard_normal((space.n_dofs, 33)) + 0j
    shared = triangular.SharedPatternLU(emulated_gpu.xp, [lu.lu])
    got = emulated_gpu.asnumpy(shared.solve(emulated_gpu.xp.asarray(b[None])))[0]
    want = lu.solve(b)
    assert np.abs(got - want).max() <= 1e-12 * np.abs(want).max()


def test_worker_errors_name_the_worker(space, monkeypatch):
    """A solve the worker refuses comes back as an error with SuperLU's reason; a worker
    that died is named with its exit status, and the pool starts a fresh one for new
    factors."""
    monkeypatch.setattr(osrc, "PROCESS_UNKNOWNS", 0)
    mass = osrc.mass_and_stiffness(space)[0]
    lu = osrc.factorise(mass)
    with pytest.raises(WavescatError, match="sparse LU in a worker process: ValueError"):
        lu.solve(np.ones(space.n_dofs + 1))
    worker = lu.lu._worker
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.process.wait()
    with pytest.raises(WavescatError, match=f"pid {worker.process.pid}.*stopped"):
        lu.solve(np.ones(space.n_dofs))
    again = osrc.factorise(mass)
    assert worker not in factor_processes._POOL
    assert np.allclose(mass @ again.solve(np.ones(space.n_dofs)), 1.0)



def test_large_patterns_are_ordered_by_a_worker(space, monkeypatch):
    """From PROCESS_UNKNOWNS on, a pattern not seen before is ordered by a worker process
    (METIS holds the GIL): METIS's ordering as made here, and its factors solve."""
    monkeypatch.setattr(osrc, "PROCESS_UNKNOWNS", 0)
    monkeypatch.setattr(sparse_lu, "_ORDERS", OrderedDict())  # no ordering made yet
    asked = []
    order_in_worker = factor_processes.order_in_worker
    monkeypatch.setattr(osrc, "order_in_worker",
                        lambda *a, **k: asked.append(1) or order_in_worker(*a, **k))
    mass = osrc.mass_and_stiffness(space)[0]
    lu = osrc.factorise(mass)
    assert asked == [1]
    assert np.array_equal(lu.lu.perm_c, osrc.factorise(mass).lu.perm_c) and asked == [1]
    pattern = sparse_lu.pattern(mass)
    assert np.array_equal(order_in_worker(pattern, 1), sparse_lu.metis_order(pattern))
    assert np.allclose(mass @ lu.solve(np.ones(space.n_dofs)), 1.0)


@pytest.mark.skipif(not factor_processes.FLUSHES_SUBNORMALS,
                    reason="flushing subnormals is done on x86-64 Linux")
def test_workers_flush_subnormal_numbers():
    """A worker's factors flush subnormal numbers to zero (Intel cores slow down on them:
    factor_processes.flush_subnormals); this process, which did not ask, keeps them."""
    tiny = 1e-310  # below the smallest normal double, 2.2e-308
    matrix = sp.csc_matrix(np.array([[1.0, 0.0], [tiny, 1.0]]))
    here = sparse_lu.OrderedLU(matrix, [0, 1])
    away = factor_processes.RemoteLU(matrix, [0, 1], workers=1)
    assert here.L.toarray()[1, 0] == tiny
    assert away.L.toarray()[1, 0] == 0.0
    assert np.array_equal(away.solve(np.array([1.0, 0.0])), [1.0, 0.0])
    assert here.solve(np.array([1.0, 0.0]))[1] == -tiny
