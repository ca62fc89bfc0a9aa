"""The kernel manifest: written and read back merged, replayed by pool workers (Numba's part
on the CPU; NVRTC's on the GPU), stale entries reported, not fatal."""
import base64
import pickle

import numba
import numpy as np

from wavescat import kernel_cache


def test_manifest_round_trip_merges_entries(tmp_path):
    path = tmp_path / "k.json.gz"
    a = {"source": "extern \"C\" __global__ void f() {}", "options": ["-DX=1"], "arch": None,
         "extra_source": None, "backend": "nvrtc", "cooperative": False,
         "name_expressions": None, "jitify": False, "to_ltoir": False}
    b = {**a, "options": ["-DX=2"]}
    kernel_cache.write_manifest(path, [a], [])
    kernel_cache.write_manifest(path, [a, b], [{"module": "m", "name": "f", "signatures": ""}])
    back = kernel_cache.read_manifest(path)
    assert sorted(e["options"][0] for e in back["nvrtc"]) == ["-DX=1", "-DX=2"]
    assert back["numba"] == [{"module": "m", "name": "f", "signatures": ""}]
    assert kernel_cache.read_manifest(tmp_path / "none.json") == {"nvrtc": [], "numba": []}


def test_packaged_manifest_reads_and_is_portable():
    """The shipped manifest holds the solves' kernels with no path of the machine that made
    it (CuPy's include folders as $SITE) and CuPy's headers as a placeholder."""
    m = kernel_cache.read_manifest()
    assert len(m["nvrtc"]) > 100 and m["numba"]
    assert any("hm_pairs" in e["source"] for e in m["nvrtc"])
    for e in m["nvrtc"]:
        assert isinstance(e["source"], str) and "__global__" in e["source"]
        assert all("site-packages" not in o for o in e["options"])
        assert e["extra_source"] in (None, kernel_cache.HEADERS)
    for e in m["numba"]:
        assert e["module"].startswith("wavescat")


def test_numba_entry_compiles_the_recorded_signature():
    """A manifest entry made from argument types compiles that overload (as a pool worker
    would), after which the function runs on such arguments and sorts as NumPy does."""
    from wavescat.bem.assembly.hmatrix import cluster_tree

    f = cluster_tree._sort_segments
    rng = np.random.default_rng(1)
    perm, key = np.arange(10, dtype=np.int64), rng.integers(0, 4, 10).astype(np.float64)
    starts, sizes = np.array([0, 4], dtype=np.int64), np.array([4, 6], dtype=np.int64)
    sig = tuple(numba.typeof(a) for a in (perm, key, starts, sizes))
    entry = {"module": f.__module__, "name": f.__name__,
             "signatures": base64.b64encode(pickle.dumps([sig])).decode()}
    kind, seconds, err = kernel_cache._compile(("numba", entry))
    assert (kind, err) == ("numba", "") and seconds >= 0
    assert sig in [tuple(s) for s in f.signatures]
    out = f(perm, key, starts, sizes)
    want = np.concatenate([perm[a:a + n][np.argsort(key[a:a + n], kind="stable")]
                           for a, n in zip(starts, sizes)])
    assert np.array_equal(out, want)


def test_stale_entries_report_their_error():
    kind, seconds, err = kernel_cache._compile(("numba", {"module": "wavescat", "name": "gone",
                                                          "signatures": ""}))
    assert kind == "numba" and "AttributeError" in err


def test_signatures_of_this_package_are_found():
    from wavescat.bem.kernels import green

    green_fns = [v for v in vars(green).values() if isinstance(v, numba.core.registry.CPUDispatcher)]
    assert green_fns
    found = kernel_cache._numba_signatures()
    assert all(e["module"].startswith("wavescat") for e in found)
    for e in found:
        assert all(isinstance(s, tuple) for s in pickle.loads(base64.b64decode(e["signatures"])))


def test_warm_up_without_cupy_does_nothing(monkeypatch):
    monkeypatch.setattr(kernel_cache, "_cupy_compiler", lambda: None)
    assert kernel_cache.warm_up(force=True)["entries"] == 0


def test_packaged_manifest_is_current_for_the_h_matrix_kernels():
    """The manifest holds today's hm_pairs source for every operator and precision, and the
    block products' source: a change of kernels.cu, block_products.cu or green's CUDA makes this fail until the manifest is recorded again
    (bench/record_kernels.py on a GPU), instead of fresh machines silently compiling."""
    from wavescat.bem.assembly.hmatrix import kernels
    from wavescat.bem.kernels.green import Operator, cuda_defines

    sources = {e["source"] for e in kernel_cache.read_manifest()["nvrtc"]}
    for op in (Operator.single_layer, Operator.double_layer, Operator.adjoint_double_layer,
               Operator.hypersingular):
        for double in (True, False):
            assert cuda_defines(op, 1.0, double) + kernels._CUDA_SRC in sources, (op, double)
    # the block products of GMRES, single-precision blocks in a double and a single solve
    from wavescat.bem.assembly.hmatrix import block_products

    for real in ("double", "float"):
        assert f"typedef {real} REAL;\ntypedef float STORE;\n" + block_products._SOURCE in sources, real
