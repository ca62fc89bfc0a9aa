"""The GPU's in-place products of the block stacks with wide blocks of vectors
(block_products.py), on the GPU and run on the CPU by the CUDA emulation, against the
assembled blocks."""
import dataclasses

import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds
from wavescat.bem.assembly.hmatrix import hmatrix as hm


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
        X = X.astype(H.dtype)
        for op in (H, H.T):
            want = op.to_dense().astype(complex) @ X.astype(complex)
            dev = on_device(op, device)
            if launches is not None:
                del launches[:]
            got = device.asnumpy(dev.matvec(device.xp.asarray(X)))
            if launches is not None:
                assert {name for name, *_ in launches} == {"dense_blocks", "lowrank_blocks"}
            assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want)
            assert got.dtype == H.dtype
