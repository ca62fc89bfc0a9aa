"""Blocks moved to pinned host memory to make room on the GPU (host_blocks.py): which move,
that a block and its mirror move together, that the products are the same, and the refusals.
Run by the CUDA emulation on the CPU, with the device's free memory counted from the blocks."""
import gc

import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds, host_blocks
from wavescat.bem.assembly.hmatrix import hmatrix as hm
from wavescat.errors import WavescatError

CAPACITY = 64 << 30


@pytest.fixture
def registry(monkeypatch):
    """A registry of this test's parts only, and a device of CAPACITY bytes whose free
    memory is what the registered blocks on it leave (less the reserve)."""
    monkeypatch.setattr(host_blocks, "_PARTS", {})

    def free(backend, device_id):
        used = sum(p.nbytes - p.host_nbytes for p in host_blocks._PARTS.get(device_id, ()))
        return CAPACITY - used
    monkeypatch.setattr(host_blocks, "device_free_bytes", free)
    return free


def on_emulated_gpu(H, backend):
    """H's parts as parts of the emulated GPU (the same arrays: NumPy is its memory)."""
    parts = [hm.DevicePart(backend, 0, p.dense, p.lowrank, p.shape) for p in H.parts]
    return hm.HMatrix(parts, H.row_perm, H.col_perm, H.dtype, H.block_tree, H.report)


def _operator(name, cloud):
    return assemble_from_clouds(name, 3.0, cloud, cloud, backend="cpu", eps=1e-6, leaf_size=16)


@pytest.mark.parametrize("name", ["double_layer", "single_layer"])
def test_room_moves_the_largest_groups_and_products_stay(emulated_gpu, registry, p1_cloud, name):
    """Asked for room, the largest low-rank groups move to the host until it is there; the
    mirror of a moved block of the symmetric single layer moves with it (its factors are
    the same arrays); narrow and wide products equal those before."""
    cpu = _operator(name, p1_cloud)
    H = on_emulated_gpu(cpu, emulated_gpu)
    rng = np.random.default_rng(0)
    # one column, two (a column at a time) and WIDE_COLUMNS (in place): the products before
    # the move by the CPU's H (the same blocks; the emulated kernels run a fiber per thread)
    wide = hm.WIDE_COLUMNS
    X = rng.standard_normal((H.shape[1], wide)) + 1j * rng.standard_normal((H.shape[1], wide))
    want = [cpu @ X[:, 0], cpu @ X[:, :2], cpu @ X]
    part = H.parts[0]
    lowrank = part.nbytes - sum(g.nbytes for g in part.dense)
    half = lowrank // 2
    need = CAPACITY - host_blocks.RESERVE_BYTES - part.nbytes + half
    moved = host_blocks.make_room(emulated_gpu, 0, need)
    assert half <= moved == part.host_nbytes < lowrank
    assert registry(emulated_gpu, 0) >= need + host_blocks.RESERVE_BYTES
    on_host = [g for g in part.lowrank if g.on_host]
    stayed = [g for g in part.lowrank if not g.on_host]
    # the largest first: no group left on the device is larger than one moved but the last
    assert max(g.nbytes for g in stayed) <= sorted(g.nbytes for g in on_host)[-1]
    if name == "single_layer":
        arrays = {id(g.U): g for g in on_host} | {id(g.V): g for g in on_host}
        assert all(id(g.V) in arrays and id(g.U) in arrays for g in on_host)
        assert all(id(g.U) not in arrays for g in stayed)
    emulated_gpu.xp.launches.clear()
    for got, w in zip([H @ X[:, 0], H @ X[:, :2], H @ X], want):
        assert np.abs(got - w).max() <= 1e-13 * np.abs(w).max()
    # the wide block went through the in-place kernels, moved groups a chunk at a time
    assert sum(kernel == "lowrank_blocks" for kernel, *_ in emulated_gpu.xp.launches) \
        >= len(part.lowrank)
    # room there already: nothing moves
    assert host_blocks.make_room(emulated_gpu, 0, 0) == 0


def test_nothing_left_to_move_returns_and_the_cpu_moves_nothing(emulated_gpu, registry, p1_cloud):
    """More room than all blocks give: everything low-rank moves and the caller's allocation
    fails as before (no error here); the CPU backend never moves a block."""
    H = on_emulated_gpu(_operator("double_layer", p1_cloud), emulated_gpu)
    part = H.parts[0]
    host_blocks.make_room(emulated_gpu, 0, 2 * CAPACITY)
    assert all(g.on_host for g in part.lowrank) and not any(g.on_host for g in part.dense)
    cpu = _operator("double_layer", p1_cloud)
    assert host_blocks.make_room(get_backend("cpu"), 0, 2 * CAPACITY) == 0
    assert not any(g.on_host for g in cpu.parts[0].lowrank)


def test_a_host_without_room_is_a_clear_error(emulated_gpu, registry, p1_cloud, monkeypatch):
    H = on_emulated_gpu(_operator("double_layer", p1_cloud), emulated_gpu)
    monkeypatch.setattr(host_blocks, "host_free_bytes", lambda: 1 << 30)
    with pytest.raises(WavescatError, match=r"GiB of H-matrix blocks cannot move to the host: .* GiB of host memory are free"):
        host_blocks.make_room(emulated_gpu, 0, CAPACITY)
    assert not any(g.on_host for g in H.parts[0].lowrank)  # nothing half moved


def test_transpose_shares_the_moved_factors(emulated_gpu, registry, p1_cloud):
    """K^T made before the move multiplies with the host copies too (its groups registered,
    the same factors swapped): it frees the device memory, and its products stay."""
    H = on_emulated_gpu(_operator("double_layer", p1_cloud), emulated_gpu)
    T = H.T
    x = np.random.default_rng(1).standard_normal(H.shape[0]) + 0j
    want = T @ x
    host_blocks.make_room(emulated_gpu, 0, 2 * CAPACITY)
    assert all(g.on_host for g in T.parts[0].lowrank)
    assert np.abs(T @ x - want).max() <= 1e-13 * np.abs(want).max()


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    return request.getfixturevalue("emulated_gpu") if request.param == "emulated" else get_backend("gpu")


def test_an_assembly_makes_room_from_the_operators_before_it(device, monkeypatch, p1_cloud):
    """On a device that the first operator's blocks fill, the second's assembly moves them to
    the host before its own steps (and fits); both products stay those of the same
    assemblies with room to spare."""
    monkeypatch.setattr(host_blocks, "_PARTS", {})
    x = device.xp.asarray(np.random.default_rng(2).standard_normal(p1_cloud.n) + 0j)

    def assembled(name):
        return assemble_from_clouds(name, 3.0, p1_cloud, p1_cloud, backend=device,
                                    eps=1e-6, leaf_size=16)
    want_second = assembled("hypersingular") @ x
    gc.collect()  # that one's blocks leave the device (and the registry)
    first = assembled("double_layer")
    want_first = first @ x
    # room for the first's blocks, less than the reserve beside them
    capacity = first.parts[0].nbytes + host_blocks.RESERVE_BYTES // 2
    monkeypatch.setattr(host_blocks, "device_free_bytes", lambda be, d: capacity - sum(
        p.nbytes - p.host_nbytes for p in host_blocks._PARTS.get(d, ())))
    second = assembled("hypersingular")
    assert first.parts[0].host_nbytes == sum(g.nbytes for g in first.parts[0].lowrank)
    for got, want in ((first @ x, want_first), (second @ x, want_second)):
        got, want = device.asnumpy(got), device.asnumpy(want)
        assert np.abs(got - want).max() <= 1e-13 * np.abs(want).max()


@pytest.mark.gpu
def test_room_on_a_gpu(registry, p1_cloud):
    """On a GPU the moved factors are pinned host arrays, the device's copies are let go,
    and the narrow and wide products stay."""
    be = get_backend("gpu")
    H = assemble_from_clouds("hypersingular", 3.0, p1_cloud, p1_cloud, backend=be, eps=1e-6,
                             leaf_size=16)
    xp = be.xp
    X = xp.asarray(np.random.default_rng(3).standard_normal((H.shape[1], 20)) + 0j)
    want = [xp.asnumpy(H @ X[:, 0]), xp.asnumpy(H @ X)]
    host_blocks.make_room(be, 0, 2 * CAPACITY)
    moved = [g for g in H.parts[0].lowrank if g.on_host]
    assert moved and all(isinstance(g.U, np.ndarray) and isinstance(g.V, np.ndarray) for g in moved)
    for got, w in zip([H @ X[:, 0], H @ X], want):
        assert np.abs(xp.asnumpy(got) - w).max() <= 1e-13 * np.abs(w).max()


def test_one_operator_larger_than_its_device(device, monkeypatch, p1_cloud):
    """A device with room for little more than the reserve: the operator's own finished
    pieces move to the host as its ACA goes on, its groups are joined there, and its products
    are those of the same assembly with room to spare."""
    monkeypatch.setattr(host_blocks, "_PARTS", {})
    x = device.xp.asarray(np.random.default_rng(4).standard_normal((p1_cloud.n, 18)) + 0j)

    def assembled():
        return assemble_from_clouds("double_layer", 3.0, p1_cloud, p1_cloud, backend=device,
                                    eps=1e-6, leaf_size=16, work_bytes=1 << 16)
    H = assembled()
    want = [H @ x[:, 0], H @ x]
    low = sum(g.nbytes for g in H.parts[0].lowrank)
    del H
    gc.collect()
    capacity = host_blocks.RESERVE_BYTES + low // 4
    monkeypatch.setattr(host_blocks, "device_free_bytes", lambda be, d: capacity - sum(
        p.nbytes - p.host_nbytes for p in host_blocks._PARTS.get(d, ())))
    H = assembled()
    part = H.parts[0]
    assert low // 2 < part.host_nbytes < low
    assert any(g.on_host and len(g.r0) > 1 for g in part.lowrank)
    for got, w in zip([H @ x[:, 0], H @ x], want):
        got, w = device.asnumpy(got), device.asnumpy(w)
        assert np.abs(got - w).max() <= 1e-13 * np.abs(w).max()


def test_the_solve_asks_room_for_its_least_krylov_basis(monkeypatch):
    """Before GMRES the driver asks the card for the least basis of one right-hand side
    (KRYLOV_MIN_VECTORS + 1 + WORK_VECTORS vectors), not a whole restart cycle's: with the
    default restart of 2000 that would move most blocks of a large solve to the host."""
    from wavescat.bem.linalg.gmres import KRYLOV_MIN_VECTORS, WORK_VECTORS
    from wavescat.configuration.case import Case
    from wavescat.configuration.config import prepare_config
    from wavescat.geometry.icosphere import icosphere
    from wavescat.solve import driver

    asked = []
    monkeypatch.setattr(host_blocks, "make_room_here", lambda be, nbytes: asked.append(nbytes) or 0)
    cfg = prepare_config({"run": ["s"], "cases": {"s": {
        "geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [300.0],
        "receivers": {"plane": "xz", "count": 5},
        "solver": {"backend": "cpu", "operator_format": "dense"}}}})
    case = Case.from_config(cfg, "s")
    mesh = icosphere(2)
    res = driver.solve_frequency(case, mesh, 300.0)
    n = res.dofs
    assert case.solver.gmres.restart > KRYLOV_MIN_VECTORS
    assert n * 16 * (KRYLOV_MIN_VECTORS + 1 + WORK_VECTORS) in asked
