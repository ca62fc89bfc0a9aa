"""Boundary conditions and media of the DG solver against exact plane-wave answers: a pulse
p_inc = g(t + x) travelling towards x = 0 in a 1 x 0.25 x 0.25 channel (rigid side walls, an
absorbing end at x = 1) meets a scatterer face at x = 0 or a second medium in x < 1/2."""
import numpy as np
import pytest

from wavescat.timedomain.dg import (BC_ABSORBING, BC_IMPEDANCE, BC_RIGID, BC_SCATTERER, BC_SOFT, AcousticsDG,
                                    box_tet_mesh, build_space)

RHO, C = 1.3, 0.8
Z = RHO * C


def g(s):
    return np.exp(-(((s - 0.6) / 0.15) ** 2))


def channel(order, wall_code, regions=False):
    mesh = box_tet_mesh((8, 1, 1), upper=(1.0, 0.25, 0.25))

    def rule(centroids, normals):
        return np.where(centroids[:, 0] < 1e-9, wall_code,
                        np.where(centroids[:, 0] > 1 - 1e-9, BC_ABSORBING, BC_RIGID))

    region = (mesh.vertices[mesh.tets].mean(axis=1)[:, 0] < 0.5).astype(int) if regions else None
    return build_space(mesh, order, rule, region)


def incident_data(space, sign=1.0, delay=0.0):
    """(v_inc . n, p_inc) of the pulse g(c t + x - delay) at the boundary nodes, times sign
    (one per node or all)."""
    x = space.boundary_xyz[:, 0] - delay
    dn = space.boundary_normals @ np.array([-1.0, 0.0, 0.0]) / Z
    sign = np.asarray(sign, float)[..., None]
    return lambda t: sign * np.stack([dn * g(C * t + x), g(C * t + x)], axis=1)


def relative_error(dg, exact):
    """L2 error of the pressure over the L2 norm of the DG pressure."""
    return dg.l2_error(exact) / dg.l2_error(np.zeros_like(exact))


@pytest.mark.parametrize("code, beta, reflection", [
    (BC_SCATTERER, 0.0, 1.0),  # rigid: p_s = g(t - x)
    (BC_SOFT, 0.0, -1.0),  # pressure release: p_s = -g(t - x)
    (BC_IMPEDANCE, 0.5, 1 / 3),  # admittance beta: R = (1 - beta) / (1 + beta)
    (BC_IMPEDANCE, 0.0, 1.0),  # beta = 0 is rigid
])
def test_scatterer_wall_reflects_plane_pulse(code, beta, reflection):
    """The scattered field of a plane pulse at normal incidence on the wall x = 0: R g(t - x),
    R the plane-wave reflection coefficient of the condition."""
    space = channel(4, code)
    dg = AcousticsDG(space, "cpu", "double", rho=RHO, c=C, beta=beta, boundary_data=incident_data(space))
    t = 0.9 / C
    dg.run(t)
    exact = reflection * g(C * t - space.xyz[0])
    assert relative_error(dg, exact) < 0.01


def test_matched_admittance_reflects_nothing():
    """beta = 1: the wall's impedance is the medium's, the pulse passes out of the domain."""
    space = channel(4, BC_IMPEDANCE)
    dg = AcousticsDG(space, "cpu", "double", rho=RHO, c=C, beta=1.0, boundary_data=incident_data(space))
    dg.run(0.9 / C)
    reference = AcousticsDG(space, "cpu", "double", rho=RHO, c=C, boundary_data=incident_data(space))
    reference.run(0.9 / C)  # the rigid wall's reflection, for scale
    assert np.sqrt(dg.energy()) < 1e-2 * np.sqrt(reference.energy())


@pytest.mark.parametrize("rho1, c1", [(RHO, C), (2.6, 1.2), (0.4, 0.6)])
def test_fluid_region_transmits_and_reflects(rho1, c1):
    """A second medium in x < 1/2 holding the total field, the scattered field outside (the
    interface data turn one into the other), the pulse g(c t + x - 1/2) arriving after t = 0:
    outside R g(c t + 1/2 - x) with R = (Z1 - Z) / (Z1 + Z), inside T g(c t + (x - 1/2) c / c1)
    with T = 1 + R. The same medium (first case) scatters nothing: the incident field crosses
    the interface unchanged."""
    space = channel(4, BC_ABSORBING, regions=True)
    # + inside (the neighbour holds the scattered field), - outside
    sign = np.where(space.regions[space.boundary_elements] == 1, 1.0, -1.0)
    sign[space.boundary_partner < 0] = 0.0  # no incident field enters at x = 0 or 1
    dg = AcousticsDG(space, "cpu", "double", rho=RHO, c=C, media={1: (rho1, c1)},
                     boundary_data=incident_data(space, sign, delay=0.5))
    t = 0.95 / C
    dg.run(t)
    x = space.xyz[0]
    z1 = rho1 * c1
    r = (z1 - Z) / (z1 + Z)
    inside = space.regions[:, None] == 1
    exact = np.where(inside, (1 + r) * g(C * t + (x - 0.5) * C / c1), r * g(C * t + 0.5 - x))
    # v_x = -p / Z1 inside (stored as z v = -p / Z, solver.py), p / Z outside
    v_exact = np.where(inside, -exact, exact) / Z
    assert relative_error(dg, exact) < 0.01
    assert dg.l2_error(v_exact, field=1) < 0.01 * dg.l2_error(np.zeros_like(exact), field=1)
