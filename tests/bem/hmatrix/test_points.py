"""ACA on the clusters' quadrature points (hmatrix/points.py) against the dense operators and
against ACA on the dof entries."""
import numpy as np
import pytest

from wavescat.bem import operators, quadrature, spaces
from wavescat.bem.hmatrix import assemble_hmatrix
from wavescat.backend import get_backend
from wavescat.bem.hmatrix.block_tree import build_block_tree
from wavescat.bem.hmatrix.cluster_tree import build_cluster_tree
from wavescat.bem.hmatrix.clouds import space_cloud
from wavescat.bem.hmatrix.kernels import PairKernel
from wavescat.bem.hmatrix.points import PointACA, cluster_points
from wavescat.geometry.icosphere import icosphere


def wavenumber(mesh, elements_per_wavelength):
    """The wavenumber at which `mesh` has this many elements per wavelength."""
    h = np.sqrt(np.mean(mesh.areas) * 4 / np.sqrt(3))
    return 2 * np.pi / (elements_per_wavelength * h)


def test_cluster_points_hold_the_elements_touching_each_cluster():
    """Each cluster's points are those of the elements with a dof in it, each element once,
    and rpos finds every dof record's element among them."""
    space = spaces.p1(icosphere(3))
    cloud = space_cloud(space, rule=quadrature.triangle_rule(4))
    tree = build_cluster_tree(cloud.lo, cloud.hi, 16)
    rule = cloud.permuted(tree.perm).elements
    level = 3
    starts, sizes = tree.starts[level], tree.sizes[level]
    cp = cluster_points(rule, space.n_dofs, starts[::-1], sizes[::-1])
    ids = cp.ids(starts, sizes)
    assert len(np.unique(ids)) == len(starts)
    for c, s, z in zip(ids, starts, sizes):
        elems = cp.elems[cp.estart[c]:cp.estart[c] + cp.ecount[c]]
        want = np.flatnonzero(np.any((rule.dofs >= s) & (rule.dofs < s + z), axis=1))
        assert np.array_equal(elems, want)
        lo, hi = cp.offsets[s], cp.offsets[s + z]
        found = elems[cp.rpos[cp.rstart[c]:cp.rstart[c] + hi - lo]]
        assert np.array_equal(found, cp.records[lo:hi] // rule.dofs.shape[1])
    first, count = cp.spans(ids)
    assert np.array_equal(count, cp.ecount[ids] * rule.pts.shape[1])
    assert np.array_equal(first, cp.estart[ids] * rule.pts.shape[1])


CASES = [("single_layer", "P1", 10, 1.0), ("double_layer", "P1", 10, 1.0),
         ("adjoint_double_layer", "P1", 10, 1.0), ("hypersingular", "P1", 10, 1.0),
         ("hypersingular", "P1", 40, 1.0),  # over-resolved: W's curls cancel the most
         ("hypersingular", "P1", 10, 1.0 + 0.2j), ("hypersingular", "P1", 10, 0.0),
         ("single_layer", "P0", 10, 0.0), ("double_layer", "P0", 10, 1.0)]


@pytest.mark.parametrize("name, kind, epw, scale", CASES)
def test_points_are_as_accurate_as_dof_entries(name, kind, epw, scale):
    """The point route applies the dense operator as accurately as ACA on the dof entries
    (within 30%), with the same storage (within 5%) and fewer kernel evaluations in ACA:
    Helmholtz, damped and Laplace (scale 0) wavenumbers, P0 and P1, and W on a mesh four
    times finer than the wavelength needs."""
    space = spaces.function_space(icosphere(3), kind)
    k = wavenumber(space.mesh, epw) * scale
    A = np.asarray(operators.assemble(name, space, space, k, backend="cpu"))
    x = np.random.default_rng(0).standard_normal((space.n_dofs, 2))
    errors, reports = {}, {}
    for route in (False, True):
        H = assemble_hmatrix(name, space, space, k, backend="cpu", eps=1e-4, leaf_size=16,
                             point_aca=route)
        errors[route] = np.linalg.norm(H @ x - A @ x) / np.linalg.norm(A @ x)
        reports[route] = H.report
    assert reports[True]["blocks"]["admissible"] > 300
    assert errors[True] <= 1.3 * errors[False], errors
    assert errors[True] <= 1e-4
    assert reports[True]["stored_entries"] <= 1.05 * reports[False]["stored_entries"]
    near = {r: reports[r]["kernel_evaluations"] - reports[r]["aca_kernel_evaluations"]
            for r in reports}
    assert near[True] == near[False]  # the same dense near field
    assert reports[True]["aca_kernel_evaluations"] < reports[False]["aca_kernel_evaluations"]


@pytest.mark.parametrize("name, k, precision", [("double_layer", 3.0 + 0.3j, "double"),
                                                ("hypersingular", 3.0, "double"),
                                                ("hypersingular", 3.0, "single"),
                                                ("single_layer", 0.0, "double")])
def test_point_kernels_through_the_cuda_source_match_the_cpu(emulated_gpu, name, k, precision):
    """The GPU's point route (point_pairs and dof_sums, run by the g++ emulation) against the
    CPU's: point entries, dof sums of random factors (W: six weights, three for Laplace) and
    the compressed blocks."""
    space = spaces.p1(icosphere(2))
    cloud = space_cloud(space, rule=quadrature.triangle_rule(4))
    tree = build_cluster_tree(cloud.lo, cloud.hi, 8)
    far = build_block_tree(tree, tree, 2.0, k=abs(k)).far
    rule = cloud.permuted(tree.perm).elements
    routes = {}
    for be, prec in ((get_backend("cpu"), "double"), (emulated_gpu, precision)):
        pc = cloud.permuted(tree.perm)
        routes[be.name] = PointACA(PairKernel(name, k, pc, pc, be, prec), rule, rule,
                                   (space.n_dofs,) * 2, far)
    cpu, gpu = routes["cpu"], routes["gpu"]
    tol = 1e-12 if precision == "double" else 1e-5
    rng = np.random.default_rng(0)
    total = int(cpu.sides[0][0].ecount.sum()) * cpu.sides[0][0].nq
    ti, sj = rng.integers(0, total, 500), rng.integers(0, total, 500)
    want = cpu(ti, sj)
    assert np.linalg.norm(gpu(ti, sj) - want) <= tol * np.linalg.norm(want)
    ids = np.arange(min(8, len(far["r0"])))
    L = int(max(far["m"][ids].max(), far["n"][ids].max()))
    Lp = cpu.point_length(far, ids)
    P = rng.standard_normal((len(ids), Lp, 3)).astype(cpu.kernel.dtype)
    want = cpu.dof_sums(0, P, far["r0"][ids], far["m"][ids], L)
    assert want.shape == (len(ids), L, 3 * cpu.comps)
    got = gpu.dof_sums(0, P.astype(gpu.kernel.dtype), far["r0"][ids], far["m"][ids], L)
    assert np.linalg.norm(got - want) <= tol * np.linalg.norm(want)
    blocks = {}
    for side, route in routes.items():
        U, V, rank, *_ = route.compress(far, ids, 1e-6, route.kernel.dtype, L, 0.0)
        blocks[side] = np.einsum("blk,bck->blc", U, V)
    assert np.linalg.norm(blocks["gpu"] - blocks["cpu"]) <= max(tol, 1e-6) * np.linalg.norm(blocks["cpu"])
