"""The GPU's in-place products of the block stacks with wide blocks of vectors
(block_products.py), on the GPU and run on the CPU by the CUDA emulation, against the
assembled blocks."""
import dataclasses

import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds
from wavescat.bem.assembly.hmatrix import hmatrix as hm
from wavescat.bem.assembly.hmatrix.clouds import space_cloud

from .conftest import p1_space


@pytest.fixture(params=["emulated", pytest.param("gpu", marks=pytest.mark.gpu)])
def device(request):
    return request.getfixturevalue("emulated_gpu") if request.param == "emulated" else get_backend("gpu")


def on_device(H, backend):
    """H with its blocks copied to `backend`."""
    xp = backend.xp

    def moved(g):
        return dataclasses.replace(g, **{f.name: xp.asarray(getattr(g, f.name)) for f in dataclasses.fields(g)
                                         if f.name not in ("rank", "on_host") and getattr(g, f.name) is not None})

    parts = [hm.DevicePart(backend, 0, [moved(g) for g in p.dense], [moved(g) for g in p.lowrank],
                           p.shape) for p in H.parts]
    return hm.HMatrix(parts, H.row_perm, H.col_perm, H.dtype, H.block_tree, H.report)


def assert_products(H, device, X, kernels, tol):
    """H X and H^T X on `device` equal the assembled blocks times X (to `tol`, in H's dtype
    and X's shape), through `kernels` where the emulation records its launches."""
    launches = getattr(device.xp, "launches", None)  # the emulation's record
    for op in (H, H.T):
        want = op.to_dense().astype(complex) @ X.astype(complex)
        dev = on_device(op, device)
        if launches is not None:
            del launches[:]
        got = device.asnumpy(dev.matvec(device.xp.asarray(X)))
        if launches is not None:
            assert {name for name, *_ in launches} == kernels
        assert got.shape == want.shape and got.dtype == H.dtype
        assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want)


@pytest.mark.parametrize("precision, storage, tol", [("double", "double", 1e-13),
                                                    ("double", "single", 1e-13),
                                                    ("single", "single", 2e-6)])
def test_wide_products_read_the_vectors_in_place(device, p1_cloud, precision, storage, tol):
    """Blocks of 33 columns (a full and a partial warp of columns; on a GPU also 361) through
    the dense and the low-rank kernels equal the assembled blocks times them, for K and for
    K^T (whose factors are K's, swapped): double blocks and vectors; complex64 blocks of a
    double operator, summed in double (to double rounding: single sums would be ~1e-7 off);
    single blocks and single vectors."""
    H = assemble_from_clouds("double_layer", 3.0, p1_cloud, p1_cloud, backend="cpu", eps=1e-5,
                             leaf_size=16, eta=2.0, precision=precision, storage=storage)
    assert any(g.D is None for g in H.groups()) and any(g.D is not None for g in H.groups())
    assert H.storage_dtype == (np.complex128 if storage == "double" else np.complex64)
    launches = getattr(device.xp, "launches", None)  # the emulation's record
    rng = np.random.default_rng(5)
    for r in (33,) if launches is not None else (33, 361):
        X = rng.standard_normal((H.shape[1], r)) + 1j * rng.standard_normal((H.shape[1], r))
        assert_products(H, device, X.astype(H.dtype), {"dense_blocks", "lowrank_blocks"}, tol)


NARROW = [("double", "double", 1e-13), ("double", "single", 1e-13), ("single", "single", 2e-6)]


@pytest.mark.parametrize("device, precision, storage, tol",
                         [("emulated", *NARROW[1])]  # the emulation's barriers are slow
                         + [pytest.param("gpu", *case, marks=pytest.mark.gpu) for case in NARROW],
                         indirect=["device"])
def test_narrow_products_go_a_column_at_a_time_through_the_vector_kernels(device, precision,
                                                                           storage, tol):
    """One vector and blocks of 3 columns (each column on its own) through dense_vector and
    lowrank_vector equal the assembled blocks times them, for K and K^T, for every precision
    pair of the wide kernels (on a GPU; complex64 blocks summed in double by the emulation)."""
    cloud = space_cloud(p1_space(2), 1)
    H = assemble_from_clouds("double_layer", 3.0, cloud, cloud, backend="cpu", eps=1e-5,
                             leaf_size=8, eta=2.0, precision=precision, storage=storage)
    assert any(g.D is None for g in H.groups()) and any(g.D is not None for g in H.groups())
    rng = np.random.default_rng(6)
    for shape in ((H.shape[1],), (H.shape[1], 3)):
        X = (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(H.dtype)
        assert_products(H, device, X, {"dense_vector", "lowrank_vector"}, tol)

@pytest.mark.parametrize("L", [70, 1100])
def test_vector_kernels_on_wide_ranks_long_rows_and_overlapping_blocks(device, L):
    """The vector kernels on stacks made up here: ranks of 150 (two slices of the kernel's
    shared sums, VEC_RANKS = 128), blocks of up to L x L - 25 padded rows and columns (their
    padding full of values that must not be read), blocks sharing rows (added by atomics),
    complex64 stored and double sums, against NumPy. L = 1100 takes the low-rank blocks'
    split path (rows over several thread blocks, SPLIT_ABOVE = 1024), with chunks of rows
    beyond a block's own (padding) and a last chunk cut short."""
    from wavescat.bem.assembly.hmatrix.batched_aca import BlockGroup  # noqa: PLC0415
    from wavescat.bem.assembly.hmatrix.block_products import SPLIT_ABOVE, BlockProducts  # noqa: PLC0415

    xp, rng = device.xp, np.random.default_rng(8)
    n_rows, n_cols, B, K = L + 230, L + 190, 6, 150
    m, n = rng.integers(L // 4, L + 1, B), rng.integers(L // 4, L + 1, B)
    r0, c0 = rng.integers(0, n_rows - L, B), rng.integers(0, n_cols - L, B)

    def cplx(*shape):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)

    U, V, D = cplx(B, L, K), cplx(B, L, K), cplx(B, L, L - 25)
    x = cplx(n_cols).astype(np.complex128)
    want = np.zeros(n_rows, complex)
    for b in range(B):
        low = U[b, :m[b]].astype(complex) @ V[b, :n[b]].astype(complex).T
        want[r0[b]:r0[b] + m[b]] += low @ x[c0[b]:c0[b] + n[b]]
        nd = min(n[b], L - 25)
        want[r0[b]:r0[b] + m[b]] += D[b, :m[b], :nd].astype(complex) @ x[c0[b]:c0[b] + nd]
    products = BlockProducts(xp, np.complex128, np.complex64)
    y = xp.zeros(n_rows, np.complex128)
    launches = getattr(xp, "launches", None)  # the emulation's record
    if launches is not None:
        del launches[:]
    places = [xp.asarray(a.astype(np.int32)) for a in (r0, c0, m, n)]
    dense_places = places[:3] + [xp.asarray(np.minimum(n, L - 25).astype(np.int32))]
    products.add(BlockGroup(None, None, None, None, U=xp.asarray(U), V=xp.asarray(V)), places,
                 xp.asarray(x), y)
    products.add(BlockGroup(None, None, None, None, D=xp.asarray(D)), dense_places, xp.asarray(x), y)
    got = device.asnumpy(y)
    assert np.linalg.norm(got - want) <= 1e-13 * np.linalg.norm(want)
    if launches is not None:
        split = {"lowrank_vt", "lowrank_ut"} <= {k for k, _, _ in launches}
        assert split == (L > SPLIT_ABOVE)
