"""Meshing nested bodies: one union mesh with a surface id per body, each surface checked on
its own, the nesting checked (inside the parent, outside the siblings, no crossing) with
errors naming both bodies; per-region element sizes (`mesh.resolve_interior`); the winding
number and crossing tests themselves."""
import json
import math

import numpy as np
import pytest

from wavescat.configuration.case import Case
from wavescat.errors import MeshError
from wavescat.geometry import mesh_case
from wavescat.geometry.icosphere import icosphere
from wavescat.geometry.nesting import Reach, check_nesting, crossing_points, winding_numbers
from wavescat.geometry.sizing import (element_size, element_sizes, sizing_frequencies,
                                      surface_sound_speeds)
from wavescat.surface import SurfaceMesh

MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}
FLESH = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
GAS = {"kind": "fluid", "density_ratio": 0.0012, "sound_speed_ratio": 0.22}
F = 20_000.0  # water wavelength 7.5 cm: 7.5 mm elements, gas 1.65 mm


def sphere(radius, center=(0.0, 0.0, 0.0)):
    return {"kind": "sphere", "radius": radius, "center": list(center)}


def nested(inner, outer_radius=0.02, boundary=FLESH, **mesh):
    return {"geometry": sphere(outer_radius), "boundary": boundary, "frequencies_hz": [F],
            "mesh": mesh, "inside": inner}


def typed(block, name=""):
    return Case.from_dict(block, MEDIUM, name)


def body(geometry, boundary=None, inside=None):
    out = {"geometry": geometry, "boundary": boundary or {"kind": "rigid"}}
    if inside is not None:
        out["inside"] = inside
    return out


def test_sphere_inside_a_sphere_is_one_mesh_with_two_surfaces():
    case = nested([body(sphere(0.012), GAS)])
    mesh, stats = mesh_case(typed(case, name="ball"))
    assert mesh.n_surfaces == 2 and stats["n_surfaces"] == 2
    assert mesh.surface_ids.shape == (mesh.n_triangles,)
    outer, inner = mesh.surface(0), mesh.surface(1)
    for part, r in ((outer, 0.02), (inner, 0.012)):
        assert part.enclosed_volume == pytest.approx(4 / 3 * math.pi * r**3, rel=1e-4)  # outward,
        assert np.allclose(np.linalg.norm(part.vertices, axis=1), r, rtol=0.01)  # offset to it
    assert mesh.surface_vertices(1) == slice(outer.n_vertices, mesh.n_vertices)
    s0, s1 = stats["surfaces"]
    assert (s0["where"], s1["where"]) == ("cases.ball", "cases.ball.inside[0]")
    assert (s0["vertices"], s1["vertices"]) == (outer.n_vertices, inner.n_vertices)
    assert stats["vertices"] == mesh.n_vertices and stats["elements"] == mesh.n_triangles
    # the gap: 8 mm less the offsets; over the coarser (outer) surface's mean edge
    assert stats["min_surface_gap"] == pytest.approx(0.008, rel=0.05)
    edge = np.mean(outer.edge_lengths)
    assert edge > np.mean(inner.edge_lengths)
    assert stats["min_surface_gap_over_element"] == pytest.approx(stats["min_surface_gap"] / edge)
    assert stats["surface_gaps"][0]["relation"] == "parent"
    assert stats["enclosed_volume"] == pytest.approx(outer.enclosed_volume)
    json.dumps(stats)  # the statistics file takes it as it is


def test_mesh_command_writes_the_surface_ids(tmp_path):
    """The mesh rule's .msh keeps the surfaces: physical tag i + 1, read back as ids."""
    from types import SimpleNamespace

    from wavescat.commands.mesh import run

    case = nested([body(sphere(0.01), GAS)])
    args = SimpleNamespace(case=json.dumps(case), medium=json.dumps(MEDIUM), name="ball",
                           gmsh_verbose=False, mesh=str(tmp_path / "mesh.msh"),
                           stats=str(tmp_path / "mesh_stats.json"))
    assert run(args) == 0
    back = SurfaceMesh.from_file(tmp_path / "mesh.msh")
    want, _ = mesh_case(typed(case))
    assert back.n_surfaces == 2 and back.fingerprint() == want.fingerprint()
    assert json.loads((tmp_path / "mesh_stats.json").read_text())["surfaces"][1]["where"] \
        == "cases.ball.inside[0]"


def test_inner_body_poking_out_is_refused_naming_both():
    case = nested([body(sphere(0.01, (0.015, 0, 0)), GAS)])
    with pytest.raises(MeshError) as err:
        mesh_case(typed(case, name="ball"))
    msg = str(err.value)
    assert msg.startswith("cases.ball.inside[0] (surface 1) and cases.ball (surface 0) cross "
                          "each other at ("), msg
    assert "must lie strictly inside it" in msg


def test_inner_body_outside_its_parent_is_refused_with_the_gap():
    case = nested([body(sphere(0.005, (0.04, 0, 0)))])
    with pytest.raises(MeshError) as err:
        mesh_case(typed(case, name="ball"))
    msg = str(err.value)
    assert msg.startswith("cases.ball.inside[0] (surface 1) is not inside cases.ball (surface 0)")
    gap = float(msg.split("smallest distance between them ")[1].split(" m")[0])
    assert gap == pytest.approx(0.015, rel=0.05)


def test_overlapping_siblings_are_refused():
    case = nested([body(sphere(0.006, (0.005, 0, 0)), GAS), body(sphere(0.006, (-0.005, 0, 0)))])
    with pytest.raises(MeshError) as err:
        mesh_case(typed(case, name="ball"))
    assert str(err.value).startswith("cases.ball.inside[1] (surface 2) and cases.ball.inside[0] "
                                     "(surface 1) cross each other"), str(err.value)
    assert "bodies side by side must not overlap" in str(err.value)


def test_sibling_inside_a_sibling_is_refused():
    case = nested([body(sphere(0.01), GAS), body(sphere(0.003))])
    with pytest.raises(MeshError) as err:
        mesh_case(typed(case, name="ball"))
    assert str(err.value).startswith("cases.ball.inside[1] (surface 2) lies inside "
                                     "cases.ball.inside[0] (surface 1), its sibling"), str(err.value)


def test_siblings_and_a_core_pass_and_report_their_gaps():
    """Two bodies side by side, one with a rigid core: four surfaces in depth-first order."""
    case = nested([body(sphere(0.007, (0.009, 0, 0)), FLESH, [body(sphere(0.003, (0.009, 0, 0)))]),
                   body(sphere(0.005, (-0.01, 0, 0)), GAS)], outer_radius=0.025)
    mesh, stats = mesh_case(typed(case, name="ball"))
    assert mesh.n_surfaces == 4
    assert [s["where"] for s in stats["surfaces"]] == [
        "cases.ball", "cases.ball.inside[0]", "cases.ball.inside[0].inside[0]",
        "cases.ball.inside[1]"]
    gaps = {tuple(g["surfaces"]): g for g in stats["surface_gaps"]}
    assert set(gaps) == {(0, 1), (1, 2), (0, 3), (1, 3)}
    assert gaps[(1, 3)]["relation"] == "sibling"
    assert gaps[(1, 3)]["gap"] == pytest.approx(0.007, rel=0.1)   # 19 mm apart, radii 7 + 5
    assert gaps[(1, 2)]["gap"] == pytest.approx(0.004, rel=0.1)
    assert stats["min_surface_gap"] == min(g["gap"] for g in gaps.values())


def test_fluid_body_element_size_follows_its_interior_sound_speed():
    """A gas body's elements resolve the gas's wavelength (0.22 of the water's), a faster
    fluid's the water's; `resolve_interior: false` gives the water's to every surface."""
    single = {"geometry": sphere(0.02), "frequencies_hz": [F], "boundary": GAS,
              "mesh": {"max_volume_error": None}}  # frequency sizing alone
    h_water = 1500.0 / (F * 10)
    assert element_size(typed(single)) == pytest.approx(0.22 * h_water)
    assert element_size(typed({**single, "boundary": FLESH})) == pytest.approx(h_water)
    water_case = {**single, "mesh": {"max_volume_error": None, "resolve_interior": False}}
    assert element_size(typed(water_case)) == pytest.approx(h_water)
    gas, gas_stats = mesh_case(typed(single))
    water, water_stats = mesh_case(typed(water_case))
    assert gas_stats["sizing_sound_speed"] == pytest.approx(330.0)
    assert water_stats["sizing_sound_speed"] == 1500.0
    # edges follow h (gmsh's come out a little shorter); the unknowns ~ 1 / 0.22^2
    assert 0.75 * 0.22 * h_water < gas_stats["edge_length_mean"] < 1.05 * 0.22 * h_water
    assert gas.n_vertices > 10 * water.n_vertices


def test_nested_surfaces_sized_by_their_two_sides():
    """Flesh in water: the water's; gas in flesh: the gas's; a rigid core in the gas: the
    gas's (the region outside it); the max_element_size cap holds for all."""
    case = nested([body(sphere(0.01), GAS, [body(sphere(0.004))])])
    assert surface_sound_speeds(typed(case)) == pytest.approx([1500.0, 330.0, 330.0])
    assert surface_sound_speeds(typed({**case, "mesh": {"resolve_interior": False}})) \
        == [1500.0] * 3
    h = element_sizes(typed(case))
    assert h == pytest.approx([1500 / (F * 10), 330 / (F * 10), 330 / (F * 10)])
    capped = {**case, "mesh": {"max_element_size": 0.002}}
    assert element_sizes(typed(capped)) == pytest.approx([0.002, 330 / (F * 10), 330 / (F * 10)])
    # a band below the frequency where the slowest surface reaches the cap shares one mesh
    low = {**capped, "frequencies_hz": [1000.0, 5000.0, 20000.0]}
    assert sizing_frequencies(typed(low)) == pytest.approx([330 / (10 * 0.002)] * 2 + [20000.0])
    mesh, stats = mesh_case(typed({**case, "mesh": {"max_volume_error": None}}))
    assert [s["h_requested"] for s in stats["surfaces"]] == pytest.approx(h)
    assert stats["surfaces"][1]["edge_length_mean"] < 0.3 * stats["surfaces"][0]["edge_length_mean"]


def test_winding_numbers_and_crossings_on_icospheres():
    m = icosphere(3)
    w = winding_numbers([[0, 0, 0], [0.3, -0.2, 0.5], [0.97, 0, 0], [1.03, 0, 0], [3, 1, 0]], m)
    assert w == pytest.approx([1, 1, 1, 0, 0], abs=1e-9)
    small = icosphere(2)
    inside = SurfaceMesh(0.5 * small.vertices + [0.2, 0, 0], small.triangles)
    poking = SurfaceMesh(0.5 * small.vertices + [0.7, 0, 0], small.triangles)
    reach = Reach(m)
    assert len(crossing_points(inside, m, reach)) == 0
    hits = crossing_points(poking, m, reach)
    assert len(hits) > 0 and np.allclose(np.linalg.norm(hits, axis=1), 1.0, atol=0.02)
    gap, at = reach.smallest(inside.vertices)
    assert gap == pytest.approx(0.3, abs=0.01)  # the inscribed icosphere is a little inside
    bodies = Case.from_dict({"geometry": sphere(1.0), "boundary": {
        "kind": "fluid", "density_ratio": 1, "sound_speed_ratio": 1},
        "inside": [{"geometry": sphere(0.5), "boundary": {"kind": "rigid"}}]}, MEDIUM,
        name="t").bodies
    gaps = check_nesting(SurfaceMesh.union([m, inside]), bodies)
    assert gaps[0]["gap"] == pytest.approx(gap)
    with pytest.raises(MeshError, match=r"cases.t.inside\[0\] \(surface 1\) and cases.t "
                                        r"\(surface 0\) cross each other"):
        check_nesting(SurfaceMesh.union([m, poking]), bodies)


def _rigid_core_at(dx):
    """A rigid 12 mm core in a 20 mm fluid ball, moved dx along x (elements of about 3 mm
    on the ball at 20 kHz: 7.5 mm moved leaves 0.56 mm, 6 mm 2.05 mm)."""
    return nested([body(sphere(0.012, (dx, 0, 0)))])


def test_bodies_closer_than_half_an_element_are_refused_with_the_way_out():
    """The sardine's swim bladder moved against the back of the body was meshed without a
    word (0.046 of an element between the surfaces): under half an element is refused,
    naming both bodies, the gap, the element and what to change."""
    with pytest.raises(MeshError) as err:
        mesh_case(typed(_rigid_core_at(0.0075), name="ball"))
    msg = str(err.value)
    assert msg.startswith("cases.ball.inside[0] (surface 1) and cases.ball (surface 0) come "
                          "within 0.000557 m of each other at (0.01935"), msg
    assert "0.184 of an element (the coarser surface's mean edge, 0.00302 m), less than 0.5: " \
           "the BEM cannot resolve so narrow a gap" in msg
    assert "move or shrink the body (cases.ball.inside[0].geometry) to leave a gap of at least " \
           "one element, 0.00302 m, or refine the mesh to elements no longer than the gap " \
           "(cases.ball.mesh.max_element_size: 0.00056, about 29.5 times the unknowns)" in msg


def test_bodies_within_one_element_are_warned_about(caplog):
    """From half an element to WARN_GAP_ELEMENTS (0.6): solved, with the warning in the log
    and the statistics (hence summary.json); a gap of one element or more says nothing."""
    _, stats = mesh_case(typed(_rigid_core_at(0.0064), name="ball"))
    (warning,) = stats["warnings"]
    assert warning.startswith("cases.ball.inside[0] (surface 1) and cases.ball (surface 0) come "
                              "within 0.00165 m of each other"), warning
    assert "0.546 of an element" in warning and "less than 0.6: the narrow gap costs accuracy; " \
           "move or shrink the body" in warning and warning in caplog.text
    assert stats["surface_gaps"][0]["warning"] == warning
    _, stats = mesh_case(typed(_rigid_core_at(0.005), name="ball"))
    assert stats["warnings"] == [] and stats["min_surface_gap_over_element"] > 1


def test_gap_is_surface_to_surface_not_vertex_to_surface():
    """Two tetrahedra whose edges cross 1 cm apart, each vertex 0.71 m from the other: the gap
    is the edges' distance (segment-segment), not the vertices' (point-triangle)."""
    from wavescat.geometry.checks import check_surface
    from wavescat.geometry.nesting import edge_gap, segment_distances

    faces = np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]])
    a = check_surface(SurfaceMesh(np.array([(-1, 0, 0), (1, 0, 0), (0, -1, -1), (0, 1, -1.0)]),
                                  faces), merge=False)
    b = check_surface(SurfaceMesh(np.array([(0, -1, 0.01), (0, 1, 0.01), (-1, 0, 1.01),
                                            (1, 0, 1.01)]), faces), merge=False)
    assert Reach(b).smallest(a.vertices)[0] == pytest.approx(1.01 / math.sqrt(2))
    gap, at = edge_gap(a, b, cap=1.0)
    assert gap == pytest.approx(0.01) and np.allclose(at, [0, 0, 0.005])
    assert edge_gap(a, b, cap=0.005)[0] == math.inf  # nothing nearer than the cap
    big = icosphere(2, radius=5.0)
    bodies = Case.from_dict({"geometry": sphere(5.0), "boundary": FLESH, "inside": [
        body(sphere(1.0, (0, 0, -1))), body(sphere(1.0, (0, 0, 1)))]}, MEDIUM, name="t").bodies
    with pytest.raises(MeshError, match=r"cases.t.inside\[1\] \(surface 2\) and cases.t.inside"
                                        r"\[0\] \(surface 1\) come within 0.01 m of each other"):
        check_nesting(SurfaceMesh.union([big, a, b]), bodies)
    # the closest points of segments against a fine sampling of them
    rng = np.random.default_rng(1)
    p0, p1, q0, q1 = rng.normal(size=(4, 100, 3))
    s = np.linspace(0, 1, 401)[:, None]
    sampled = [np.linalg.norm((p0[i] + s * (p1[i] - p0[i]))[:, None]
                              - (q0[i] + s * (q1[i] - q0[i]))[None], axis=2).min()
               for i in range(100)]
    exact = segment_distances(p0, p1, q0, q1)
    assert np.all(exact <= np.array(sampled) + 1e-12) and np.allclose(exact, sampled, atol=0.01)
