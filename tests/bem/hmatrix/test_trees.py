import numpy as np
import pytest
import scipy.sparse as sparse

from wavescat.bem.assembly.hmatrix.block_tree import box_distance, build_block_tree
from wavescat.bem.assembly.hmatrix.clouds import space_cloud
from wavescat.bem.assembly.hmatrix.cluster_tree import build_cluster_tree
from wavescat.errors import WavescatError

from .conftest import p0_space, p1_space


@pytest.mark.parametrize("leaf_size", [8, 25])
def test_cluster_tree_is_a_balanced_partition(p1_cloud, leaf_size):
    t = build_cluster_tree(p1_cloud.lo, p1_cloud.hi, leaf_size)
    assert np.array_equal(np.sort(t.perm), np.arange(p1_cloud.n))
    for lev in range(t.depth):
        st, sz = t.starts[lev], t.sizes[lev]
        # clusters of a level tile [0, n) in order, sizes within one of each other
        assert st[0] == 0 and np.all(st[1:] == st[:-1] + sz[:-1]) and st[-1] + sz[-1] == t.n
        assert sz.max() - sz.min() <= 1
        # boxes contain their dofs' supports
        owner = np.repeat(np.arange(len(st)), sz)
        lo, hi = p1_cloud.lo[t.perm], p1_cloud.hi[t.perm]
        assert np.all(lo >= t.lo[lev][owner] - 1e-12) and np.all(hi <= t.hi[lev][owner] + 1e-12)
    assert t.sizes[-1].max() <= leaf_size < t.sizes[-2].max()


@pytest.mark.parametrize("eta", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("spaces", ["P1-P1", "P0-P1"])
def test_blocks_cover_every_entry_exactly_once(eta, spaces):
    test = p1_space(3) if spaces == "P1-P1" else p0_space(3)
    tc, sc = space_cloud(test, 1), space_cloud(p1_space(3), 1)
    rt = build_cluster_tree(tc.lo, tc.hi, 16)
    ct = build_cluster_tree(sc.lo, sc.hi, 16)
    bt = build_block_tree(rt, ct, eta)
    assert np.all(bt.coverage() == 1)
    far = bt.far
    assert len(far["r0"]) > 0
    # admissible blocks satisfy min(diam) <= eta dist with a positive distance,
    # recomputed from the dofs' own supports
    for r0, m, c0, n in list(zip(far["r0"], far["m"], far["c0"], far["n"]))[::7]:
        rows, cols = rt.perm[r0:r0 + m], ct.perm[c0:c0 + n]
        blo, bhi = tc.lo[rows].min(0), tc.hi[rows].max(0)
        clo, chi = sc.lo[cols].min(0), sc.hi[cols].max(0)
        dist = box_distance(blo, bhi, clo, chi)
        assert dist > 0
        assert min(np.linalg.norm(bhi - blo), np.linalg.norm(chi - clo)) <= eta * dist + 1e-12
    # dense blocks are between leaves only
    assert bt.near["m"].max() <= 16 and bt.near["n"].max() <= 16


def _touching_supports(space):
    """(n, n) bool: the supports of P1 basis functions i and j (the triangles around vertices
    i and j) share a point, i.e. j is within two edges of i, from the mesh alone."""
    rows = np.repeat(np.arange(space.mesh.n_triangles), 3)
    star = sparse.csr_matrix((np.ones(rows.size), (rows, space.element_dofs.ravel())))  # triangle x dof
    closed = (star.T @ star) > 0  # dofs sharing a triangle (each with itself)
    return ((closed @ closed) > 0).toarray()


@pytest.mark.parametrize("eta", [2.0, 10.0])
def test_touching_supports_are_never_admissible(eta):
    """No admissible block, diagonal or not, holds a pair of dofs whose supports touch; those
    pairs (the singular and near-singular integrals) all lie in dense blocks."""
    space = p1_space(3)
    cloud = space_cloud(space, 1)
    t = build_cluster_tree(cloud.lo, cloud.hi, 8)
    bt = build_block_tree(t, t, eta)
    touching = _touching_supports(space)[np.ix_(t.perm, t.perm)]  # in cluster order
    far = bt.far
    assert len(far["r0"]) > 0
    for r0, m, c0, n in zip(far["r0"], far["m"], far["c0"], far["n"]):
        assert not touching[r0:r0 + m, c0:c0 + n].any(), (r0, m, c0, n)
    in_near = np.zeros_like(touching)
    for r0, m, c0, n in zip(bt.near["r0"], bt.near["m"], bt.near["c0"], bt.near["n"]):
        in_near[r0:r0 + m, c0:c0 + n] = True
    assert in_near[touching].all()


def test_bad_parameters_name_the_key(p1_cloud):
    with pytest.raises(WavescatError, match="leaf_size"):
        build_cluster_tree(p1_cloud.lo, p1_cloud.hi, 1)
    t = build_cluster_tree(p1_cloud.lo, p1_cloud.hi, 16)
    with pytest.raises(WavescatError, match="eta"):
        build_block_tree(t, t, -1.0)


@pytest.mark.parametrize("kd_max", [2.0, 4.0])
def test_frequency_bound_splits_large_admissible_blocks(kd_max):
    """With kd_max every admissible block but those between two leaves has k max(diam) <=
    kd_max; the partition still covers every entry once, and without the bound some
    admissible block is larger."""
    space = p1_space(3)
    cloud = space_cloud(space, 1)
    t = build_cluster_tree(cloud.lo, cloud.hi, 8)
    k = 6.0
    free = build_block_tree(t, t, 1.0, k=k, kd_max=None)
    assert np.any(k * free.far["diam"] > kd_max)
    bt = build_block_tree(t, t, 1.0, k=k, kd_max=kd_max)
    assert np.all(bt.coverage() == 1)
    leaves = (bt.far["m"] <= 8) & (bt.far["n"] <= 8)
    assert np.all((k * bt.far["diam"] <= kd_max) | leaves)
    assert len(bt.far["r0"]) > len(free.far["r0"])
    # k = 0 (Laplace) ignores the bound
    lap = build_block_tree(t, t, 1.0, k=0.0, kd_max=kd_max)
    assert len(lap.far["r0"]) == len(build_block_tree(t, t, 1.0, kd_max=None).far["r0"])
    with pytest.raises(WavescatError, match="kd_max"):
        build_block_tree(t, t, 1.0, k=k, kd_max=-1.0)
