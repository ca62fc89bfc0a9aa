"""Hermite-Taylor scattering by a rigid box (timedomain/hermite/box_scattering.py): the
incident pulse's derivatives, the box faces against exact plane-wave solutions, and the
refusals."""
import numpy as np
import pytest

from wavescat.errors import InputError
from wavescat.geometry.kinds import GEOMETRIES
from wavescat.problem.medium import Medium
from wavescat.timedomain.dg.scatterer import Body
from wavescat.timedomain.dg.scattering import ScatteringSetup
from wavescat.timedomain.hermite.box_scattering import (BoxGrid, BoxScattering, box_frame,
                                                        run_box_scattering)

C, RHO = 1500.0, 1000.0
BAND = 2 * np.pi * np.array([477.46, 1432.4])


def setup_for(size=(1.0, 1.0, 1.0), direction=(1, 0, 0), omegas=BAND, kind="box"):
    block = {"kind": kind, "size": list(size)} if kind == "box" else {"kind": kind, "radius": 0.5}
    geometry = GEOMETRIES[kind].from_block(block)
    body = Body(geometry, medium=Medium(sound_speed=C, density=RHO))
    return ScatteringSetup(body, omegas, direction, 10.0, "box")


@pytest.mark.parametrize("omegas", [BAND, BAND[:1]], ids=["pulse", "harmonic"])
def test_signal_derivatives_are_the_signals(omegas):
    setup = setup_for(omegas=omegas)
    s = np.linspace(0.0, 0.012, 41)
    ders = setup.signal_derivatives(s, 3)
    np.testing.assert_allclose(ders[0], setup.signal(s), atol=1e-14)
    e = 1e-7
    for k in range(3):  # each derivative is the central difference of the one before
        up, down = setup.signal_derivatives(s + e, k)[k], setup.signal_derivatives(s - e, k)[k]
        scale = np.abs(ders[k + 1]).max()
        assert np.abs(ders[k + 1] - (up - down) / (2 * e)).max() < 1e-5 * scale


def slab(m, n, box_yz=(2, 2), backend="cpu"):
    """A box through the whole y, z extent of a long grid: a rigid slab across the wave, 1 m
    thick, its front face at x = -0.5 (n cells per half-thickness)."""
    setup = setup_for()
    h = 0.5 / n
    grid = BoxGrid(h, (int(7 / h), 2, 2), (n, *box_yz), np.full(3, 99.0), 2.0)
    return setup, BoxScattering(setup, box_frame(setup), grid, m, backend=backend)


@pytest.mark.parametrize("m, n, tol, backend", [
    (1, 4, 2e-3, "cpu"), (2, 4, 2e-5, "cpu"), pytest.param(2, 4, 2e-5, "gpu", marks=pytest.mark.gpu)])
def test_slab_reflects_the_pulse_exactly(m, n, tol, backend):
    """p_s = S(t + (x + 1) / c) in front of a rigid wall at x = -0.5: the face's mirrored
    ghosts and the incident data at them (the slab is 1D: no edges)."""
    setup, run = slab(m, n, backend=backend)
    xp = run.xp
    xs = np.array([-1.0, -2.0, -0.5])
    idx, w = run.probe_operator(np.column_stack([xs, [0.0, 0.3, 0.1], [0.0, 0.0, 0.2]]))
    s, worst, peak = run.solver, 0.0, 0.0
    while s.time < 0.008:  # the pulse's peak has passed the probes; the far walls' echo has not
        s.step(1)
        exact = setup.signal(s.time + (xs + 1.0) / C)
        p = (s.state.ravel()[xp.asarray(idx)] * xp.asarray(w)).sum(1)
        worst = max(worst, np.abs(run.solver.backend.asnumpy(p) - exact).max())
        peak = max(peak, np.abs(exact).max())
    assert peak > 0.9
    assert worst < tol * peak


def test_a_grazing_wave_leaves_a_face_alone():
    """A plane wave along a rigid face meets its condition by itself: the scattered field of a
    box through the whole grid along the wave (faces normal to y and z only) stays zero."""
    setup = setup_for()
    grid = BoxGrid(0.25, (10, 4, 4), (10, 1, 2), np.full(3, 99.0), 2.0)
    run = BoxScattering(setup, box_frame(setup), grid, 2)
    assert sorted({f[0] for f in run._faces}) == [1, 2]
    run.solver.step(20)  # the pulse's tail fills the grid from the start
    p_inc = run._incident(run.solver.time)
    assert float(np.abs(p_inc).max()) > 1e-6
    assert float(np.abs(run.solver.state).max()) == 0.0


def test_probes_interpolate_the_hermite_data():
    """The probe operator evaluates the Hermite interpolant: nodal data of the incident wave
    give the wave itself between the nodes."""
    from math import factorial
    setup, run = slab(2, 4)
    g, m, t = run.grid, run.m, 0.004
    xs = g.coords(0)
    scale = np.array([(-g.h / C) ** k / factorial(k) for k in range(m + 1)])[:, None]
    state = np.zeros(run.solver.state.shape)
    state[0, :, 0, 0] = (scale * setup.signal_derivatives(t - xs / C, m))[:, :, None, None]
    probes = np.array([[-1.03, 0.1, 0.2], [-2.0, 0.0, 0.0], [-3.3, 0.2, 0.1]])
    idx, w = run.probe_operator(probes)
    exact = setup.signal(t - probes[:, 0] / C)
    assert np.abs((state.ravel()[idx] * w).sum(1) - exact).max() < 1e-5 * np.abs(exact).max()


def test_what_the_hermite_check_refuses():
    probes = np.array([[-1.0, 0.0, 0.0]])
    with pytest.raises(InputError, match="along one of the box's axes"):
        run_box_scattering(setup_for(direction=(1, 1, 0)), probes, 2, 4)
    with pytest.raises(InputError, match="rigid box"):
        run_box_scattering(setup_for(kind="sphere"), probes, 2, 4)
    with pytest.raises(InputError, match="whole multiples"):
        run_box_scattering(setup_for(size=(1.0, 0.7, 1.0)), probes, 2, 4)
    with pytest.raises(InputError, match="inside the body"):
        run_box_scattering(setup_for(), np.array([[0.1, 0.0, 0.0]]), 2, 4)


def test_frame_puts_the_wave_along_x():
    setup = setup_for(size=(1.0, 2.0, 1.0), direction=(0, -1, 0))
    frame = box_frame(setup)
    assert frame.perm.tolist() == [1, 0, 2] and frame.flip == -1.0
    np.testing.assert_allclose(frame.local([[0.2, 0.7, -0.3]]), [[-0.7, 0.2, -0.3]])


def test_the_passes_after_the_first_cover_the_surface_only():
    """The second and third dual -> primary passes run on the box's surface nodes only: the
    step's data are those of three whole passes."""
    setup = setup_for()
    grid = BoxGrid(0.125, (9, 7, 6), (4, 4, 4), np.full(3, 99.0), 2.0)
    run = BoxScattering(setup, box_frame(setup), grid, 2)
    assert run._passes == [0, 1, 2]
    dual = np.random.default_rng(7).standard_normal(run.solver.state.shape)
    t = 0.003
    got = run._dual_to_primary(dual.copy(), t)
    inc = run._incident(t)
    assert float(np.abs(inc).max()) > 1e-3
    outs = []
    for d in run._passes:
        work = dual.copy()
        run._fill_box(work, inc, run._shares[d])
        outs.append(run.solver.wall_dual_to_primary(work))
    at = (slice(None),) * 4 + run._surface
    want = outs[0].copy()
    want[at] = sum(w * o[at] for w, o in zip(run._weights, outs))
    assert float(np.abs(want[at] - outs[0][at]).max()) > 1e-3  # the passes differ there
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_the_box_passes_on_the_device_are_the_cpus(emulated_gpu, monkeypatch):
    """The whole pass and the surface passes on the "gpu" backend (the CUDA emulation of
    tests/cuda_emulation.py) give the CPU's data."""
    from wavescat.backend import get_backend
    from wavescat.timedomain.hermite import solver

    monkeypatch.setattr(solver, "get_backend", lambda name: emulated_gpu if name == "gpu" else get_backend(name))
    setup = setup_for()
    grid = BoxGrid(0.125, (9, 7, 6), (4, 4, 4), np.full(3, 99.0), 2.0)
    cpu = BoxScattering(setup, box_frame(setup), grid, 2)
    gpu = BoxScattering(setup, box_frame(setup), grid, 2, backend="gpu")
    assert gpu.solver.backend is emulated_gpu
    dual = np.random.default_rng(7).standard_normal(cpu.solver.state.shape)
    want = cpu._dual_to_primary(dual.copy(), 0.003)
    got = gpu.solver.backend.asnumpy(gpu._dual_to_primary(gpu.xp.asarray(dual), 0.003))
    np.testing.assert_allclose(got, want, atol=1e-11 * np.abs(want).max())
