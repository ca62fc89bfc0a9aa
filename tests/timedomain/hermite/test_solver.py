"""Hermite-Taylor steps: exactness on polynomials, convergence order, refused input."""
import numpy as np
import pytest

from wavescat.errors import InputError
from wavescat.timedomain.hermite import CFL_LIMIT, HermiteSolver, acoustics, advection
from wavescat.timedomain.hermite.convergence import observed_orders, period_error


def _poly_data(coeffs, coords, h, shift, m):
    """Hermite data of prod_d p_d(x_d + shift_d), p_d with coefficients coeffs[d] (low first)."""
    from math import factorial

    per_axis = []
    for d in range(3):
        p = np.polynomial.Polynomial(coeffs[d])
        x = coords[d] + shift[d]
        per_axis.append(np.array([p.deriv(k)(x) * h[d] ** k / factorial(k) for k in range(m + 1)]))
    return np.einsum("ai,bj,ck->abcijk", *per_axis)[None]


@pytest.mark.parametrize("kernel", ["propagator", "monolithic"])
@pytest.mark.parametrize("m", [1, 2])
def test_one_step_of_advection_is_exact_for_degree_2m_plus_1(m, kernel):
    rng = np.random.default_rng(m)
    a = np.array([0.7, -0.4, 0.55])
    solver = HermiteSolver(advection(a), (6, 5, 7), (0.6, 0.5, 0.7), m, cfl=0.9, kernel=kernel)
    coeffs = rng.standard_normal((3, 2 * m + 2))  # degree 2m+1 in every variable
    coords = solver.node_coords()
    solver.set_state(_poly_data(coeffs, coords, solver.h, (0, 0, 0), m))
    solver.step()
    exact = _poly_data(coeffs, coords, solver.h, a * solver.dt, m)
    # a node's new data depends on its neighbours only: away from the periodic seam it is exact
    inner = (slice(None),) * 4 + (slice(1, -1),) * 3
    got = solver.get_state()
    np.testing.assert_allclose(got[inner], exact[inner], rtol=0, atol=1e-11 * np.abs(exact).max())


def test_fewer_taylor_stages_are_not_exact():
    m = 1
    a = np.array([0.7, -0.4, 0.55])
    solver = HermiteSolver(advection(a), 6, 0.6, m, q=2, cfl=0.9)
    coeffs = np.random.default_rng(0).standard_normal((3, 2 * m + 2))
    coords = solver.node_coords()
    solver.set_state(_poly_data(coeffs, coords, solver.h, (0, 0, 0), m))
    solver.step()
    exact = _poly_data(coeffs, coords, solver.h, a * solver.dt, m)
    inner = (slice(None),) * 4 + (slice(1, -1),) * 3
    assert np.abs(solver.get_state()[inner] - exact[inner]).max() > 1e-6


def _fitted_order(equation, m, grids, kernel=None):
    hs, errs = [], []
    for n in grids:
        solver, err = period_error(equation, m, n, kernel=kernel)
        hs.append(max(solver.h))
        errs.append(err)
    return np.polyfit(np.log(hs), np.log(errs), 1)[0], observed_orders(hs, errs)


@pytest.mark.parametrize("equation, m, grids, kernel", [("advection", 1, (8, 12, 16), "propagator"),
                                                        ("advection", 2, (6, 8, 10), "propagator"),
                                                        ("advection", 3, (4, 6, 8), "propagator"),
                                                        ("advection", 1, (8, 12, 16), "monolithic"),
                                                        ("advection", 2, (6, 8, 10), "monolithic"),
                                                        ("acoustics", 1, (6, 8, 12), None),
                                                        ("acoustics", 2, (4, 6, 8), None)])
def test_convergence_order_is_2m_plus_1(equation, m, grids, kernel):
    fitted, orders = _fitted_order(equation, m, grids, kernel)
    assert abs(fitted - (2 * m + 1)) < 0.3, (fitted, orders)
    assert abs(orders[-1] - (2 * m + 1)) < 0.3, orders


def test_acoustic_energy_is_bounded_at_the_stability_limit():
    # at CFL exactly 1 the scheme is still stable: a period leaves the solution bounded
    solver, err = period_error("acoustics", 1, 6, cfl=CFL_LIMIT)
    assert err < 0.5


def test_cfl_beyond_limit_is_refused_with_the_limit_named():
    with pytest.raises(InputError, match=r"cfl = 1\.2.*stability limit.*1\.0"):
        HermiteSolver(advection(), 4, 1.0, 1, cfl=1.2)
    solver = HermiteSolver(acoustics(2.0, 1.0), 4, 1.0, 1, cfl=0.5)
    with pytest.raises(InputError, match=r"CFL 2 beyond the stability limit 1\.0"):
        solver.set_time_step(0.25)  # c dt / h = 2 * 0.25 / 0.25


@pytest.mark.parametrize("kwargs, match", [({"m": 0}, "degree m = 0"),
                                           ({"boundary": "slip"}, "boundary = .slip.*periodic, wall"),
                                           ({"q": 0}, "stages q = 0"),
                                           ({"kernel": "fused"}, "kernel = 'fused'"),
                                           ({"cells": 1}, "cells")])
def test_bad_input_is_refused(kwargs, match):
    args = {"cells": 4, "lengths": 1.0, "m": 1} | kwargs
    with pytest.raises(InputError, match=match):
        HermiteSolver(advection(), args.pop("cells"), args.pop("lengths"), args.pop("m"), **args)


def test_bad_physics_is_refused():
    with pytest.raises(InputError, match="sound_speed"):
        acoustics(-1.0, 1.0)
    with pytest.raises(InputError, match="velocity"):
        advection((1.0, 2.0))


def _wall_mode_error(m, n, boundary, mode_lengths=(1.0, 0.5, 0.5)):
    """Error after a period of p ~ prod cos(2 pi x_d / l_d) on the box (1, 0.5, 0.5)."""
    from wavescat.timedomain.hermite.exact import acoustic_standing_mode, hermite_data

    system = acoustics(1.5, 1.2)
    # phases 0: dp/dn = 0 and v_d ~ sin(2 pi x_d / l_d) = 0 on walls at 0 and l_d / 2
    exact = acoustic_standing_mode(system, 1.5, 1.2, mode_lengths, phases=(0.0, 0.0, 0.0))
    solver = HermiteSolver(system, n, (1.0, 0.5, 0.5), m, cfl=0.6, boundary=boundary)
    coords = solver.node_coords()
    solver.set_state(hermite_data(exact.terms(0.0), coords, solver.h, m))
    solver.run_to(exact.period)
    final = hermite_data(exact.terms(exact.period), coords, solver.h, m)[:, 0, 0, 0]
    return max(solver.h), np.abs(solver.get_state()[:, 0, 0, 0] - final).max()


def test_rigid_walls_converge_at_order_2m_plus_1():
    # half a wavelength across x: the mode is not periodic in the box, but it satisfies
    # walls at x = 0 and x = 1; y and z stay periodic
    boundary = ("wall", "periodic", "periodic")
    h, e = zip(*[_wall_mode_error(1, n, boundary, (2.0, 0.5, 0.5)) for n in (6, 8, 12)])
    fitted = np.polyfit(np.log(h), np.log(e), 1)[0]
    assert e[-1] < 2e-2 and abs(fitted - 3) < 0.3, (e, fitted)
    # walls on every axis, m = 2
    h, e = zip(*[_wall_mode_error(2, n, "wall", (2.0, 1.0, 1.0)) for n in (4, 6, 8)])
    assert abs(observed_orders(h, e)[-1] - 5) < 0.3, e
    # the same run on a periodic grid is wrong by O(1): the walls are what makes it right
    assert _wall_mode_error(1, 8, "periodic", (2.0, 0.5, 0.5))[1] > 0.2


def test_walls_agree_with_periodic_grid_for_a_mode_symmetric_about_them():
    # a full wavelength per axis is both periodic and wall-compatible: same answer either way
    _, e_wall = _wall_mode_error(2, 6, "wall")
    _, e_per = _wall_mode_error(2, 6, "periodic")
    assert e_wall == pytest.approx(e_per, rel=1e-6) and e_wall < 1e-3


def test_wall_for_advection_is_refused():
    with pytest.raises(InputError, match="boundary = 'wall'.*only periodic"):
        HermiteSolver(advection(), 4, 1.0, 1, boundary="wall")


@pytest.mark.parametrize("block", [
    (slice(0, 3), slice(2, 5), slice(1, 4)),      # at the low walls of x
    (slice(2, 6), slice(0, 5), slice(3, 4)),      # the high wall of x, the whole of y
    (slice(1, 2), slice(4, 5), slice(0, 4)),      # one node across x, the high wall of y
])
def test_a_block_of_the_wall_half_step_is_the_whole_ones(block):
    """wall_dual_to_primary on a block of nodes (its cells and the walls' mirrored ghosts only)
    gives the whole grid's data there; a block cut along a periodic axis is refused."""
    solver = HermiteSolver(acoustics(1.3, 0.8), (5, 4, 3), (1.0, 0.8, 0.6), 2, boundary="wall")
    dual = np.random.default_rng(3).standard_normal(solver.state.shape)
    whole = solver.wall_dual_to_primary(dual.copy())
    part = solver.wall_dual_to_primary(dual.copy(), block)
    np.testing.assert_allclose(part, whole[(slice(None),) * 4 + block], rtol=1e-13, atol=1e-13)
    periodic = HermiteSolver(acoustics(1.3, 0.8), (5, 4, 3), (1.0, 0.8, 0.6), 2,
                             boundary=["periodic", "wall", "wall"])
    with pytest.raises(InputError, match="periodic axis 0"):
        periodic.wall_dual_to_primary(dual[..., :5, :, :], (slice(1, 3), slice(0, 5), slice(0, 4)))
