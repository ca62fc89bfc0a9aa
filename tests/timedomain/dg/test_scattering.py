"""Time-domain scattering by a unit sphere of each boundary kind, at deliberately coarse sizes
(order 1, about a thousand elements: seconds), against the exact series; each kind's answer
lies far from the other kinds' series, so a wrong condition, sign or DFT fails. A spheroid,
which has no series, against the BEM."""
import numpy as np
import pytest

from wavescat.bem.formulations import boundary_from, formulation_for
from wavescat.configuration.case import Case
from wavescat.errors import InputError
from wavescat.geometry.icosphere import icosphere
from wavescat.geometry.kinds import GEOMETRIES
from wavescat.geometry.volume import match_volume
from wavescat.problem.medium import Medium
from wavescat.reference.sphere import sphere_series
from wavescat.timedomain.dg.gmsh_volume import body_surface, scattering_volume_mesh
from wavescat.timedomain.dg.scatterer import Body
from wavescat.timedomain.dg.scattering import (ScatteringSetup, relative_l2, run_scattering,
                                               scattering_mesh_sizes)
from wavescat.solve.driver import solve_frequency
from wavescat.surface import SurfaceMesh

PROBES = np.array([[1.4, 0, 0], [0, 0, 1.4], [0, 0, -1.4], [0, 1.0, -1.0]])
BOUNDARIES = {"rigid": None, "pressure_release": {"kind": "pressure_release"},
              "impedance": {"kind": "impedance", "admittance": [0.5, 0.0]},
              "fluid": {"kind": "fluid", "density_ratio": 2.0, "sound_speed_ratio": 1.3}}
UNIT = Medium(density=1.0, sound_speed=1.0)


def body(geometry: dict, boundary: dict | None = None) -> Body:
    """The Body of a geometry block and a boundary block in the unit medium."""
    return Body(GEOMETRIES[geometry["kind"]].from_block(geometry), boundary_from(boundary, UNIT), UNIT)


def coarse_run(body, ks, settle=0.0, direction=(0, 0, 1), h_surface=0.7):
    """Order 1, 3 points per wavelength, elements of h_surface at the body, a thin sponge."""
    wavelength = 2 * np.pi / min(ks)
    start = 1.4 + 0.1 * wavelength
    setup = ScatteringSetup(body, np.asarray(ks, float), direction, start + 0.5 * wavelength,
                            sponge_start=start, settle_periods=settle, dft_periods=1)
    h_in, h_out, h_fill = scattering_mesh_sizes(setup, 1, 3.0, h_surface)
    mesh, regions = scattering_volume_mesh(body, setup.outer_size, h_in, h_out, "sphere", h_fill)
    return run_scattering(setup, mesh, 1, PROBES, "cpu", regions=regions)


def exact(kind, k):
    series = sphere_series(boundary_from(BOUNDARIES[kind], UNIT))
    return series.scattered_field(k, 1.0, [0, 0, 1], PROBES)


@pytest.mark.parametrize("kind", list(BOUNDARIES))
def test_each_boundary_kind_near_its_series(kind):
    res = coarse_run(body({"kind": "sphere", "radius": 1.0}, BOUNDARIES[kind]), [1.0])
    err = relative_l2(res.amplitude[0], exact(kind, 1.0))
    assert err < 0.15
    others = [relative_l2(res.amplitude[0], exact(other, 1.0)) for other in BOUNDARIES if other != kind]
    assert min(others) > 2 * err, others


def test_band_from_one_pulse_near_the_series():
    """One pulse run gives each frequency of the band as a harmonic run would."""
    ks = [1.0, 1.5, 2.0]
    res = coarse_run(body({"kind": "sphere", "radius": 1.0}), ks)
    errors = [relative_l2(a, exact("rigid", k)) for a, k in zip(res.amplitude, ks)]
    assert max(errors) < 0.2, errors
    # the amplitudes differ across the band by far more than the errors
    assert relative_l2(exact("rigid", ks[0]), exact("rigid", ks[-1])) > 0.5


def bem_scattered(semi_axes, k, direction):
    """The BEM's scattered pressure at the probes for a rigid spheroid: a dense Burton-Miller
    solve on an icosphere stretched to it and moved out to its volume (as match_volume)."""
    ico = icosphere(2)
    mesh, _ = match_volume(SurfaceMesh(ico.vertices * semi_axes, ico.triangles), 4 / 3 * np.pi * np.prod(semi_axes))
    case = Case.from_dict({"incident": {"direction": list(direction)},
                           "receivers": {"plane": "xz", "count": 3},
                           "solver": {"backend": "cpu", "operator_format": "dense"}},
                          {"density": 1.0, "sound_speed": 1.0})
    res = solve_frequency(case, mesh, k / (2 * np.pi))
    form = formulation_for(case.boundary)
    return form.potential(form.space(mesh), PROBES, k) @ res.surface_pressure[:, 0]


def test_spheroid_against_the_bem():
    """A body with no series (the cross-check verify_dg adds beyond the sphere series): DG and
    the BEM agree at the probes, and the spheroid turned (long axis along z) is far from both."""
    axes, k, direction = [1.0, 0.5, 0.5], 1.5, [0.6, 0.0, 0.8]
    res = coarse_run(body({"kind": "spheroid", "semi_axes": axes}), [k], direction=direction,
                     h_surface=0.5)
    err = relative_l2(res.amplitude[0], bem_scattered(axes, k, direction))
    assert err < 0.2
    assert relative_l2(res.amplitude[0], bem_scattered(axes[::-1], k, direction)) > 3 * err


@pytest.mark.parametrize("geometry", [{"kind": "sphere", "radius": 1.0},
                                      {"kind": "spheroid", "semi_axes": [1.0, 0.6, 0.6], "center": [0.1, 0, 0]}])
def test_mesh_encloses_the_exact_volume(geometry):
    """The body's flat facets are moved out to enclose its volume (as the BEM's match_volume);
    a fluid body's elements fill it, conforming at its surface."""
    for boundary, fill in ((None, None), (BOUNDARIES["fluid"], 0.4)):
        scatterer = body(geometry, boundary)
        mesh, regions = scattering_volume_mesh(scatterer, 2.5, 0.4, 0.8, "sphere", fill)
        surface = SurfaceMesh(mesh.vertices, body_surface(mesh, regions, scatterer))
        assert surface.enclosed_volume == pytest.approx(scatterer.exact_volume(), rel=1e-3)  # inscribed: 2% short
        inside = np.isclose(np.abs(mesh.signed_volumes()[regions == 1]).sum(), scatterer.exact_volume(),
                            rtol=1e-3)
        assert inside if fill else not (regions == 1).any()


@pytest.mark.parametrize("boundary, message", [
    ({"kind": "impedance", "admittance": [0.5, 0.2]}, "real admittance"),
    ({"kind": "fluid", "density_ratio": 2.0, "sound_speed_ratio": 1.3, "absorption_db_per_wavelength": 1.0},
     "lossless fluid"),
])
def test_conditions_without_a_time_domain_model_are_refused(boundary, message):
    with pytest.raises(InputError, match=message):
        body({"kind": "sphere", "radius": 1.0}, boundary)


def test_probe_inside_the_body_is_refused():
    setup = ScatteringSetup(body({"kind": "box", "size": [1.0, 2.0, 1.0]}), [1.0], [0, 0, 1], 4.0)
    with pytest.raises(InputError, match=r"probe point \[0.0, 0.9, 0.0\] lies inside the body"):
        run_scattering(setup, None, 1, [[0.0, 0.9, 0.0]])
