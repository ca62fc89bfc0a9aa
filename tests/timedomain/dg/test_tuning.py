"""Choosing the volume-kernel variant: tables, the rules for caller options, tuning stages."""
import numpy as np
import pytest

from wavescat.timedomain.dg import gpu_kernels as gk
from wavescat.timedomain.dg.reference import reference_tetrahedron

NODES = [reference_tetrahedron(order).n_nodes for order in range(1, 7)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("tensor_cores", [True, False])
def test_defaults_launch_and_use_tensor_cores_only_where_present(dtype, tensor_cores):
    for npn in NODES:
        tuning = gk.default_volume_tuning(npn, dtype, tensor_cores)
        gk.volume_layout(npn, tuning, np.dtype(dtype).itemsize)  # raises if it cannot launch
        table = gk.TENSOR_TUNING_FP64 if np.dtype(dtype).itemsize == 8 else gk.TENSOR_TUNING
        assert tuning.tensor == (tensor_cores and npn in table)


def test_caller_options_pick_the_layout_family():
    f32 = np.float32
    assert gk.resolve_volume_tuning(35, f32, True) == gk.TENSOR_TUNING[35]
    # options without tensor=True change the row-layout default, not the tensor-core one
    rows = gk.resolve_volume_tuning(35, f32, True, kb_volume=3, elements_per_thread=2, persistent=None)
    assert not rows.tensor and rows == gk.VOLUME_TUNING[35]._replace(kb_volume=3, elements_per_thread=2)
    # tensor=True with a few options starts from the tensor-core table, or one warp per group
    assert gk.resolve_volume_tuning(35, f32, True, tensor=True, kb_volume=2) == gk.TENSOR_TUNING[35]._replace(kb_volume=2)
    assert gk.resolve_volume_tuning(4, f32, True, tensor=True) == gk.VolumeTuning(1, tensor=True)
    assert not gk.resolve_volume_tuning(35, f32, False).tensor


def test_tensor_options_are_refused_by_the_row_layout():
    for option in ("staged_output", "split_dv", "b_registers", "split_on_load", "transposed", "prefetch_k"):
        with pytest.raises(ValueError, match="options of tensor"):
            gk.volume_layout(35, gk.VolumeTuning(2, **{option: True}), 4)
    with pytest.raises(ValueError, match="options of the row layout"):
        gk.volume_layout(35, gk.VolumeTuning(1, tensor=True, warp_rows=True), 4)
    with pytest.raises(ValueError, match="b_registers"):  # 3 x 7 x 7 fragments do not fit
        gk.volume_layout(56, gk.VolumeTuning(1, nodes_per_thread=4, tensor=True, b_registers=True), 4)


@pytest.mark.parametrize("itemsize", [4, 8])
def test_tuning_stages_give_launchable_variants_of_their_family(itemsize):
    for npn in (20, 35):
        tensor = gk.tuning_candidates("tensor", npn, gk.VolumeTuning(1), itemsize)
        assert tensor and all(t.tensor for t in tensor)
        assert any(t.split_on_load for t in tensor) == (itemsize == 4)  # fp64 has no split
        assert any(t.transposed for t in tensor) and not all(t.transposed for t in tensor)
        for t in tensor + gk.tuning_candidates("codegen", npn, tensor[0], itemsize):
            gk.volume_layout(npn, t, itemsize)
        with pytest.raises(ValueError, match="row-layout"):
            gk.tuning_candidates("tile", npn, tensor[0], itemsize)


@pytest.mark.parametrize("itemsize", [4, 8])
def test_transposed_operator_fragments_hold_the_operators(itemsize):
    """Each (node tile, k step, lane, register) entry of the fragment-ordered operators is the
    operator entry of the PTX fragment layout (as B, or transposed as A), hi + lo = D in fp32."""
    rng = np.random.default_rng(3)
    D = rng.standard_normal((3, 35, 35))
    for transposed in (False, True):
        tiles = gk.mma_tiles(35, itemsize, transposed)
        frag = gk.mma_operators(D, itemsize, transposed)
        regs = tiles.operator_regs
        assert frag.shape == (3, tiles.node_tiles, tiles.k_steps, 32, regs * (2 if itemsize == 4 else 1))
        value = frag if itemsize == 8 else frag[..., :regs] + frag[..., regs:]
        for d, nt, ks, lane, r in [(0, 0, 0, 0, 0), (1, 2, 3, 17, regs - 1), (2, 1, 4, 31, regs // 2)]:
            g, t = divmod(lane, 4)
            dn, dm = (8 * (r & 1), 4 * (r >> 1)) if transposed and regs == 4 else (0, 4 * r)
            n, m = tiles.nodes * nt + g + dn, tiles.k_step * ks + t + dm
            want = D[d, n, m] if n < 35 and m < 35 else 0.0
            assert value[d, nt, ks, lane, r] == pytest.approx(want, rel=1e-6, abs=1e-12)


def test_32_bit_indices_only_where_every_state_index_fits():
    """4 K Np state entries (and 9 K affine factors) must stay below 2^32 for the 32-bit kernel."""
    assert gk.fits_index32(1_000_000, 84)
    assert gk.fits_index32((2**32 - 1) // (4 * 35), 35)
    assert not gk.fits_index32(2**32 // (4 * 35) + 1, 35)
    src32, src64 = (gk.volume_source(35, np.float32, gk.VolumeTuning(1, tensor=True), False, i) for i in (True, False))
    assert "#define INDEX32 1" in src32 and "#define INDEX32 0" in src64
