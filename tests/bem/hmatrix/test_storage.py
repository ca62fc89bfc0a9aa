"""Blocks stored in single precision (`solver.hmatrix.storage`): half the bytes, entries
rounded once, products summed in double."""
import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.hmatrix import assemble_from_clouds
from wavescat.bem.hmatrix.assembly import stored_dtype
from wavescat.bem.hmatrix.batched_aca import assemble_near
from wavescat.bem.hmatrix.block_tree import build_block_tree
from wavescat.bem.hmatrix.cluster_tree import build_cluster_tree
from wavescat.bem.hmatrix.kernels import PairKernel
from wavescat.errors import WavescatError

U32 = 2.0 ** -24  # unit roundoff of float32: |fl(x) - x| <= U32 |x|


def test_stored_dtype_follows_the_setting_and_the_tolerance():
    c16, c8 = np.dtype(np.complex128), np.dtype(np.complex64)
    assert stored_dtype(c16, "single", 1e-4) == c8
    assert stored_dtype(np.float64, "single", 1e-4) == np.float32  # Laplace: real blocks
    assert stored_dtype(c16, "double", 1e-4) == c16
    assert stored_dtype(c8, "double", 1e-4) == c8  # never above the entries' precision
    # auto: single while its rounding stays far below the ACA tolerance
    assert stored_dtype(c16, "auto", 1e-4) == c8 and stored_dtype(c16, "auto", 1e-8) == c16
    with pytest.raises(WavescatError, match="hmatrix.storage = 'half'"):
        assemble_from_clouds("single_layer", 1.0, None, None, storage="half")


def test_single_storage_halves_the_bytes_and_sums_in_double(p1_cloud):
    """The same ACA (run in double) stored in complex64: every stored array complex64 and
    exactly half the bytes of the complex128 ones, the matrix one rounding away from the
    double one, and its products the exact (double) products of the stored blocks: sums in
    single precision would be ~1e-7 off."""
    opts = dict(backend="cpu", eps=1e-4, leaf_size=16, eta=2.0)
    Hd = assemble_from_clouds("double_layer", 3.0, p1_cloud, p1_cloud, storage="double", **opts)
    Hs = assemble_from_clouds("double_layer", 3.0, p1_cloud, p1_cloud, storage="single", **opts)
    stored = [a for g in Hs.groups() for a in (g.D, g.U, g.V) if a is not None]
    assert {a.dtype for a in stored} == {np.dtype(np.complex64)}
    assert Hs.dtype == Hd.dtype == np.complex128 and Hs.storage_dtype == np.complex64
    assert 2 * Hs.report["storage_bytes"] == Hd.report["storage_bytes"]
    assert 2 * Hs.report["bytes_tight"] == Hd.report["bytes_tight"]
    assert Hs.report["storage_dtype"] == "complex64" and Hd.report["storage_dtype"] == "complex128"
    As, Ad = Hs.to_dense(), Hd.to_dense()
    # entries (dense) and factors (low rank: two roundings per term) rounded once each
    assert 0 < np.linalg.norm(As - Ad) <= 4 * U32 * np.linalg.norm(Ad)
    rng = np.random.default_rng(7)
    for shape in ((Hs.shape[1],), (Hs.shape[1], 3)):
        x = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
        y = Hs.matvec(x)
        assert y.dtype == np.complex128
        assert np.linalg.norm(y - As @ x) <= 1e-13 * np.linalg.norm(As @ x)


def test_near_field_in_shares_is_rounded_once(p1_cloud):
    """Dense blocks stored in single precision a few blocks at a time (a small budget), with
    corrections that nearly cancel at repeated places: each entry is the double sum rounded
    once (summing the corrections in single would lose the small remainder)."""
    be = get_backend("cpu")
    tree = build_cluster_tree(p1_cloud.lo, p1_cloud.hi, 16)
    near = build_block_tree(tree, tree, 2.0, k=3.0).near
    cloud = p1_cloud.permuted(tree.perm)
    kern = PairKernel("double_layer", 3.0, cloud, cloud, be)
    rng = np.random.default_rng(11)
    blk = rng.integers(0, len(near["r0"]), 4000)
    rows = near["r0"][blk] + rng.integers(0, near["m"][blk])
    cols = near["c0"][blk] + rng.integers(0, near["n"][blk])
    big = 1e3 * (rng.standard_normal(len(blk)) + 1j * rng.standard_normal(len(blk)))
    small = rng.standard_normal(len(blk)) + 1j * rng.standard_normal(len(blk))
    # +big and -big + small at each place: the places' sums are `small`
    corr = (np.tile(rows, 2), np.tile(cols, 2), np.concatenate([big, small - big]),
            np.tile(blk, 2).astype(np.int32))
    Dd = assemble_near(kern, near, np, corr).D
    Lr, Lc = Dd.shape[1:]
    budget = 7 * 16 * Lr * Lc  # shares of 7 blocks
    Ds = assemble_near(kern, near, np, corr, store=np.complex64, budget_bytes=budget).D
    assert Ds.dtype == np.complex64 and len(near["r0"]) > 7
    for part in (np.real, np.imag):
        err = np.abs(part(Ds).astype(float) - part(Dd))
        assert np.all(err <= U32 * np.abs(part(Dd)) + 1e-12 * np.abs(Dd).max())
