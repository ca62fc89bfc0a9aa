"""H-matrix against the dense matrix of the same entries: ||(H - A) x|| <= 10 eps ||A x||."""
import numpy as np
import pytest
import scipy.sparse.linalg as spla

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds
from wavescat.bem.assembly.hmatrix.kernels import OPERATORS, PairKernel
from wavescat.errors import WavescatError

from .conftest import dense, workflow_hmatrix

EPS = [1e-3, 1e-4, 1e-6]
_DENSE = {}


def dense_of(cloud, name, k, backend):
    key = (id(cloud), name, k, backend.name)
    if key not in _DENSE:
        _DENSE[key] = dense(PairKernel(name, k, cloud, cloud, backend), cloud.n, cloud.n)
    return _DENSE[key]


def relative_matvec_error(H, A, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(A.shape[1]) + 1j * rng.standard_normal(A.shape[1])
    return np.linalg.norm(H.matvec(x) - A @ x) / np.linalg.norm(A @ x)


@pytest.mark.parametrize("k", [0.0, 3.0])
@pytest.mark.parametrize("name", list(OPERATORS))
def test_galerkin_cloud_operators(p1_cloud, name, k, backend):
    """All four operators, Laplace and Helmholtz, P1 supports on a 642-dof sphere."""
    A = dense_of(p1_cloud, name, k, get_backend("cpu"))
    for eps in EPS:
        H = assemble_from_clouds(name, k, p1_cloud, p1_cloud, backend=backend, eps=eps,
                                 leaf_size=16, eta=2.0)
        assert relative_matvec_error(H, A) <= 10 * eps, (name, k, eps)
        assert H.report["blocks"]["admissible"] > 0


@pytest.mark.parametrize("name", ["single_layer", "double_layer"])
def test_larger_point_cloud_at_the_workflow_settings(vertex_cloud, name, backend):
    """2562 dofs with the admissibility eta and leaf size the workflow solves with (and its
    eps among the tolerances): deeper trees, compression below 1."""
    k = 4.0
    A = dense_of(vertex_cloud, name, k, get_backend("cpu"))
    opts = workflow_hmatrix()
    for eps in sorted({*EPS, opts["eps"]}):
        H = assemble_from_clouds(name, k, vertex_cloud, vertex_cloud, backend=backend, eps=eps,
                                 leaf_size=opts["leaf_size"], eta=opts["eta"])
        assert H.report["blocks"]["admissible"] > 0
        assert relative_matvec_error(H, A) <= 10 * eps, (name, eps)
    assert H.report["compression_ratio"] < 0.8


def test_levels_compressed_in_many_chunks(p1_cloud, backend):
    """A small working-memory budget splits every level into many ACA chunks, whose blocks
    differ in size and whose rank buckets differ in width: the regrouped factors still give
    the same operator."""
    A = dense_of(p1_cloud, "single_layer", 3.0, get_backend("cpu"))
    opts = dict(backend=backend, eps=1e-4, leaf_size=16, eta=2.0)
    H = assemble_from_clouds("single_layer", 3.0, p1_cloud, p1_cloud, work_bytes=1 << 18, **opts)
    assert relative_matvec_error(H, A) <= 1e-3
    one = assemble_from_clouds("single_layer", 3.0, p1_cloud, p1_cloud, **opts)
    assert sum(len(g.rank) for g in H.groups() if g.D is None) == \
        sum(len(g.rank) for g in one.groups() if g.D is None)


def test_matvec_equals_the_assembled_blocks(p1_cloud):
    H = assemble_from_clouds("single_layer", 2.0, p1_cloud, p1_cloud, backend="cpu", eps=1e-4,
                             leaf_size=16, eta=2.0)
    x = np.random.default_rng(3).standard_normal(H.shape[1])
    assert np.allclose(H.matvec(x), H.to_dense() @ x, rtol=1e-12, atol=1e-14)
    op = H.aslinearoperator()
    assert isinstance(op, spla.LinearOperator) and op.shape == H.shape
    assert np.allclose(op @ x, H.matvec(x))
    X = np.stack([x, 2 * x], axis=1)
    assert np.allclose(H.matvec(X)[:, 1], 2 * H.matvec(x))


def test_report_has_the_figures(p1_cloud):
    H = assemble_from_clouds("hypersingular", 0.0, p1_cloud, p1_cloud, backend="cpu",
                             eps=1e-4, leaf_size=16, eta=2.0)
    r = H.report
    for key in ("compression_ratio", "device_bytes", "host_bytes", "rank_histogram",
                "time_s", "entries_per_s", "kernel_evaluations_per_s"):
        assert key in r
    for key in ("trees", "near_field", "aca", "transfers", "total"):
        assert r["time_s"][key] >= 0
    assert sum(r["rank_histogram"].values()) == r["blocks"]["admissible"]
    assert 0 < r["compression_ratio"] < 1 and r["dtype"] == "float64"


def test_correction_lands_in_the_dense_blocks(p1_cloud):
    """A sparse correction on the diagonal (the 'smooth diagonal' of a collocation
    kernel) is added exactly."""
    n = p1_cloud.n
    diag = np.linspace(1.0, 2.0, n)
    corr = (np.arange(n), np.arange(n), diag)
    A = dense_of(p1_cloud, "single_layer", 0.0, get_backend("cpu")) + np.diag(diag)
    H = assemble_from_clouds("single_layer", 0.0, p1_cloud, p1_cloud, correction=corr,
                             backend="cpu", eps=1e-6, leaf_size=16, eta=2.0)
    assert relative_matvec_error(H, A) <= 1e-5


def test_parameter_errors_name_the_key(p1_cloud):
    for kw, key in [({"eps": 0.0}, "eps"), ({"eta": -1.0}, "eta"), ({"leaf_size": 1}, "leaf_size"),
                    ({"kd_max": 0.0}, "kd_max"),
                    ({"precision": "half"}, "precision")]:
        with pytest.raises(WavescatError, match=key):
            assemble_from_clouds("single_layer", 0.0, p1_cloud, p1_cloud, backend="cpu", **kw)
    with pytest.raises(WavescatError, match="operator"):
        assemble_from_clouds("volume", 0.0, p1_cloud, p1_cloud, backend="cpu")


@pytest.mark.parametrize("name", ["single_layer", "double_layer", "hypersingular"])
def test_frequency_bound_keeps_the_accuracy(vertex_cloud, name, backend):
    """A tight frequency bound (kd_max) turns the large admissible blocks into many smaller
    ones: lower ranks, the same accuracy against the dense matrix."""
    k = 8.0
    A = dense_of(vertex_cloud, name, k, get_backend("cpu"))
    opts = workflow_hmatrix()
    eps = opts["eps"]
    free = assemble_from_clouds(name, k, vertex_cloud, vertex_cloud, backend=backend, eps=eps,
                                leaf_size=opts["leaf_size"], eta=opts["eta"], kd_max=None)
    H = assemble_from_clouds(name, k, vertex_cloud, vertex_cloud, backend=backend, eps=eps,
                             leaf_size=opts["leaf_size"], eta=opts["eta"], kd_max=6.0)
    assert H.report["blocks"]["admissible"] > free.report["blocks"]["admissible"]
    assert H.report["rank_max"] < free.report["rank_max"]
    assert relative_matvec_error(H, A) <= 10 * eps


def test_each_device_gets_the_corrections_of_its_dense_blocks():
    """Several devices share the dense blocks level by level: each gets exactly the singular
    corrections that fall in its blocks, with the blocks numbered within its share, and
    together they get every correction once (one device gets them all, as they are)."""
    from wavescat.bem.assembly.hmatrix.assembly import _part_correction, _share

    rng = np.random.default_rng(5)
    near = {"r0": np.arange(40) * 3, "level": np.repeat([3, 4], 20)}
    block = rng.integers(0, 40, 500).astype(np.int32)
    corr = (rng.integers(0, 99, 500), rng.integers(0, 99, 500), rng.standard_normal(500), block)
    assert _part_correction(corr, _share(near, 0, 1), 40) is corr
    seen = []
    for d in range(3):
        pick = _share(near, d, 3)
        rows, cols, vals, local = _part_correction(corr, pick, 40)
        assert np.array_equal(np.sort(vals), np.sort(corr[2][np.isin(block, pick)]))
        assert np.array_equal(pick[local], block[np.isin(block, pick)])  # local numbering
        seen.append(vals)
    assert np.array_equal(np.sort(np.concatenate(seen)), np.sort(corr[2]))
    # a share of the first blocks in order (an MPI rank's) is not every block
    rows, cols, vals, local = _part_correction(corr, np.arange(10), 40)
    assert np.array_equal(np.sort(vals), np.sort(corr[2][block < 10]))


def test_rank_buckets_pad_at_most_an_eighth():
    """Ranks up to 16 are stored as they are, larger ones in eight buckets an octave."""
    from wavescat.bem.assembly.hmatrix.batched_aca import rank_bucket

    r = np.arange(0, 5000)
    b = rank_bucket(r)
    assert np.array_equal(b[:17], r[:17])
    assert np.all(b >= r) and np.all(np.diff(b) >= 0)
    assert np.all(b[17:] - r[17:] < r[17:] / 8)
    for lo in (16, 32, 64, 128, 256, 512, 1024, 2048):  # eight buckets in each octave
        assert len(np.unique(b[lo + 1:2 * lo + 1])) == 8
