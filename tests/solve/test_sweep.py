"""Aspect sweeps: many incidence directions share one system; a wide batch of right-hand sides
gives what solving them one at a time gives, and the batches fit the memory they are given."""
import dataclasses
import math

import numpy as np
import pytest

from wavescat.bem.assembly.hmatrix import hmatrix as hm
from wavescat.bem.assembly.hmatrix.assembly import assemble_from_clouds
from wavescat.bem.assembly.hmatrix.clouds import space_cloud
from wavescat.bem.linalg import gmres as krylov
from wavescat.bem.linalg.gmres import gmres
from wavescat.configuration.case import SolverSettings
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.geometry.icosphere import icosphere
from wavescat.solve import driver

C = 1500.0


def _system(n=120, r=9, seed=1):
    rng = np.random.default_rng(seed)
    a = np.eye(n) * 2.5 + (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))) / np.sqrt(n)
    return a, rng.standard_normal((n, r)) + 1j * rng.standard_normal((n, r))


def _basis_sizes():
    """Bytes of every Krylov basis allocation GMRES makes (grown ones included)."""
    sizes = []
    real_zeros = np.zeros

    class Spy:
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def zeros(shape, dtype=float):
            out = real_zeros(shape, dtype)
            if len(shape) == 3:
                sizes.append(out.nbytes)
            return out

    return sizes, Spy()


def test_wide_batch_equals_one_direction_at_a_time():
    a, b = _system()
    tol = 1e-10
    wide = gmres(lambda v: a @ v, b, tol=tol, restart=50, maxiter=300)
    exact = np.linalg.solve(a, b)
    for q in range(b.shape[1]):
        one = gmres(lambda v: a @ v, b[:, q], tol=tol, restart=50, maxiter=300)
        assert np.linalg.norm(wide.x[:, q] - one.x) <= 10 * tol * np.linalg.norm(exact[:, q])


def test_converged_columns_leave_the_products():
    a, b = _system(r=3)
    b[:, 1] = 4.0 * np.linalg.eig(a)[1][:, 0]  # an eigenvector: converges at the first step
    widths = []

    def matvec(v):
        widths.append(v.shape[1])
        return a @ v

    res = gmres(matvec, b, tol=1e-8, restart=100, maxiter=300)
    assert res.iterations[1] == 1 and res.iterations.max() > 5
    # Arnoldi products as wide as the columns still running, then one true-residual check
    arnoldi, check = widths[:-1], widths[-1]
    assert check == 3 and sum(arnoldi) == int(res.iterations.sum())
    assert arnoldi[0] == 3 and arnoldi[1] == 2 and arnoldi == sorted(arnoldi, reverse=True)


def test_basis_grows_with_the_iterations(monkeypatch):
    """A run that converges in a few iterations never holds restart + 1 vectors."""
    a, b = _system(r=4)
    sizes, spy = _basis_sizes()
    res = gmres(lambda v: a @ v, b, xp=spy, tol=1e-6, restart=400, maxiter=400)
    assert res.iterations.max() < 30
    vector = a.shape[0] * 16 * b.shape[1]
    assert max(sizes) <= 2 * (res.iterations.max() + 1) * vector
    assert np.all(res.residuals <= 1e-6)


@pytest.mark.parametrize("vectors", [3, 6])
def test_basis_respects_its_memory_cap(monkeypatch, vectors):
    a, b = _system(r=5)
    sizes, spy = _basis_sizes()
    cap = vectors * a.shape[0] * 16 * b.shape[1]
    res = gmres(lambda v: a @ v, b, xp=spy, tol=1e-10, restart=100, maxiter=2000,
                basis_bytes=cap)
    assert max(sizes) <= cap
    exact = np.linalg.solve(a, b)
    assert np.linalg.norm(res.x - exact) <= 1e-8 * np.linalg.norm(exact)


@pytest.mark.parametrize("n, r, available", [(75_650, 361, 100 * 2**30), (75_650, 361, 4 * 2**30),
                                              (20_000, 37, 2**30), (20_000, 361, 2**20)])
def test_batches_fit_the_memory_they_are_given(n, r, available):
    width, basis = krylov.krylov_batches(n, r, min(100, 500), available)
    batches = math.ceil(r / width)
    assert 1 <= width <= r and (batches - 1) * width < r  # no empty batch
    work = 16 * n * krylov.WORK_VECTORS * width
    if width > 1:  # one direction alone always runs, with a basis of two vectors
        assert basis + work <= krylov.KRYLOV_MEMORY_SHARE * available
        assert basis >= 16 * n * width * 2
    per_direction = 16 * n * (krylov.KRYLOV_MIN_VECTORS + 1 + krylov.WORK_VECTORS)
    fits = r * per_direction <= krylov.KRYLOV_MEMORY_SHARE * available
    assert (width == r) == fits  # all directions in one batch where they fit


def test_hmatrix_product_of_a_block_in_chunks(monkeypatch):
    """A block of vectors through the H-matrix, in chunks of blocks small enough to split
    every stack, equals the product column by column and the dense product."""
    from wavescat.bem.discretisation import spaces

    cloud = space_cloud(spaces.p1(icosphere(3)), 1)
    H = assemble_from_clouds("double_layer", 2.0, cloud, cloud, backend="cpu", eps=1e-4,
                             leaf_size=16, eta=2.0)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((H.shape[1], 7)) + 1j * rng.standard_normal((H.shape[1], 7))
    whole = H.matvec(X)
    monkeypatch.setattr(hm, "_CHUNK_BYTES", 4096)
    for p in H.parts:
        p.__dict__.pop("_scatter_cache", None)
    chunked = H.matvec(X)
    cols = np.stack([H.matvec(X[:, q]) for q in range(X.shape[1])], axis=1)
    dense = H.to_dense() @ X
    for got in (whole, chunked, cols):
        assert np.allclose(got, dense, rtol=1e-12, atol=1e-12 * np.abs(dense).max())


def _sweep_case(count, boundary=None):
    cfg = {"medium": {"sound_speed": C}, "run": ["c"], "cases": {"c": {
        **({"boundary": boundary} if boundary else {}),
        "geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [300.0],
        "incident": {"aspect": {"plane": "xz", "start_deg": 0, "stop_deg": 180, "count": count}},
        "receivers": {"plane": "xz", "count": 19},
        "solver": {"operator_format": "dense", "backend": "cpu"}}}}
    return solve_case(prepare_config(cfg), "c")


def test_sweep_in_memory_sized_batches_equals_one_at_a_time(monkeypatch):
    """The driver's batches follow the memory available: one batch of all directions where
    it fits, one direction per batch where little memory is left; the answers agree to the
    GMRES tolerance."""
    case = _sweep_case(9)
    mesh = icosphere(2)
    widths = []
    real = driver.gmres

    def spy(matvec, b, **kw):
        widths.append(b.shape[1])
        return real(matvec, b, **kw)

    monkeypatch.setattr(driver, "gmres", spy)
    wide = driver.solve_frequency(case, mesh, 300.0)
    assert widths == [9]
    widths.clear()
    n = wide.dofs
    monkeypatch.setattr(driver, "available_bytes", lambda be: 16 * n * 40)  # one at a time
    one = driver.solve_frequency(case, mesh, 300.0)
    assert widths == [1] * 9
    tol = case.solver.gmres.tol
    for q in range(9):
        scale = np.linalg.norm(wide.surface_pressure[:, q])
        assert np.linalg.norm(wide.surface_pressure[:, q] - one.surface_pressure[:, q]) \
            <= 20 * tol * scale
    assert np.allclose(wide.monostatic_far_field, one.monostatic_far_field,
                       rtol=20 * tol, atol=20 * tol * np.abs(wide.monostatic_far_field).max())


def test_sparse_lu_solves_wide_blocks():
    """The OSRC and mass factorisations solve a block of right-hand sides (in pairs of
    columns) as they solve each column."""
    import scipy.sparse as sp

    from wavescat.bem.formulations.osrc import factorise, mass_and_stiffness
    from wavescat.bem.discretisation import spaces

    mass, stiff = mass_and_stiffness(spaces.p1(icosphere(2)))
    rng = np.random.default_rng(2)
    for matrix in (mass, mass.astype(complex) - (0.3 + 0.1j) * stiff):
        lu = factorise(matrix)
        for r in (1, 2, 5):
            y = rng.standard_normal((mass.shape[0], r)) + 1j * rng.standard_normal((mass.shape[0], r))
            y = y if np.iscomplexobj(matrix.data) else y.real
            x = lu.solve(y)
            assert x.shape == y.shape
            assert np.allclose(sp.csr_matrix(matrix) @ x, y, rtol=1e-10, atol=1e-10)
        assert np.allclose(lu.solve(y[:, 0]), x[:, 0], rtol=1e-12, atol=0)


def test_threaded_sparse_solves_equal_the_serial_ones(monkeypatch):
    """The OSRC NtD map and the mass solve give bit for bit the same block whether its column
    pairs (wide blocks) or Padé terms (narrow ones) are solved on one thread or on four."""
    from wavescat.bem.formulations import osrc
    from wavescat.bem.discretisation import spaces
    from wavescat.bem.formulations.burton_miller import solve_real_spd

    space = spaces.p1(icosphere(2))
    ntd, dtn = osrc.OsrcNtD(space, 3.0), osrc.OsrcDtN(space, 3.0)
    mass_lu = osrc.factorise(ntd.mass)
    rng = np.random.default_rng(5)
    y = rng.standard_normal((space.n_dofs, 7)) + 1j * rng.standard_normal((space.n_dofs, 7))
    results = {}
    for threads in (1, 4):
        monkeypatch.setattr(osrc, "solve_threads", lambda: threads)
        results[threads] = [ntd.apply_to_weak(y), ntd.apply_to_weak(y[:, :1]),
                            dtn.sqrt_weak(y[:, :2]), solve_real_spd(mass_lu, y)]
    for one, four in zip(results[1], results[4]):
        assert np.array_equal(one, four)
    # and a wide block is its columns side by side
    assert np.array_equal(results[4][0][:, :1], results[4][1])


@pytest.mark.gpu
@pytest.mark.parametrize("boundary", [None, {"kind": "pressure_release"},
                                      {"kind": "impedance", "admittance": [0.7, 0.4]}])
def test_wide_sweep_on_the_gpu_matches_the_cpu(boundary):
    """37 aspects in one batch on the GPU (H-matrix products reading the vectors in place,
    the sparse solves by level sets on the device) give the CPU's answers to the GMRES
    tolerance, for the rigid, the pressure-release and the impedance body."""
    case = _sweep_case(37, boundary)
    mesh = icosphere(3)
    results = {}
    for backend in ("cpu", "gpu"):
        solver = {**case.solver.as_dict(), "backend": backend, "operator_format": "hmatrix"}
        results[backend] = driver.solve_frequency(
            dataclasses.replace(case, solver=SolverSettings.from_dict(solver)), mesh, 300.0)
    tol = case.solver.gmres.tol
    cpu, gpu = results["cpu"], results["gpu"]
    assert gpu.backend["backend"] == "gpu"
    scale = np.abs(cpu.monostatic_far_field).max()
    assert np.abs(gpu.monostatic_far_field - cpu.monostatic_far_field).max() <= 50 * tol * scale
