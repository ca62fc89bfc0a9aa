"""CPU (Numba) and GPU (CuPy) twins agree; device memory faults are user errors."""
import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds
from wavescat.bem.assembly.hmatrix.kernels import OPERATORS, PairKernel
from wavescat.errors import WavescatError

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("precision", ["double", "single"])
@pytest.mark.parametrize("k", [0.0, 5.0])
@pytest.mark.parametrize("name", list(OPERATORS))
def test_pair_kernels_agree(p1_cloud, name, k, precision):
    rng = np.random.default_rng(0)
    ti = rng.integers(0, p1_cloud.n, 20000)
    sj = rng.integers(0, p1_cloud.n, 20000)
    cpu = PairKernel(name, k, p1_cloud, p1_cloud, get_backend("cpu"), "double")(ti, sj)
    gk = PairKernel(name, k, p1_cloud, p1_cloud, get_backend("gpu"), precision)
    gpu = gk.backend.asnumpy(gk(gk.xp.asarray(ti), gk.xp.asarray(sj)))
    tol = 1e-12 if precision == "double" else 2e-5
    assert np.linalg.norm(gpu - cpu) <= tol * np.linalg.norm(cpu)


@pytest.mark.parametrize("name", ["single_layer", "hypersingular"])
def test_cpu_and_gpu_hmatrices_agree(vertex_cloud, p1_cloud, name):
    cloud = p1_cloud if name == "hypersingular" else vertex_cloud
    x = np.random.default_rng(1).standard_normal(cloud.n)
    ys = [assemble_from_clouds(name, 3.0, cloud, cloud, backend=b, eps=1e-6, leaf_size=16,
                               eta=2.0).matvec(x) for b in ("cpu", "gpu")]
    assert np.linalg.norm(ys[0] - ys[1]) <= 1e-5 * np.linalg.norm(ys[0])


def test_single_precision_on_gpu(vertex_cloud):
    x = np.random.default_rng(2).standard_normal(vertex_cloud.n)
    ref = assemble_from_clouds("single_layer", 0.0, vertex_cloud, vertex_cloud, backend="cpu",
                               eps=1e-6, leaf_size=32).matvec(x)
    H = assemble_from_clouds("single_layer", 0.0, vertex_cloud, vertex_cloud, backend="gpu",
                             precision="single", eps=1e-4, leaf_size=32)
    assert H.dtype == np.float32
    assert np.linalg.norm(H.matvec(x) - ref) <= 1e-3 * np.linalg.norm(ref)


def test_too_little_device_memory_is_a_clear_error(vertex_cloud, monkeypatch):
    from wavescat.bem.assembly.hmatrix import host_blocks

    monkeypatch.setattr(host_blocks, "device_free_bytes", lambda be, d: 1 << 20)
    with pytest.raises(WavescatError, match=r"needs about .* GiB .* available"):
        assemble_from_clouds("single_layer", 0.0, vertex_cloud, vertex_cloud, backend="gpu")


def test_device_vectors_stay_on_the_device(vertex_cloud):
    """The solve's GMRES passes CuPy (n, r) blocks: H @ X returns a CuPy array equal to
    the host product."""
    H = assemble_from_clouds("single_layer", 2.0, vertex_cloud, vertex_cloud, backend="gpu",
                             eps=1e-6, leaf_size=32)
    xp = get_backend("gpu").xp
    X = np.random.default_rng(4).standard_normal((vertex_cloud.n, 2))
    Y = H @ xp.asarray(X)
    assert not isinstance(Y, np.ndarray) and Y.shape == X.shape
    assert np.allclose(xp.asnumpy(Y), H.matvec(X), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["single_layer", "double_layer", "hypersingular"])
def test_blocks_shared_over_two_gpus_give_the_same_matrix(vertex_cloud, p1_cloud, name):
    """devices=2 partitions the blocks over two GPUs: the product (host and device vectors)
    matches the one-GPU H-matrix (to the ACA tolerance: batches of other composition may
    pivot differently), and each GPU holds a share of the blocks. A lost or doubled block
    would be an O(1) error."""
    be = get_backend("gpu")
    if be.device_count < 2:
        pytest.skip("needs two GPUs")
    cloud = p1_cloud if name == "hypersingular" else vertex_cloud
    opts = dict(backend="gpu", eps=1e-6, leaf_size=16, eta=2.0)
    one = assemble_from_clouds(name, 3.0, cloud, cloud, devices=1, **opts)
    two = assemble_from_clouds(name, 3.0, cloud, cloud, devices=2, **opts)
    assert len(two.parts) == 2 and two.report["devices"] == 2
    assert {p.device_id for p in two.parts} == {0, 1}
    X = np.random.default_rng(5).standard_normal((cloud.n, 3))
    ref = one.matvec(X)
    assert np.linalg.norm(two.matvec(X) - ref) <= 1e-5 * np.linalg.norm(ref)
    Y = two @ be.xp.asarray(X)
    assert np.linalg.norm(be.asnumpy(Y) - ref) <= 1e-5 * np.linalg.norm(ref)
    assert all(sum(g.stored_entries() for g in p.dense + p.lowrank if g is not None) > 0
               for p in two.parts)
