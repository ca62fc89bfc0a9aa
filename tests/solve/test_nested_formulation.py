"""The nested-body (multi-domain transmission) formulation against exact series: concentric
spheres in the limits that reduce to one sphere (equal materials in shell and core, a shell
of the medium around a fluid, rigid or pressure-release core), and one fluid body against
the Müller system it generalises. Small icospheres offset to the exact volumes, dense
operators on the CPU."""
import math

import numpy as np
import pytest

from wavescat.bem.formulations import (FluidMuller, NestedTransmission, boundary_from,
                                       formulation_for_case, formulation_of_record)
from wavescat.bem.linalg.gmres import gmres
from wavescat.configuration.case import Case, SolverSettings
from wavescat.errors import ConfigError
from wavescat.geometry.icosphere import icosphere
from wavescat.geometry.volume import match_volume
from wavescat.reference import fluid_sphere, pressure_release_sphere, rigid_sphere
from wavescat.solve.driver import assemble_operators
from wavescat.surface import SurfaceMesh

K = 2.0
A0, A1 = 1.0, 0.6
D = np.array([[0.0, 0.0, 1.0]])
DIRS = np.array([[math.sin(t), 0.0, math.cos(t)] for t in np.linspace(0, math.pi, 7)])
BODY = {"kind": "fluid", "density_ratio": 0.5, "sound_speed_ratio": 0.8}
WATER = {"kind": "fluid", "density_ratio": 1.0, "sound_speed_ratio": 1.0}
G = {"kind": "sphere", "radius": A0}  # the solves below take their meshes, not these
G1 = {"kind": "sphere", "radius": A1}
G2 = {"kind": "sphere", "radius": A1 / 2}


def _case(outer, inside=(), medium=None):
    return Case.from_dict({"geometry": G, "boundary": outer, "inside": list(inside)}, medium)


def _nested(outer, *inner):
    """The nested formulation of `outer` holding the bodies `inner` (boundary blocks)."""
    return formulation_for_case(_case(outer, [{"geometry": G1, "boundary": b} for b in inner]))


def _sphere(radius, subdivisions=2):
    return match_volume(icosphere(subdivisions, radius), 4 / 3 * math.pi * radius**3)[0]


def _union(*meshes):
    return SurfaceMesh.union(list(meshes))


def _solve(form, mesh):
    space = form.space(mesh)
    ops = assemble_operators(form, space, K, "dense", backend="cpu", precision="double")
    system = form.system(space, K, ops, SolverSettings.from_dict({}))
    res = gmres(system.matvec, form.rhs(system, space, K, D), xp=np, tol=1e-8, restart=300,
                maxiter=300)
    return (form.far_field(space, DIRS, K) @ res.x)[:, 0], int(res.iterations[0])


@pytest.fixture(scope="module")
def shell_mesh():
    return _union(_sphere(A0), _sphere(A1))


CASES = {
    "equal materials": (BODY, BODY, lambda: fluid_sphere.far_field(
        K, A0, D[0], DIRS, density_ratio=0.5, sound_speed_ratio=0.8)),
    "medium around a fluid core": (WATER, BODY, lambda: fluid_sphere.far_field(
        K, A1, D[0], DIRS, density_ratio=0.5, sound_speed_ratio=0.8)),
    "medium around a rigid core": (WATER, {"kind": "rigid"},
                                   lambda: rigid_sphere.far_field(K, A1, D[0], DIRS)),
    "medium around a pressure-release core": (
        WATER, {"kind": "pressure_release"},
        lambda: pressure_release_sphere.far_field(K, A1, D[0], DIRS)),
}


@pytest.mark.parametrize("name", CASES)
def test_concentric_limits_match_one_sphere(name, shell_mesh):
    shell, core, exact = CASES[name]
    far, iterations = _solve(_nested(shell, core), shell_mesh)
    ref = exact()
    err = np.abs(far - ref).max() / np.abs(ref).max()
    assert err < 0.01, (name, err)
    assert iterations < 30  # identity plus compact: few iterations at ka = 2


def test_one_fluid_body_is_the_muller_system():
    mesh = _sphere(A0)
    nested, _ = _solve(NestedTransmission(_case(BODY).bodies), mesh)
    muller, _ = _solve(FluidMuller(boundary_from(BODY)), mesh)
    ref = fluid_sphere.far_field(K, A0, D[0], DIRS, density_ratio=0.5, sound_speed_ratio=0.8)
    # the two systems differ only in how the data are discretised (one identity of p_inc)
    assert np.abs(nested - muller).max() < 0.01 * np.abs(ref).max()
    assert np.abs(nested - ref).max() < 0.01 * np.abs(ref).max()


def test_inside_needs_a_fluid_body_and_inner_kinds():
    with pytest.raises(ConfigError, match=r"case.inside: bodies inside a rigid body"):
        _nested({"kind": "rigid"}, BODY)
    with pytest.raises(ConfigError, match=r"inside\[0\].boundary.kind = 'impedance'"):
        _nested(BODY, {"kind": "impedance", "admittance": [1, 0]})
    with pytest.raises(ConfigError, match=r"inside\[0\].inside: bodies inside a rigid"):
        _case(BODY, [{"geometry": G1, "boundary": {"kind": "rigid"},
                      "inside": [{"geometry": G2, "boundary": BODY}]}])


def test_records_rebuild_the_tree():
    gas = {"kind": "fluid", "density": 1.24, "sound_speed": 345.0,
           "absorption_db_per_wavelength": 1.364}
    form = formulation_for_case(_case(BODY, [
        {"geometry": G1, "boundary": gas,
         "inside": [{"geometry": G2, "boundary": {"kind": "rigid"}}]},
        {"geometry": G1, "boundary": {"kind": "pressure_release"}}],
        medium={"density": 1026.8, "sound_speed": 1477.3}))
    again = formulation_of_record(form.record())
    assert isinstance(again, NestedTransmission)
    assert [(f.outer, f.inner, f.kind) for f in again.interfaces] == [
        (0, 1, "fluid"), (1, 2, "fluid"), (2, None, "rigid"), (1, None, "pressure_release")]
    assert again.regions[2].density_ratio == pytest.approx(1.24 / 1026.8)
    assert again.regions[2].wavenumber_factor == pytest.approx(
        form.regions[2].wavenumber_factor)
    assert again.regions[2].wavenumber_factor.imag > 0  # absorption kept


def test_gas_core_preconditioner_keeps_the_answer_and_cuts_iterations(shell_mesh, monkeypatch):
    """A gas core in a fluid shell: the interface's block-triangular preconditioner (the
    single body's, with g = g_i / g_o and k g_o) gives the same far field as the plain
    system in far fewer iterations; the exact concentric-sphere series checks both. Its
    HODLR variant (leaves of 32 vertices: several levels) from the interface's own blocks of
    the H-matrices and of their transposes: the same answer, a step or two more."""
    from wavescat.bem.formulations.muller_preconditioner import HierarchicalBlockTriangular
    from wavescat.reference import layered_sphere

    monkeypatch.setattr(HierarchicalBlockTriangular, "leaf_size", 32)

    shell = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.06}
    gas = {"kind": "fluid", "density_ratio": 0.0012, "sound_speed_ratio": 0.2335}
    form = _nested(shell, gas)
    out = {}
    hmatrix = {"leaf_size": 16, "eta": 1.0, "eps": 1e-8, "storage": "double"}
    assembled = {}  # the operators of each format, assembled once (a system reads them)
    for setting, fmt in (("none", "dense"), ("block_triangular", "dense"),
                         ("block_triangular", "hmatrix"), ("hodlr", "hmatrix")):
        if fmt not in assembled:
            space = form.space(shell_mesh)
            options = {"hmatrix_options": hmatrix} if fmt == "hmatrix" else {}
            assembled[fmt] = space, assemble_operators(form, space, K, fmt, backend="cpu",
                                                       precision="double", **options)
        space, ops = assembled[fmt]
        system = form.system(space, K, ops,
                             SolverSettings.from_dict({"fluid_preconditioner": setting}))
        assert bool(system.preconditioners) == (setting != "none")
        res = gmres(system.matvec, form.rhs(system, space, K, D), xp=np, tol=1e-8,
                    restart=300, maxiter=300)
        far = form.far_field(space, DIRS, K) @ system.solution(res.x)
        out[setting, fmt] = (far[:, 0], int(res.iterations[0]))
    ref = layered_sphere.far_field(K, (A0, A1), [(1.04, 1.06)], (0.0012, 0.2335), D[0], DIRS)
    for far, _ in out.values():
        assert np.abs(far - ref).max() < 0.02 * np.abs(ref).max()
    plain, pre = out["none", "dense"][1], out["block_triangular", "dense"][1]
    assert pre <= 12 and pre < 0.7 * plain, (plain, pre)  # measured: 20 plain, 11
    # H-matrix operators: the interface's blocks of the shell region, which spans both
    # surfaces, densified from the H-matrices: the dense operators' answer and iterations
    far_h, pre_h = out["block_triangular", "hmatrix"]
    assert pre_h <= pre + 1, (pre, pre_h)
    assert np.abs(far_h - out["block_triangular", "dense"][0]).max() < 1e-5 * np.abs(ref).max()
    far_hodlr, pre_hodlr = out["hodlr", "hmatrix"]
    assert pre_hodlr <= pre_h + 2, (pre_h, pre_hodlr)
    assert np.abs(far_hodlr - far_h).max() < 1e-5 * np.abs(ref).max()
