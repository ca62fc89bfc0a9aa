"""The block-triangular preconditioner of the Müller system
(bem/formulations/muller_preconditioner.py): the preconditioned product is A P^{-1}, the
preconditioned gas sphere matches the exact series as the unpreconditioned one does, in far
fewer GMRES iterations (counts are deterministic), on the dense and the H-matrix format,
and the setting's choices."""
import dataclasses
import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from wavescat.bem.assembly.hmatrix import assemble_hmatrix
from wavescat.bem.discretisation.spaces import p1
from wavescat.bem.formulations.burton_miller import plane_wave_data
from wavescat.bem.formulations import muller_preconditioner
from wavescat.bem.formulations.muller_preconditioner import (HierarchicalBlockTriangular, chosen,
                                                             dense_limit, dense_of, dof_points,
                                                             factor_dtype, restricted)
from wavescat.bem.formulations.osrc import mass_and_stiffness
from wavescat.bem.formulations.transmission import MullerTransmission
from wavescat.bem.linalg.gmres import gmres
from wavescat.configuration.case import Case
from wavescat.errors import InputError
from wavescat.geometry.icosphere import icosphere
from wavescat.geometry.volume import match_volume
from wavescat.reference import fluid_sphere
from wavescat.solve.driver import assemble_system, boundary_operator, solve_frequency
from wavescat.surface import SurfaceMesh

_spec = importlib.util.spec_from_file_location(
    "scattering_tests", Path(__file__).with_name("test_scattering.py"))
_scattering = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_scattering)
gpu_backend = _scattering.gpu_backend  # the GPU, or the CUDA emulation standing in for it

C = 1500.0
MEDIUM = {"sound_speed": C, "density": 1000.0}
G, H = 0.0012, 0.22  # a gas body
KA = 1.6  # interior k1 a = 7.3: a gas cavity about 2.3 interior wavelengths across
D = np.array([0.0, 0.6, 0.8])


@pytest.fixture(scope="module")
def gas_sphere():
    """The unit sphere (icosphere of 642 vertices, offset to the exact volume) and its six
    dense operators at k and k1."""
    mesh = match_volume(icosphere(3), 4 / 3 * math.pi)[0]
    space = p1(mesh)
    ops = {}
    for i, kk in enumerate((KA, KA / H)):
        for sym, name in (("V", "single_layer"), ("K", "double_layer"), ("W", "hypersingular")):
            ops[f"{sym}{i}"] = boundary_operator(name, space, kk, operator_format="dense",
                                                 backend="cpu", precision="double")
    return space, ops


def _system(space, ops, preconditioner):
    return MullerTransmission(ops, mass_and_stiffness(space)[0], KA, G,
                              preconditioner=preconditioner, points=dof_points(space))


@pytest.fixture
def small_leaves(monkeypatch):
    """HODLR leaves of at most 48 vertices: a 642-vertex sphere gets four levels."""
    monkeypatch.setattr(HierarchicalBlockTriangular, "leaf_size", 48)


def _far_field_error(space, x):
    from wavescat.bem.formulations import FluidMuller, boundary_from

    dirs = np.array([[math.sin(t), 0.0, math.cos(t)] for t in np.linspace(0, math.pi, 19)])
    form = FluidMuller(boundary_from({"kind": "fluid", "density_ratio": G,
                                      "sound_speed_ratio": H}))
    far = np.asarray(form.far_field(space, dirs, KA)) @ x
    exact = fluid_sphere.far_field(KA, 1.0, D, dirs, density_ratio=G, sound_speed_ratio=H)
    return np.linalg.norm(far[:, 0] - exact) / np.linalg.norm(exact)


def test_preconditioned_product_is_a_times_p_inverse(gas_sphere):
    space, ops = gas_sphere
    system = _system(space, ops, "block_triangular")
    rng = np.random.default_rng(0)
    z = rng.standard_normal((2 * space.n_dofs, 2)) + 1j * rng.standard_normal((2 * space.n_dofs, 2))
    y = system.solution(z)
    np.testing.assert_allclose(system.matvec(z), system.unpreconditioned(y), rtol=0,
                               atol=1e-9 * np.abs(z).max())
    # P y = z, P the block triangle: A y less the Dirichlet rows' coupling A_DN y_N
    n = space.n_dofs
    only_w = np.zeros_like(y)
    only_w[n:] = y[n:]
    p_y = system.unpreconditioned(y)
    p_y[:n] -= system.unpreconditioned(only_w)[:n]
    np.testing.assert_allclose(p_y, z, rtol=0, atol=1e-8 * np.abs(z).max())


def test_gas_sphere_matches_series_in_few_iterations(gas_sphere):
    space, ops = gas_sphere
    results = {}
    for name in ("none", "block_triangular"):
        system = _system(space, ops, name)
        rhs = system.rhs(*plane_wave_data(space, KA, D[None]))
        res = gmres(system.matvec, rhs, tol=1e-8, restart=500, maxiter=500)
        x = system.solution(res.x)
        assert np.linalg.norm(system.unpreconditioned(x) - rhs) <= 1e-7 * np.linalg.norm(rhs)
        results[name] = (int(res.iterations[0]), _far_field_error(space, x))
    (it_none, err_none), (it_pc, err_pc) = results["none"], results["block_triangular"]
    assert it_none >= 20, results  # measured 23: the gas cavity's modes spread the spectrum
    assert it_pc <= 6, results  # measured 4
    assert err_pc < 1e-3 and abs(err_pc - err_none) < 1e-6, results  # measured 1.65e-4


def test_hodlr_preconditioner_is_the_block_triangle_at_a_tight_truncation(
        gas_sphere, small_leaves, monkeypatch):
    """HODLR inverses truncated at 1e-9 apply the dense factors' P^{-1} (to 1e-6), in
    O(n r log n) memory: the peeling, the Woodbury factors and the transposed solve of the
    Neumann block all exact but for the truncation."""
    space, ops = gas_sphere
    monkeypatch.setattr(muller_preconditioner, "HODLR_TOL", 1e-9)
    exact, approx = _system(space, ops, "block_triangular"), _system(space, ops, "hodlr")
    assert approx.preconditioner.stats["levels"] >= 4
    rng = np.random.default_rng(3)
    z = rng.standard_normal((2 * space.n_dofs, 2)) + 1j * rng.standard_normal((2 * space.n_dofs, 2))
    want = exact.solution(z)
    assert np.linalg.norm(approx.solution(z) - want) < 1e-6 * np.linalg.norm(want)
    # an approximate P: the product is A P^{-1} in full, not the exact triangle's shortcut
    np.testing.assert_allclose(approx.matvec(z), approx.unpreconditioned(approx.solution(z)),
                               rtol=0, atol=1e-12 * np.abs(z).max())


def test_hodlr_preconditioner_gives_the_dense_answer_in_few_iterations(gas_sphere,
                                                                       small_leaves):
    """At the default truncation (HODLR_TOL): the dense factors' answer to GMRES's
    tolerance, in at most two more iterations."""
    space, ops = gas_sphere
    out = {}
    for name in ("block_triangular", "hodlr"):
        system = _system(space, ops, name)
        rhs = system.rhs(*plane_wave_data(space, KA, D[None]))
        res = gmres(system.matvec, rhs, tol=1e-8, restart=500, maxiter=500)
        x = system.solution(res.x)
        assert np.linalg.norm(system.unpreconditioned(x) - rhs) <= 1e-7 * np.linalg.norm(rhs)
        out[name] = (int(res.iterations[0]), x)
    assert out["hodlr"][0] <= out["block_triangular"][0] + 2, out  # measured 6 against 4
    stats = system.preconditioner.stats
    assert stats["bytes"] < 2 * space.n_dofs**2 * 16, stats  # less than the dense factors
    np.testing.assert_allclose(out["hodlr"][1], out["block_triangular"][1], rtol=0,
                               atol=1e-6 * np.abs(out["block_triangular"][1]).max())


def _solves(mesh, ka, direction, receivers, solver=None, tols=(1e-5,),
            names=("none", "block_triangular")):
    """{(preconditioner, tol): (GMRES iterations, far field)} of the gas body on `mesh` with
    no preconditioner and the block-triangular one: the solver's own steps (its assembly
    for the case's `solver` block, the formulation's system for each setting, GMRES, far
    field) on operators assembled once for all the solves."""
    case = Case.from_dict({"boundary": {"kind": "fluid", "density_ratio": G,
                                        "sound_speed_ratio": H},
                           "incident": {"direction": list(direction)},
                           "receivers": {"plane": "xz", "count": receivers},
                           "solver": {"backend": "cpu", **(solver or {})}}, MEDIUM)
    assembled = assemble_system(case, mesh, ka)
    form, space = assembled.formulation, assembled.space
    far_field = np.asarray(form.far_field(space, case.receivers.vectors, ka))
    out = {}
    for name in names:
        settings = dataclasses.replace(case.solver, fluid_preconditioner=name)
        system = form.system(space, ka, assembled.operators, settings)
        rhs = form.rhs(system, space, ka, case.incidence.directions)
        gm = settings.gmres
        for tol in tols:
            res = gmres(system.matvec, rhs, tol=tol, restart=gm.restart, maxiter=gm.maxiter)
            out[name, tol] = (int(res.iterations[0]), far_field @ system.solution(res.x)[:, 0])
    return out


def test_hmatrix_format_gives_the_same_iterations():
    """The H-matrix operators are densified for the factors: the same few iterations, and
    the factors take the precision the blocks are stored in (complex64 for single storage),
    with the answer of double storage."""
    mesh = match_volume(icosphere(2), 4 / 3 * math.pi)[0]
    its = {}
    for fmt, storage in (("dense", "double"), ("hmatrix", "double"), ("hmatrix", "single")):
        solves = _solves(mesh, KA, D, 7, {"operator_format": fmt, "hmatrix": {
            "leaf_size": 16, "eps": 1e-6, "storage": storage}})
        its.update({(fmt, storage, name): value for (name, _), value in solves.items()})
    assert its["hmatrix", "double", "block_triangular"][0] <= 4, its
    assert its["hmatrix", "double", "none"][0] > 2 * its["hmatrix", "double", "block_triangular"][0]
    np.testing.assert_allclose(its["hmatrix", "double", "block_triangular"][1],
                               its["dense", "double", "none"][1], rtol=1e-3)
    single = its["hmatrix", "single", "block_triangular"]
    double = its["hmatrix", "double", "block_triangular"]
    assert single[0] <= double[0] + 1, its
    assert np.abs(single[1] - double[1]).max() <= 1e-4 * np.abs(double[1]).max(), its


def test_hodlr_through_the_solver_settings(small_leaves):
    """solver.fluid_preconditioner = hodlr on H-matrix operators (stored in double
    precision: with single storage the HODLR inverses' rounding, about 1e-7, bounds the
    residual GMRES reaches): the dense factors' answer, within two iterations of theirs."""
    mesh = match_volume(icosphere(3), 4 / 3 * math.pi)[0]
    out = _solves(mesh, KA, D, 7, {"operator_format": "hmatrix", "hmatrix": {"storage": "double"}},
                  tols=(1e-5, 1e-9), names=("block_triangular", "hodlr"))
    assert out["hodlr", 1e-5][0] <= out["block_triangular", 1e-5][0] + 2, out  # measured 4, 2
    np.testing.assert_allclose(out["hodlr", 1e-9][1], out["block_triangular", 1e-9][1],
                               rtol=0, atol=1e-6 * np.abs(out["block_triangular", 1e-9][1]).max())


def test_factor_precision_follows_the_storage():
    space = p1(icosphere(1))
    for storage, dtype in (("double", np.complex128), ("single", np.complex64)):
        op = assemble_hmatrix("double_layer", space, space, 2.0, backend="cpu", leaf_size=8,
                              eta=3.0, eps=1e-4, storage=storage)
        assert factor_dtype(op) == dtype
    assert factor_dtype(np.zeros((2, 2))) == np.complex128  # a dense operator's own precision


class _Share:
    """An operator known only by its products (as a rank's share of a distributed H-matrix)."""

    def __init__(self, op):
        self.op, self.shape, self.dtype = op, op.shape, op.dtype

    def matvec(self, x):
        return self.op @ x

    __matmul__ = matvec


def test_dense_of_an_hmatrix_and_of_its_restriction():
    """The factors' dense blocks: an H-matrix's copied from its blocks (dense_part), and an
    operator known only by its products from unit columns in any chunking, both the matrix
    the H-matrix's products apply, also for an interface's own block of a region spanning
    two surfaces (Restricted), in the factors' precision."""
    space = p1(SurfaceMesh.union([icosphere(2), icosphere(1, 0.5)]))
    op = assemble_hmatrix("double_layer", space, space, 2.0, backend="cpu", leaf_size=16,
                          eta=1.0, eps=1e-6, storage="single")
    full = op @ np.eye(space.n_dofs, dtype=complex)  # by products
    scale = np.abs(full).max()
    pos = np.flatnonzero(np.arange(space.n_dofs) % 3 != 1)
    for each in (op, _Share(op)):
        np.testing.assert_allclose(dense_of(each, np, np.complex128, width=37), full,
                                   rtol=0, atol=1e-12 * scale)
        sub = dense_of(restricted(each, pos), np, np.complex64, width=50)
        assert sub.dtype == np.complex64 and sub.shape == (len(pos), len(pos))
        np.testing.assert_allclose(sub, full[np.ix_(pos, pos)], rtol=0, atol=1e-6 * scale)
    np.testing.assert_allclose(op.dense_part(pos[::-1], pos), full[np.ix_(pos[::-1], pos)],
                               rtol=0, atol=1e-12 * scale)  # rows and columns in any order
    part = restricted(op, pos)
    x = np.random.default_rng(1).standard_normal((len(pos), 3)) + 0j
    np.testing.assert_allclose(part @ x, full[np.ix_(pos, pos)] @ x, rtol=0,
                               atol=1e-11 * scale * np.abs(x).sum(axis=0).max())
    assert restricted(op, np.arange(space.n_dofs)) is op
    np.testing.assert_array_equal(dense_of(restricted(full, pos), np, np.complex128),
                                  full[np.ix_(pos, pos)])


def test_setting_choices():
    assert chosen("none", 10) == "none"
    assert chosen("block_triangular", 10**6) == "block_triangular"
    gas = 0.0012 * 0.22
    assert chosen("auto", 1000, 16, 64e6, gas) == "block_triangular"  # 32 MB of factors
    assert chosen("auto", 1001, 16, 64e6, gas) == "hodlr"  # dense factors would not fit
    assert chosen("auto", 1000, 16, 64e6, gas, dense_max=999) == "hodlr"  # nor be quicker
    assert chosen("auto", 10**6, 16, 64e6, 1.04 * 1.03) == "none"
    assert chosen("hodlr", 10) == "hodlr"
    assert dense_limit(np) == muller_preconditioner.DENSE_MAX_HOST
    assert chosen("auto", 1414, 8, 64e6, gas) == "block_triangular"  # single precision
    assert chosen("auto", 1000, 16, 64e6, 1.04 * 1.03) == "none"  # fish flesh: few plain steps
    assert chosen("auto", 1000, 16, 64e6, 8.0) == "block_triangular"  # a dense, stiff body
    with pytest.raises(InputError, match="fluid preconditioner = .osrc."):
        chosen("osrc", 10)


def test_memory_estimates_follow_the_choice():
    """planning/resources.py's count of a fluid body's preconditioner: none for fish flesh, the
    dense factors' 2 n^2 where auto makes them on the host, else the HODLR model's (held,
    and set-up work freed before GMRES): on a GPU, and for the 53,640-vertex gas sphere
    at 200 kHz a few GB, not the 46 GB of dense factors."""
    gas = 0.0012 * 0.22
    assert muller_preconditioner.estimated_bytes("auto", 5000, 8, 1.04 * 1.03, False) == (0, 0)
    assert muller_preconditioner.estimated_bytes("auto", 5000, 8, gas, False) == (4e8, 0)
    held, work = muller_preconditioner.estimated_bytes("auto", 53640, 8, gas, False)
    assert (held, work) == muller_preconditioner.hodlr_bytes(53640, 8)
    assert held + work < 9e9 and 2 * 53640**2 * 8 > 4.6e10
    assert muller_preconditioner.estimated_bytes("auto", 5000, 8, gas, True) == \
        muller_preconditioner.hodlr_bytes(5000, 8)
    assert muller_preconditioner.estimated_bytes("block_triangular", 5000, 8, gas, True) == \
        (4e8, 0)


def test_gas_spheroid_iterations_drop_from_about_fifty_to_a_few():
    """The 3.5:1 gas spheroid of test_fluid_formulation (an icosphere stretched, ka = 2 on
    the short semi-axis, broadside): the plain system needs 49 steps, its spectrum spread by
    the cavity's modes; preconditioned, 3 (measured; at tol 1e-10: 75 and 6, the far fields
    then equal to 1e-7). At tol 1e-5 the two answers differ by about 1e-3: the system is
    that sensitive near the gas's resonances, either way."""
    m = match_volume(icosphere(2), 4 / 3 * math.pi)[0]
    mesh = type(m)(m.vertices * [3.5, 1.0, 1.0], m.triangles)
    # the default tolerance, then one tight enough to compare the answers
    out = _solves(mesh, 2.0, [0.0, 0.0, 1.0], 19, {"operator_format": "dense"},
                  tols=(1e-5, 1e-10))
    assert out["none", 1e-5][0] >= 40, out["none", 1e-5][0]
    assert out["block_triangular", 1e-5][0] <= 4, out["block_triangular", 1e-5][0]
    np.testing.assert_allclose(out["block_triangular", 1e-10][1], out["none", 1e-10][1],
                               rtol=0, atol=1e-7 * np.abs(out["none", 1e-10][1]).max())


@pytest.mark.parametrize("name", ["block_triangular", "hodlr"])
def test_preconditioned_solve_on_the_gpu_matches_the_cpu(gpu_backend, name, monkeypatch):
    """The factors and solves on the device (CuPy's LU; SciPy's under the CUDA emulation),
    or the HODLR inverses there (leaves of 16 vertices: two levels): the CPU's iterations
    and answer."""
    monkeypatch.setattr(HierarchicalBlockTriangular, "leaf_size", 16)
    mesh = icosphere(1)
    out = {}
    for backend in ("cpu", "gpu"):
        case = {"boundary": {"kind": "fluid", "density_ratio": G, "sound_speed_ratio": H},
                "incident": {"direction": D.tolist()}, "receivers": {"plane": "xz", "count": 7},
                "solver": {"operator_format": "dense", "backend": backend,
                           "fluid_preconditioner": name}}
        out[backend] = solve_frequency(Case.from_dict(case, MEDIUM), mesh, 0.8 * C / (2 * math.pi))
    assert out["gpu"].backend["backend"] == "gpu"
    assert out["gpu"].iterations[0] <= 3
    assert abs(int(out["gpu"].iterations[0]) - int(out["cpu"].iterations[0])) <= 1
    np.testing.assert_allclose(out["gpu"].far_field, out["cpu"].far_field, rtol=0,
                               atol=1e-5 * np.abs(out["cpu"].far_field).max())
