"""One solve over several MPI ranks (solve/parallel.py, bem/assembly/hmatrix/distributed.py): the
ranks' shares of the blocks, their partial operators, and a 2-rank solve under mpiexec
against the 1-rank solve."""
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest

from wavescat import cli
from wavescat.bem.assembly.hmatrix import assemble_hmatrix, batched_aca
from wavescat.bem.assembly.hmatrix.assembly import block_plan
from wavescat.bem.assembly.hmatrix.clouds import space_cloud
from wavescat.bem.assembly.hmatrix.batched_aca import near_block_of
from wavescat.bem.assembly.hmatrix.distributed import (PairFilter, distribution, near_units,
                                                       share_of)
from wavescat.bem.discretisation import pairs
from wavescat.bem.discretisation import spaces
from wavescat.geometry.icosphere import icosphere

# MPICH's wheel puts mpiexec beside the environment's python (pip install -e '.[test]')
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
# a small sphere whose H-matrices have admissible blocks to share: small leaves, eta 3
HMATRIX = {"leaf_size": 8, "eta": 3.0}
K = 2.0


@pytest.fixture(scope="module")
def space():
    return spaces.p1(icosphere(2))


@pytest.mark.parametrize("name", ["double_layer", "hypersingular"])
def test_shares_take_every_block_once_and_keep_mirrors_together(space, name):
    cloud = space_cloud(space)
    plan = block_plan(name, K, cloud, cloud, eta=HMATRIX["eta"], leaf_size=HMATRIX["leaf_size"])
    near, far = plan.blocks.near, plan.blocks.far
    assert plan.mirrored == (name == "hypersingular") and len(plan.compressed) > 20
    unit = near_units(near)
    assert np.any(unit != np.arange(len(unit)))  # one space: blocks paired with mirrors
    for size in (1, 2, 3, 4):
        shares = [share_of(plan, r, size) for r in range(size)]
        for key, every in (("near", np.arange(len(near["r0"]))), ("far", plan.compressed)):
            taken = np.concatenate([getattr(s, key) for s in shares])
            assert np.array_equal(np.sort(taken), np.sort(every))  # each block exactly once
        for s in shares:  # a block and its mirror on one rank
            assert np.isin(unit[s.near], s.near).all()
        entries = [int(np.sum(near["m"][s.near] * near["n"][s.near])) for s in shares]
        assert max(entries) <= 1.6 * sum(entries) / size  # balanced within a unit or two
        for level in np.unique(far["level"][plan.compressed]):  # admissible blocks dealt round
            counts = [np.sum(far["level"][s.far] == level) for s in shares]
            assert max(counts) - min(counts) <= 1


def test_pair_filter_keeps_the_pairs_with_an_entry_in_the_ranks_dense_blocks(space):
    """A rank computes the corrections of the element pairs with an entry in one of its dense
    blocks: the filter's pairs are those whose entries' blocks (near_block_of, entry by
    entry) include one of the rank's, and the ranks' pairs cover every pair."""
    cloud = space_cloud(space)
    plan = block_plan("double_layer", K, cloud, cloud, eta=HMATRIX["eta"],
                      leaf_size=HMATRIX["leaf_size"])
    pa, pb = (np.concatenate(x) for x in zip(pairs.touching_pairs(space.mesh),
                                             pairs.near_pairs(space.mesh, 2.0)))
    rows = plan.rows.iperm[space.element_dofs][pa][:, :, None]
    cols = plan.cols.iperm[space.element_dofs][pb][:, None, :]
    rows, cols = np.broadcast_arrays(rows, cols)
    block = near_block_of(plan.blocks.near, rows.ravel(), cols.ravel(), strict=False)
    block = block.reshape(len(pa), -1)
    size, covered = 3, np.zeros(len(pa), bool)
    for rank in range(size):
        share = share_of(plan, rank, size)
        keep = PairFilter(plan, share, space, space)
        kept = keep(pa, pb)
        assert np.array_equal(kept, np.isin(block, share.near).any(axis=1))
        assert 0 < kept.sum() < len(pa)
        covered |= kept
        # the search among the rank's own elements finds exactly the pairs the filter keeps
        found = [pairs.touching_kept(space.mesh, keep)[:2], pairs.near_kept(space.mesh, 2.0, keep)]
        got = {(int(a), int(b)) for fa, fb in found for a, b in zip(fa, fb)}
        assert len(got) == sum(len(f[0]) for f in found)  # each pair once
        assert got == {(int(a), int(b)) for a, b in zip(pa[kept], pb[kept])}
        kinds = pairs.touching_kept(space.mesh, keep)[2:]
        whole = pairs.kept(keep, *pairs.touching_pairs(space.mesh), *pairs.touching_kinds(space.mesh))
        order = np.lexsort(found[0][::-1]), np.lexsort(whole[1::-1])
        for x, y in zip(kinds, whole[2:]):
            assert np.array_equal(np.asarray(x)[order[0]], np.asarray(y)[order[1]])
    assert covered.all()


def test_a_rank_searches_the_pairs_of_part_of_the_mesh():
    """A rank's dense blocks reach the test elements of its run of rows and their near
    neighbours: on 4 ranks each searches well under half of the mesh's elements, and
    together they reach every element."""
    space = spaces.p1(icosphere(4))
    cloud = space_cloud(space)
    plan = block_plan("double_layer", K, cloud, cloud, eta=HMATRIX["eta"],
                      leaf_size=HMATRIX["leaf_size"])
    reached = [PairFilter(plan, share_of(plan, r, 4), space, space).elements for r in range(4)]
    assert max(len(e) for e in reached) < 0.45 * space.mesh.n_triangles
    assert np.array_equal(np.unique(np.concatenate(reached)), np.arange(space.mesh.n_triangles))


@pytest.mark.parametrize("name", ["double_layer", "hypersingular"])
def test_the_ranks_partial_operators_sum_to_the_whole(space, name, monkeypatch):
    """Each rank assembles only its blocks and the corrections of its element pairs: the
    ranks' matrices add up to the one-process H-matrix, and none holds it all. Double
    storage: the identity is exact to rounding, which single storage's one rounding per
    entry would blur (a share's ACA may differ from the whole's in the last bits). Every
    block by its point matrix: the CPU's probes of a level (batched_aca._Route) see other
    blocks in a share than in the whole, and the two ways agree to the tolerance only."""
    monkeypatch.setattr(batched_aca._Route, "PROBE", 10**9)
    opts = {**HMATRIX, "storage": "double"}
    whole = assemble_hmatrix(name, space, space, K, backend="cpu", **opts)
    parts = [assemble_hmatrix(name, space, space, K, backend="cpu", devices=1,
                              distribution=distribution(SimpleNamespace(rank=r, size=2)),
                              **opts) for r in range(2)]
    A = whole.to_dense()
    assert np.linalg.norm(sum(p.to_dense() for p in parts) - A) <= 1e-12 * np.linalg.norm(A)
    stored = [p.report["storage_bytes"] for p in parts]
    assert max(stored) < 0.6 * whole.report["storage_bytes"]


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install -e '.[mpi]' brings MPICH's)")
def test_two_ranks_under_mpiexec_give_the_far_field_of_one(tmp_path, space):
    icosphere(2).write(tmp_path / "mesh.msh")
    args = ["--medium", json.dumps({"sound_speed": 1500.0}), "--mesh", str(tmp_path / "mesh.msh"),
            "--frequency", repr(K * 1500.0 / (2 * np.pi))]

    def case(ranks):
        return json.dumps({"incident": {"direction": [0, 0, 1]},
                           "receivers": {"plane": "xz", "count": 37},
                           "solver": {"operator_format": "hmatrix", "backend": "cpu",
                                      "ranks": ranks, "hmatrix": HMATRIX}})

    assert cli.main(["solve", "--case", case(1), *args, "--out", str(tmp_path / "one.h5")]) == 0
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "wavescat", "solve",
                           "--case", case(2), *args, "--out", str(tmp_path / "two.h5")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    with h5py.File(tmp_path / "one.h5") as one, h5py.File(tmp_path / "two.h5") as two:
        F1, F2 = one["far_field"][()], two["far_field"][()]
        assert np.array_equal(one["iterations"][()], two["iterations"][()])
        its = int(one["iterations"][()].sum())
        par1, par2 = (json.loads(f.attrs["parallel"]) for f in (one, two))
    assert np.linalg.norm(F2 - F1) <= 1e-6 * np.linalg.norm(F1)
    assert par1["ranks"] == 1 and par2["ranks"] == 2
    whole = par1["per_rank"][0]["operator_bytes"]
    assert [r["rank"] for r in par2["per_rank"]] == [0, 1]
    assert all(r["operator_bytes"] < 0.6 * whole for r in par2["per_rank"])
    assert par2["reductions"]["calls"] > 0 and par2["reductions"]["method"] == "mpi"
    # every rank times GMRES's products and, of them, the boundary operators' part
    for pr in (r["products"] for r in par1["per_rank"] + par2["per_rank"]):
        assert pr["count"] >= its and 0 < pr["operator_seconds"] < pr["seconds"]


@pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install -e '.[mpi]' brings MPICH's)")
def test_an_error_on_one_rank_stops_every_rank(tmp_path):
    """Rank 1 is given a mesh that does not exist: it says so and aborts the run, and rank 0,
    which would otherwise wait in a collective for ever, is stopped with it."""
    icosphere(2).write(tmp_path / "mesh.msh")
    case = json.dumps({"solver": {"operator_format": "hmatrix", "backend": "cpu", "ranks": 2,
                                  "hmatrix": HMATRIX}})

    def rank(mesh):
        return ["-n", "1", sys.executable, "-m", "wavescat", "solve", "--case", case,
                "--medium", "{}", "--mesh", str(mesh), "--frequency", "300",
                "--out", str(tmp_path / "out.h5")]

    done = subprocess.run([MPIEXEC, *rank(tmp_path / "mesh.msh"), ":",
                           *rank(tmp_path / "missing.msh")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode != 0
    assert "(rank 1 of 2): error: MeshError: mesh file" in done.stderr + done.stdout
    assert not (tmp_path / "out.h5").exists()


def test_a_process_assembles_on_one_gpu_of_several(monkeypatch, caplog):
    """With several GPUs visible a solve's process assembles its H-matrices on one (spread
    over the GPUs in one process the assembly was slower: issue 28), and a one-rank solve says
    that solver.ranks uses them all."""
    from wavescat.backend import Backend
    from wavescat.configuration.case import Case
    from wavescat.solve import driver

    seen = []

    def assemble(name, trial, test, k, **options):
        seen.append(options.get("devices"))
        raise StopIteration  # the options are all this test needs

    monkeypatch.setattr(driver, "get_backend", lambda _name: Backend("cpu", np, "two", 2))
    monkeypatch.setattr(driver, "assemble_hmatrix", assemble)
    case = Case.from_dict({"incident": {"direction": [0, 0, 1]},
                           "receivers": {"plane": "xz", "count": 5},
                           "solver": {"operator_format": "hmatrix"}},
                          {"sound_speed": 1500.0, "density": 1000.0})
    with pytest.raises(StopIteration):
        driver.assemble_system(case, icosphere(1), 1.0)
    assert seen == [1]
    assert "2 GPUs visible: this solve runs on one; solver.ranks: 2" in caplog.text
    with pytest.raises(StopIteration):  # a benchmark's own choice stays
        driver.assemble_system(case, icosphere(1), 1.0, hmatrix_options={"devices": 2})
    assert seen == [1, 2]


def test_a_rank_bound_to_fewer_cores_than_its_share_says_so(monkeypatch, caplog):
    """Two unbound ranks of an 8-thread job on 8 CPUs take 4 threads each, quietly; a rank
    that the launcher bound to one CPU (Open MPI's mpiexec does so for two ranks) takes one
    and warns, naming the launcher that does not bind."""
    import numba
    from threadpoolctl import threadpool_limits

    from wavescat.solve import parallel

    restore = threadpool_limits(limits=None)  # share_cores limits BLAS: undone below
    threads = numba.get_num_threads()

    def shared(cpus):
        monkeypatch.setattr(parallel.os, "sched_getaffinity", lambda _pid: set(cpus))
        local = SimpleNamespace(size=2, allgather=lambda mine: [mine, sorted(cpus)])
        return parallel.share_cores(SimpleNamespace(local=local, rank=1))

    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    try:
        assert shared(range(8)) == 4 and "bound to" not in caplog.text
        monkeypatch.setenv("OMP_NUM_THREADS", "8")
        assert shared({3}) == 1
    finally:
        numba.set_num_threads(threads)
        restore.restore_original_limits()
    assert "rank 1 is bound to 1 CPU(s) of its share of 4 threads" in caplog.text
    assert 'mpiexec --bind-to none' in caplog.text
