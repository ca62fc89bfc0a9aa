"""The DG acoustics solver: invariants, energy stability, convergence, boundary conditions."""
import numpy as np
import pytest

from wavescat.errors import InputError, MeshError
from wavescat.timedomain.dg import (BC_ABSORBING, BC_RIGID, BC_SCATTERER, AcousticsDG, TetMesh,
                                    box_tet_mesh, build_space)
from wavescat.timedomain.dg.cavity import convergence_study


def test_constant_pressure_stays_constant(backend):
    space = build_space(box_tet_mesh(2), 3, BC_RIGID)
    dg = AcousticsDG(space, backend, "double")
    q = np.zeros((4, space.n_elements, space.ref.n_nodes))
    q[0] = 2.5
    dg.set_state(q)
    dg.run(0.2)
    np.testing.assert_allclose(dg.state(), q, atol=1e-12)


@pytest.mark.parametrize("upwind, media", [(1.0, None), (0.0, None), (1.0, {1: (3.0, 0.7)})])
def test_energy_does_not_grow_with_rigid_walls(upwind, media):
    """Upwind (and central) fluxes with rigid walls give a non-increasing discrete energy,
    even from a rough random state on a skewed mesh; upwind dissipates the rough part. With
    a second medium in x < 1/2: the interface flux between them too (each medium's weights)."""
    mesh = box_tet_mesh((2, 3, 2), upper=(1.0, 1.3, 0.8))
    rng = np.random.default_rng(0)
    v = mesh.vertices.copy()
    inner = np.all((v > 1e-9) & (v < np.array([1.0, 1.3, 0.8]) - 1e-9), axis=1)
    v[inner] += 0.05 * rng.standard_normal((inner.sum(), 3))
    regions = (mesh.vertices[mesh.tets].mean(axis=1)[:, 0] < 0.5).astype(int) if media else None
    space = build_space(TetMesh(v, mesh.tets), 3, BC_RIGID, regions)
    dg = AcousticsDG(space, "cpu", "double", rho=1.2, c=1.5, upwind=upwind, media=media)
    dg.set_state(rng.standard_normal((4, space.n_elements, space.ref.n_nodes)))
    energies = [dg.energy()]
    dt = dg.stable_dt()
    for _ in range(30):
        dg.step(dt)
        energies.append(dg.energy())
    assert np.all(np.diff(energies) <= 1e-12 * energies[0])
    if upwind:
        assert energies[-1] < 0.9 * energies[0]


def test_cavity_mode_convergence_order():
    """Standing mode of the rigid unit box: L2 error falls like h^(N+1)."""
    for order, cells in ((1, [4, 8]), (3, [2, 4])):
        rows = convergence_study([order], cells, t_final=0.3)
        assert rows[-1].error_l2 < rows[0].error_l2
        assert rows[-1].observed_order > order + 0.7, rows


def test_scattered_field_wall_reflects_plane_wave():
    """Scattered-field rigid wall at x = 0 (v_s.n = -v_inc.n) and characteristic absorber at
    x = 1: a plane pulse p_inc = g(t + x) is reflected as p_s = g(t - x) and leaves cleanly."""
    mesh = box_tet_mesh((6, 1, 1), upper=(1.0, 0.25, 0.25))

    def rule(centroids, normals):
        return np.where(centroids[:, 0] < 1e-9, BC_SCATTERER,
                        np.where(centroids[:, 0] > 1 - 1e-9, BC_ABSORBING, BC_RIGID))

    space = build_space(mesh, 4, rule)
    g = lambda s: np.exp(-(((s - 0.6) / 0.15) ** 2))  # noqa: E731
    nodes_x = space.boundary_xyz[:, 0]
    dn = space.boundary_normals @ np.array([-1.0, 0.0, 0.0])
    dg = AcousticsDG(space, "cpu", "double",
                     boundary_data=lambda t: np.stack([dn * g(t + nodes_x), g(t + nodes_x)], axis=1))
    dg.run(0.9)
    exact = g(0.9 - space.xyz[0])
    norm = np.sqrt(dg.l2_error(np.zeros_like(exact)) ** 2)  # the DG pulse's own norm
    assert dg.l2_error(exact) < 0.01 * norm
    e_in = dg.energy()
    dg.run(2.4)  # the reflected pulse has left through the absorbing face
    assert dg.energy() < 1e-4 * e_in


def test_inverted_tetrahedron_is_an_error():
    mesh = box_tet_mesh(1)
    tets = mesh.tets.copy()
    tets[3] = tets[3][[1, 0, 2, 3]]
    with pytest.raises(MeshError, match="inverted.*element 3"):
        TetMesh(mesh.vertices, tets)


def test_mesh_without_volume_elements_is_an_error():
    with pytest.raises(MeshError, match="no tetrahedra"):
        TetMesh(np.eye(3), np.zeros((0, 4), dtype=np.int64))


@pytest.mark.parametrize("order", [0, 7])
def test_order_out_of_range_is_an_error(order):
    with pytest.raises(InputError, match=f"order N = {order}"):
        build_space(box_tet_mesh(1), order)


def test_bad_medium_is_an_error():
    with pytest.raises(InputError, match="c = -1"):
        AcousticsDG(build_space(box_tet_mesh(1), 1), "cpu", c=-1.0)
