"""Choosing the volume-kernel variant: the tables (tuning.json) by device, the rules for caller
options, the layout's checks, and the tuner's stages (bench/tune_dg.py)."""
import importlib.util
import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from wavescat.timedomain.dg import kernel_source, layout, tuning
from wavescat.timedomain.dg.layout import VolumeTuning
from wavescat.timedomain.dg.reference import reference_tetrahedron

NODES = [reference_tetrahedron(order).n_nodes for order in range(1, 7)]
BENCH = Path(__file__).parents[3] / "bench"


def tune_dg(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("tune_dg", BENCH / "tune_dg.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cc", [90, 80, 75])
def test_defaults_launch_and_use_tensor_cores_only_where_present(dtype, cc):
    table = tuning.volume_table("tensor", dtype)
    assert set(table) == {20, 35, 56, 84}
    for npn in NODES:
        t = tuning.default_volume_tuning(npn, dtype, cc)
        layout.volume_layout(npn, t, np.dtype(dtype).itemsize)  # raises if it cannot launch
        assert t.tensor == (cc >= layout.TENSOR_CORES_MIN_CC and npn in table)
        if not t.tensor:  # below compute capability 8.0, and N = 1, 2: the rows table
            assert t == tuning.volume_table("rows", dtype)[npn]


def test_tables_are_package_data_with_one_entry_per_line():
    """tuning.json ships with the package; every field of an entry is a VolumeTuning field."""
    data = json.loads(resources.files("wavescat.timedomain.dg").joinpath("tuning.json").read_text())
    assert [t["layout"] for t in data["tables"]] == ["tensor", "rows"]
    for t in data["tables"]:
        for precision in ("single", "double"):
            for entry in t[precision].values():
                assert set(entry) <= set(VolumeTuning._fields) and "kb_volume" in entry


def test_caller_options_pick_the_layout_family():
    f32 = np.float32
    tensor35, rows35 = tuning.volume_table("tensor", f32)[35], tuning.volume_table("rows", f32)[35]
    assert tuning.resolve_volume_tuning(35, f32, 90) == tensor35
    # options without tensor=True change the row-layout default, not the tensor-core one
    rows = tuning.resolve_volume_tuning(35, f32, 90, kb_volume=3, elements_per_thread=2, persistent=None)
    assert not rows.tensor and rows == rows35._replace(kb_volume=3, elements_per_thread=2)
    # tensor=True with a few options starts from the tensor-core table, or one warp per group
    assert tuning.resolve_volume_tuning(35, f32, 90, tensor=True, kb_volume=2) == tensor35._replace(kb_volume=2)
    assert tuning.resolve_volume_tuning(4, f32, 90, tensor=True) == VolumeTuning(1, tensor=True)
    assert not tuning.resolve_volume_tuning(35, f32, 75).tensor


def test_tensor_options_are_refused_by_the_row_layout():
    for option in layout.TENSOR_OPTIONS:
        with pytest.raises(ValueError, match="options of tensor"):
            layout.volume_layout(35, VolumeTuning(2, **{option: True}), 4)
    with pytest.raises(ValueError, match="option of the row layout"):
        layout.volume_layout(35, VolumeTuning(1, tensor=True, warp_rows=True), 4)


@pytest.mark.parametrize("itemsize", [4, 8])
def test_tuning_stages_give_launchable_variants_of_their_family(itemsize, monkeypatch):
    tuner = tune_dg(monkeypatch)
    for npn in (20, 35):
        tensor = tuner.tuning_candidates("tensor", npn, VolumeTuning(1), itemsize)
        assert tensor and all(t.tensor for t in tensor)
        assert any(t.split_on_load for t in tensor) == (itemsize == 4)  # fp64 has no split
        assert any(t.transposed for t in tensor) and not all(t.transposed for t in tensor)
        for t in tensor + tuner.tuning_candidates("codegen", npn, tensor[0], itemsize):
            layout.volume_layout(npn, t, itemsize)
        for stage in tuner.ROW_STAGES:
            assert all(not t.tensor for t in tuner.tuning_candidates(stage, npn, VolumeTuning(4), itemsize))
        with pytest.raises(ValueError, match="row-layout"):
            tuner.tuning_candidates("tile", npn, tensor[0], itemsize)


@pytest.mark.parametrize("itemsize", [4, 8])
def test_transposed_operator_fragments_hold_the_operators(itemsize):
    """Each (node tile, k step, lane, register) entry of the fragment-ordered operators is the
    operator entry of the PTX fragment layout (as B, or transposed as A), hi + lo = D in fp32."""
    rng = np.random.default_rng(3)
    D = rng.standard_normal((3, 35, 35))
    for transposed in (False, True):
        tiles = layout.mma_tiles(35, itemsize, transposed)
        frag = layout.mma_operators(D, itemsize, transposed)
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
    assert layout.fits_index32(1_000_000, 84)
    assert layout.fits_index32((2**32 - 1) // (4 * 35), 35)
    assert not layout.fits_index32(2**32 // (4 * 35) + 1, 35)
    src32, src64 = (kernel_source.volume_source(35, np.float32, VolumeTuning(1, tensor=True), False, i)
                    for i in (True, False))
    assert "#define INDEX32 1" in src32 and "#define INDEX32 0" in src64
