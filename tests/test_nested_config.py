"""Config of nested bodies (`inside:`): where they may be, what they need, the body tree in
surface order, studies over them, and the keys the solve gets."""
import copy

import pytest

from wavescat.bem.formulations import boundary_from
from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config, solve_case
from wavescat.errors import ConfigError
from wavescat.geometry.kinds import GEOMETRIES

MEDIUM = {"sound_speed": 1477.3, "density": 1026.8}
FLESH = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
GAS = {"kind": "fluid", "density": 1.24, "sound_speed": 345.0}


def _fish(**outer):
    return {"geometry": {"kind": "spheroid", "semi_axes": [0.12, 0.02, 0.025]},
            "frequencies_hz": [38000.0], "boundary": FLESH,
            "inside": [{"geometry": {"kind": "spheroid", "semi_axes": [0.035, 0.005, 0.005]},
                        "boundary": GAS,
                        "inside": [{"geometry": {"kind": "sphere", "radius": 0.002},
                                    "boundary": {"kind": "rigid"}}]},
                       {"geometry": {"kind": "sphere", "radius": 0.004, "center": [0.08, 0, 0]},
                        "boundary": {"kind": "pressure_release"}}], **outer}


def _config(case):
    return {"medium": MEDIUM, "run": ["fish"], "cases": {"fish": case}}


def test_nested_case_valid_and_normalised():
    cfg = prepare_config(_config(_fish()))
    case = cfg["cases"]["fish"]
    assert case["inside"][0]["geometry"]["center"] == [0.0, 0.0, 0.0]  # filled as on the case
    assert case["inside"][0]["inside"][0]["boundary"] == {"kind": "rigid"}
    solve = solve_case(cfg, "fish")  # the solve gets the bodies
    assert [b.geometry for b in solve.bodies] == [b.geometry for b in
                                                 Case.from_config(cfg, "fish").bodies]
    assert len(solve.bodies) == 4


def test_body_tree_in_surface_order():
    fish = _fish()
    bodies = Case.from_dict(fish, MEDIUM, name="fish").bodies
    assert [(b.index, b.parent, b.depth, b.kind) for b in bodies] == [
        (0, -1, 0, "fluid"), (1, 0, 1, "fluid"), (2, 1, 2, "rigid"), (3, 0, 1, "pressure_release")]
    assert [b.where for b in bodies] == ["cases.fish", "cases.fish.inside[0]",
                                         "cases.fish.inside[0].inside[0]", "cases.fish.inside[1]"]
    # ratios are relative to the medium, never to the enclosing body
    assert bodies[0].sound_speed == pytest.approx(1.04 * 1477.3)
    assert bodies[0].density == pytest.approx(1.04 * 1026.8)
    assert (bodies[1].sound_speed, bodies[1].density) == (345.0, 1.24)
    assert bodies[2].sound_speed is None and bodies[3].sound_speed is None
    # the blocks as given, read into their types
    assert bodies[1].geometry == GEOMETRIES["spheroid"].from_block(fish["inside"][0]["geometry"])
    assert bodies[1].boundary == boundary_from(GAS, Case.from_dict({}, MEDIUM).medium)
    one = Case.from_dict({"geometry": {"kind": "sphere", "radius": 1.0}}, MEDIUM).bodies
    assert len(one) == 1 and one[0].boundary.kind == "rigid" and one[0].where == "case"
    ratio = Case.from_dict({"boundary": {"kind": "fluid", "sound_speed_ratio": 0.5,
                                         "density": 1.0}}, MEDIUM)
    assert ratio.bodies[0].sound_speed == pytest.approx(738.65)


def _mutated(path, value):
    case = _fish()
    node = case
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return case


@pytest.mark.parametrize("case, message", [
    (_fish(boundary={"kind": "rigid"}),
     "cases.fish.inside: bodies inside a rigid body are not possible"),
    (_fish(boundary={"kind": "pressure_release"}),
     "cases.fish.inside: bodies inside a pressure-release body are not possible"),
    (_fish(boundary={"kind": "impedance", "admittance": [1, 0]}),
     "cases.fish.inside: bodies inside an impedance body are not possible"),
    (_mutated(["inside", 0, "inside", 0, "inside"],
              [{"geometry": {"kind": "sphere", "radius": 0.001}, "boundary": {"kind": "rigid"}}]),
     "cases.fish.inside[0].inside[0].inside: bodies inside a rigid body are not possible"),
    (_mutated(["inside", 1, "boundary"], {"kind": "impedance", "admittance": [1, 0]}),
     "cases.fish.inside[1].boundary.kind = 'impedance': a body inside another must be one of "
     "rigid, pressure_release, fluid"),
    (_mutated(["inside", 1, "boundary"], None),
     "cases.fish.inside[1]: missing required key 'boundary'"),
    (_mutated(["inside", 1, "geometry"], None),
     "cases.fish.inside[1]: missing required key 'geometry'"),
    (_mutated(["inside", 1, "geometry"], {"kind": "sphere"}),
     "cases.fish.inside[1].geometry: kind 'sphere' needs key 'radius'"),
    (_mutated(["inside", 1, "geometry"], {"kind": "sphere", "radius": 0.01, "size": [1, 1, 1]}),
     "cases.fish.inside[1].geometry.size = [1, 1, 1]: not a key of geometry kind 'sphere'"),
    (_mutated(["inside", 1, "geometry", "radius"], -1.0),
     "cases.fish.inside[1].geometry.radius = -1.0: must be > 0"),
    (_mutated(["inside", 0, "boundary"], {"kind": "fluid", "density": 1.24}),
     "cases.fish.inside[0].boundary.sound_speed_ratio / sound_speed: boundary kind 'fluid' "
     "needs exactly one of them (neither is given)"),
    (_mutated(["inside", 1, "boundary"], {"kind": "rigid", "density": 3.0}),
     "cases.fish.inside[1].boundary.density = 3.0: not a key of boundary kind 'rigid'"),
    (_mutated(["inside", 1, "colour"], "red"),
     "cases.fish.inside[1]: unknown key 'colour'"),
    (_mutated(["inside"], {"geometry": {"kind": "sphere", "radius": 0.01}}),
     "cases.fish.inside = "),
])
def test_bad_nested_config_names_the_key(case, message):
    with pytest.raises(ConfigError) as err:
        prepare_config(_config(case))
    assert str(err.value).startswith(message), str(err.value)


def test_resolve_interior_must_be_a_boolean():
    with pytest.raises(ConfigError, match=r"cases.fish.mesh.resolve_interior = 'yes'"):
        prepare_config(_config(_fish(mesh={"resolve_interior": "yes"})))


def test_study_varies_a_nested_body():
    """`inside.0.boundary.sound_speed` indexes the list; `boundary` is a case key too."""
    cfg = _config(_fish())
    cfg["run"] = ["gas"]
    cfg["studies"] = {"gas": {"cases": ["fish"],
                              "vary": {"inside.0.boundary.sound_speed": [300.0, 345.0]},
                              "set": {"boundary.sound_speed_ratio": 1.03}}}
    out = prepare_config(cfg)
    made = {n: c for n, c in out["cases"].items() if c.get("study", {}).get("name") == "gas"}
    assert sorted(made) == ["gas_fish_sound_speed-300", "gas_fish_sound_speed-345"]
    assert made["gas_fish_sound_speed-300"]["inside"][0]["boundary"]["sound_speed"] == 300.0
    assert made["gas_fish_sound_speed-300"]["boundary"]["sound_speed_ratio"] == 1.03
    assert out["cases"]["fish"]["inside"][0]["boundary"]["sound_speed"] == 345.0  # base intact
    bad = copy.deepcopy(cfg)
    bad["studies"]["gas"]["vary"] = {"inside.2.boundary.sound_speed": [300.0]}
    with pytest.raises(ConfigError, match=r"'2' is not an index of a list of 2"):
        prepare_config(bad)


def test_an_inner_sphere_larger_than_its_parent_is_refused_before_any_job():
    """Bounding boxes from the parameters: a 12 mm sphere cannot be inside a 10 mm one."""
    from wavescat.configuration.config import prepare_config
    from wavescat.errors import ConfigError

    config = {"run": ["f"], "cases": {"f": {
        "geometry": {"kind": "sphere", "radius": 0.01},
        "boundary": {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04},
        "inside": [{"geometry": {"kind": "sphere", "radius": 0.012},
                    "boundary": {"kind": "rigid"}}],
        "frequencies_hz": [38000.0]}}}
    with pytest.raises(ConfigError, match=r"cases.f.inside\[0\].geometry: its bounding box .* "
                                          r"is not inside that of cases.f"):
        prepare_config(config)
