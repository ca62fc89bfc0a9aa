"""Config validation: the default config passes; each kind of bad config names key and value."""
import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from wavescat.configuration.config import frequencies, load_schema, prepare_config
from wavescat.errors import ConfigError
from wavescat.geometry.submarine import DEFAULTS as SUBMARINE_DEFAULTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default():
    with open(ROOT / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


def test_default_config_valid_and_defaults_filled(default):
    from wavescat import defaults

    cfg = prepare_config(default, base_dir=ROOT)
    case = cfg["cases"]["sphere_ka5"]
    assert case["solver"]["gmres"] == defaults.GMRES
    assert case["solver"]["osrc"] == defaults.OSRC
    assert case["mesh"]["max_element_size"] is None
    assert case["geometry"]["center"] == [0.0, 0.0, 0.0]
    assert cfg["medium"]["sound_speed"] == defaults.MEDIUM["sound_speed"]
    assert set(cfg["run"]) <= set(cfg["cases"])


def test_schema_is_parsed_once_per_version_of_its_file(tmp_path):
    """load_schema parses a file once per (path, modification time, size) and hands each
    caller a copy of its own; an edited file is read again; the package's schema reads as
    PyYAML's pure-Python safe_load reads it (exponent numbers stay strings, as there)."""
    import os

    from wavescat.defaults import SCHEMA_PATH

    path = tmp_path / "schema.yaml"
    path.write_text("a: 1\nb: 1e-5\n")
    first = load_schema(path)
    assert first == {"a": 1, "b": "1e-5"}
    first["a"] = 2  # the caller's copy
    assert load_schema(path) == {"a": 1, "b": "1e-5"}
    mtime = path.stat().st_mtime_ns
    path.write_text("a: 7\nb: 1e-5\n")  # the same size: the modification time tells
    os.utime(path, ns=(mtime + 10**9, mtime + 10**9))
    assert load_schema(path)["a"] == 7
    with open(SCHEMA_PATH) as fh:
        assert load_schema() == yaml.safe_load(fh)


def test_frequency_sweep_expands():
    assert frequencies({"start": 100, "stop": 200, "count": 3}) == [100.0, 150.0, 200.0]
    assert frequencies([50, 70]) == [50.0, 70.0]


def test_numbers_written_with_an_exponent_are_numbers(default):
    """YAML 1.1 reads 1e-4 (no dot) as a string: where the schema wants a number it is the
    number the user wrote, in lists and sweeps too; strings elsewhere stay strings, and what
    is no number still names the key."""
    text = ("run: [s]\ncases:\n  s:\n    description: 2e3\n"
            "    geometry: {kind: sphere, radius: 1e0}\n    frequencies_hz: [2e2, 3E+2]\n"
            "    solver: {hmatrix: {eps: 1e-3, leaf_size: 3.2e1}}\n")
    raw = yaml.safe_load(text)
    assert raw["cases"]["s"]["solver"]["hmatrix"]["eps"] == "1e-3"  # what the loader gives
    case = prepare_config({**default, **raw}, base_dir=ROOT)["cases"]["s"]
    assert case["description"] == "2e3"
    assert case["geometry"]["radius"] == 1.0
    assert case["frequencies_hz"] == [200.0, 300.0]
    assert case["solver"]["hmatrix"]["eps"] == 1e-3
    assert case["solver"]["hmatrix"]["leaf_size"] == 32
    assert isinstance(case["solver"]["hmatrix"]["leaf_size"], int)
    raw["cases"]["s"]["frequencies_hz"] = {"start": "1e2", "stop": "2e2", "count": 3}
    assert prepare_config({**default, **raw}, base_dir=ROOT)["cases"]["s"]["frequencies_hz"] \
        == [100.0, 150.0, 200.0]
    raw["cases"]["s"]["solver"]["hmatrix"]["eps"] = "1e-3 Pa"
    with pytest.raises(ConfigError, match=r"cases\.s\.solver\.hmatrix\.eps = '1e-3 Pa': must be of type number"):
        prepare_config({**default, **raw}, base_dir=ROOT)
    raw["cases"]["s"]["solver"]["hmatrix"]["eps"] = "-1e-3"
    with pytest.raises(ConfigError, match=r"cases\.s\.solver\.hmatrix\.eps = -0\.001: must be > 0"):
        prepare_config({**default, **raw}, base_dir=ROOT)


def test_sweep_in_config_and_direction_normalised(default):
    cfg = copy.deepcopy(default)
    case = cfg["cases"]["sphere_ka5"]
    case["frequencies_hz"] = {"start": 100, "stop": 300, "count": 5}
    case["incident"] = {"direction": [0, 3, 4]}
    out = prepare_config(cfg, base_dir=ROOT)["cases"]["sphere_ka5"]
    assert out["frequencies_hz"] == [100.0, 150.0, 200.0, 250.0, 300.0]
    assert out["incident"]["direction"] == pytest.approx([0, 0.6, 0.8])


def _set(path, value):
    def apply(cfg):
        node = cfg
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return apply


BAD = [
    (_set(["cases", "submarine", "frequencies_hz"], [-50]),
     "cases.submarine.frequencies_hz[0] = -50: must be > 0"),
    (_set(["cases", "submarine", "solver"], {"quadrature": {"singular": [5, 5]}}),
     "cases.submarine.solver.quadrature.singular = [5, 5]: must have at least 3 item(s)"),
    (_set(["cases", "submarine", "solver"], {"quadrature": {"singular": [5, 5, 0]}}),
     "cases.submarine.solver.quadrature.singular[2] = 0: must be >= 1"),
    (_set(["cases", "submarine", "frequencies_hz"], [100, 0]),
     "cases.submarine.frequencies_hz[1] = 0: must be > 0"),
    (_set(["cases", "submarine", "geometry", "kind"], "torus"),
     "cases.submarine.geometry.kind = 'torus': unknown geometry kind"),
    (_set(["colour"], "red"), "unknown key 'colour'"),
    (_set(["cases", "sphere_ka5", "colour"], "red"), "cases.sphere_ka5: unknown key 'colour'"),
    (_set(["cases", "sphere_ka5", "geometry", "radius"], "big"),
     "cases.sphere_ka5.geometry.radius = 'big': must be of type number"),
    (_set(["cases", "sphere_ka5", "geometry", "semi_axes"], [1, 2, 3]),
     "cases.sphere_ka5.geometry.semi_axes = [1, 2, 3]: not a key of geometry kind 'sphere'"),
    (_set(["cases", "submarine", "geometry"], {"kind": "file", "path": "meshes/none.step"}),
     "cases.submarine.geometry.path = 'meshes/none.step': file not found"),
    (_set(["cases", "submarine", "geometry"], {"kind": "file", "path": "README.md"}),
     "cases.submarine.geometry.path = 'README.md': unsupported file type"),
    (_set(["run"], []), "run = []: must have at least 1 item"),
    (_set(["run"], ["nope"]), "run[0] = 'nope': no such case"),
    (_set(["medium", "sound_speed"], 0), "medium.sound_speed = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "backend"], "tpu"),
     "cases.sphere_ka5.solver.backend = 'tpu': must be one of auto, cpu, gpu"),
    (_set(["cases", "sphere_ka5", "incident", "direction"], [0, 0, 0]),
     "cases.sphere_ka5.incident.direction = [0, 0, 0]: must be a non-zero finite vector"),
    (_set(["cases", "sphere_ka5", "frequencies_hz"], {"start": 300, "stop": 100, "count": 3}),
     "cases.sphere_ka5.frequencies_hz.stop = 100: must be >= start"),
    (_set(["cases", "sphere_ka5", "receivers"], {"plane": "xz", "directions_deg": [[90, 0]]}),
     "cases.sphere_ka5.receivers = "),
    (_set(["cases", "sphere_ka5", "mesh", "elements_per_wavelength"], -1),
     "cases.sphere_ka5.mesh.elements_per_wavelength = -1: must be > 0"),
]
# the ranks of one solve share H-matrix blocks: a dense solve cannot be split among them
BAD.append((_set(["cases", "sphere_ka5", "solver"], {"operator_format": "dense", "ranks": 2}),
            "cases.sphere_ka5.solver.operator_format = 'dense' with 2 ranks: a solve over "
            "several ranks shares H-matrix blocks"))
# YAML's .nan and .inf are numbers to the schema; each must be refused at its key.
NAN, INF = float("nan"), float("inf")
BAD += [
    (_set(["cases", "sphere_ka5", "frequencies_hz"], [NAN]),
     "cases.sphere_ka5.frequencies_hz[0] = nan: must be a finite number"),
    (_set(["cases", "sphere_ka5", "frequencies_hz"], [100.0, INF]),
     "cases.sphere_ka5.frequencies_hz[1] = inf: must be a finite number"),
    (_set(["cases", "sphere_ka5", "frequencies_hz"], {"start": 100, "stop": INF, "count": 3}),
     "cases.sphere_ka5.frequencies_hz.stop = inf: must be a finite number"),
    (_set(["cases", "sphere_ka5", "geometry", "radius"], NAN),
     "cases.sphere_ka5.geometry.radius = nan: must be a finite number"),
    (_set(["cases", "sphere_ka5", "geometry", "center"], [0, -INF, 0]),
     "cases.sphere_ka5.geometry.center[1] = -inf: must be a finite number"),
    (_set(["cases", "submarine", "geometry", "hull_length"], INF),
     "cases.submarine.geometry.hull_length = inf: must be a finite number"),
    (_set(["cases", "sphere_ka5", "incident", "direction"], [0, NAN, 1]),
     "cases.sphere_ka5.incident.direction[1] = nan: must be a finite number"),
    (_set(["cases", "sphere_ka5", "receivers"], {"directions_deg": [[90, INF]]}),
     "cases.sphere_ka5.receivers.directions_deg[0][1] = inf: must be a finite number"),
    (_set(["cases", "sphere_ka5", "mesh", "max_element_size"], INF),
     "cases.sphere_ka5.mesh.max_element_size = inf: must be a finite number"),
    (_set(["medium", "sound_speed"], NAN), "medium.sound_speed = nan: must be a finite number"),
    (_set(["studies"], {"s": {"cases": ["sphere_ka5"], "vary": {"geometry.radius": [1, NAN]}}}),
     "studies.s.vary.geometry.radius[1] = nan: must be a finite number"),
]
# A name is one folder under results/: `.` and `..` would write beside or above it.
for _section in ("cases", "studies"):
    for _name in (".", "..", ".hidden", "-x", "a/b"):
        BAD.append((
            lambda cfg, section=_section, name=_name: cfg.setdefault(section, {}).update(
                {name: copy.deepcopy(cfg["cases"]["sphere_ka5"]) if section == "cases"
                 else {"cases": ["sphere_ka5"]}}),
            f"{_section}: name {_name!r} is not usable"))


def test_bad_config_names_key_and_value(default, mutate, message):
    cfg = copy.deepcopy(default)
    mutate(cfg)
    with pytest.raises(ConfigError) as info:
        prepare_config(cfg, base_dir=ROOT)
    assert message in str(info.value)


@pytest.mark.parametrize("fmt", ["hmatrix", "directional", "auto"])
def test_formats_that_share_blocks_take_several_ranks(default, fmt):
    """H-matrix and directional operators are shared out among the ranks of one solve (the
    directional far field by its components or blocks): only dense is refused above."""
    cfg = copy.deepcopy(default)
    _set(["cases", "sphere_ka5", "solver"], {"operator_format": fmt, "ranks": 2})(cfg)
    solver = prepare_config(cfg, base_dir=ROOT)["cases"]["sphere_ka5"]["solver"]
    assert solver["operator_format"] == fmt and solver["ranks"] == 2


def test_user_list_replaces_default_list(default, tmp_path):
    """Snakemake merges --configfile dicts key by key and replaces lists: check our view of it."""
    from snakemake.utils import update_config

    cfg = copy.deepcopy(default)
    update_config(cfg, {"run": ["sphere_band"]})
    assert prepare_config(cfg, base_dir=ROOT)["run"] == ["sphere_band"]


def test_schema_lists_exactly_the_submarine_keys_the_builder_knows():
    from wavescat.configuration.config import load_schema
    from wavescat.geometry.kinds import GEOMETRIES
    from wavescat.geometry.submarine import DEFAULTS

    props = set(load_schema()["$defs"]["geometry"]["properties"])
    assert set(DEFAULTS) == GEOMETRIES["submarine"].keys()
    assert set(DEFAULTS) <= props


def test_geometry_kinds_are_the_schemas():
    """The schema lists the geometry kinds a user may name and their keys; each kind is one
    class whose fields are its keys."""
    from wavescat.configuration.config import load_schema
    from wavescat.geometry.kinds import GEOMETRIES

    geometry = load_schema()["$defs"]["geometry"]
    assert list(GEOMETRIES) == geometry["properties"]["kind"]["enum"]
    for cls in GEOMETRIES.values():
        assert cls.keys() | {"kind", "center"} <= set(geometry["properties"]), cls.kind


def test_submarine_key_of_other_kind_refused(default):
    cfg = copy.deepcopy(default)
    cfg["cases"]["submarine"]["geometry"]["hull_length"] = -3
    with pytest.raises(ConfigError, match=r"cases.submarine.geometry.hull_length = -3: must be > 0"):
        prepare_config(cfg, base_dir=ROOT)
    cfg = copy.deepcopy(default)
    cfg["cases"]["sphere_ka5"]["geometry"]["hull_length"] = 30
    with pytest.raises(ConfigError, match="not a key of geometry kind 'sphere'"):
        prepare_config(cfg, base_dir=ROOT)


def _set_geometry(case, geometry):
    return _set(["cases", case, "geometry"], geometry)


# A value just outside every numeric bound of the schema, at a place the default config has
# (test_every_schema_bound_is_tested checks that the list covers them all).
BOUND = [
    (_set(["cases", "sphere_ka5", "near_field"], {"plane": "xz", "incidence": -1}),
     "cases.sphere_ka5.near_field.incidence = -1: must be >= 0"),
    (_set(["cases", "sphere_ka5", "near_field"], {"plane": "xz", "size": [2.0, 0.0]}),
     "cases.sphere_ka5.near_field.size[1] = 0.0: must be > 0"),
    (_set(["cases", "sphere_ka5", "near_field"], {"plane": "xz", "points": 1}),
     "cases.sphere_ka5.near_field.points = 1: must be >= 2"),
    (_set(["cases", "sphere_ka5", "near_field"], {"plane": "xz", "points": 5000}),
     "cases.sphere_ka5.near_field.points = 5000: must be <= 2001"),
    (_set(["cases", "sphere_ka5", "near_field"], {"plane": "xz", "incidence": 1}),
     "cases.sphere_ka5.near_field.incidence = 1: the case has 1 incidence direction(s), "
     "numbered from 0"),
    (_set(["medium", "density"], 0), "medium.density = 0: must be > 0"),
    (_set(["medium", "density"], -1000.0), "medium.density = -1000.0: must be > 0"),
    (_set(["medium", "sound_speed"], -1), "medium.sound_speed = -1: must be > 0"),
    (_set(["cases", "sphere_ka5", "frequencies_hz"], {"start": 0, "stop": 10, "count": 3}),
     "cases.sphere_ka5.frequencies_hz.start = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "frequencies_hz"], {"start": 10, "stop": -5, "count": 3}),
     "cases.sphere_ka5.frequencies_hz.stop = -5: must be > 0"),
    (_set(["cases", "sphere_ka5", "frequencies_hz"], {"start": 10, "stop": 20, "count": 0}),
     "cases.sphere_ka5.frequencies_hz.count = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "incident"], {"aspect": {"plane": "xy", "count": 0}}),
     "cases.sphere_ka5.incident.aspect.count = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "receivers"], {"plane": "xy", "count": 0}),
     "cases.sphere_ka5.receivers.count = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "mesh", "elements_per_wavelength"], 0),
     "cases.sphere_ka5.mesh.elements_per_wavelength = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "mesh", "max_element_size"], 0),
     "cases.sphere_ka5.mesh.max_element_size = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "mesh", "curvature_refinement"], -1),
     "cases.sphere_ka5.mesh.curvature_refinement = -1: must be >= 0"),
    (_set(["cases", "sphere_ka5", "mesh", "max_volume_error"], 0),
     "cases.sphere_ka5.mesh.max_volume_error = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "mesh", "max_volume_error"], 1),
     "cases.sphere_ka5.mesh.max_volume_error = 1: must be < 1"),
    (_set(["cases", "sphere_ka5", "mesh", "match_volume"], "yes"),
     "cases.sphere_ka5.mesh.match_volume = 'yes': must be one of auto"),
    (_set(["cases", "sphere_ka5", "mesh", "band_ratio"], 0.9),
     "cases.sphere_ka5.mesh.band_ratio = 0.9: must be >= 1"),
    (_set(["limits"], {"host_memory_gb": 0}), "limits.host_memory_gb = 0: must be > 0"),
    (_set(["limits"], {"gpu_memory_gb": -1}), "limits.gpu_memory_gb = -1: must be > 0"),
    (_set(["limits"], {"max_unknowns": 0}), "limits.max_unknowns = 0: must be >= 1"),
    (_set_geometry("sphere_ka5", {"kind": "cylinder", "radius": 1.0, "length": 0}),
     "cases.sphere_ka5.geometry.length = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "gmres"], {"tol": 0}),
     "cases.sphere_ka5.solver.gmres.tol = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "gmres"], {"tol": 1}),
     "cases.sphere_ka5.solver.gmres.tol = 1: must be < 1"),
    (_set(["cases", "sphere_ka5", "solver", "gmres"], {"restart": 0}),
     "cases.sphere_ka5.solver.gmres.restart = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "solver", "gmres"], {"maxiter": 0}),
     "cases.sphere_ka5.solver.gmres.maxiter = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "solver", "osrc"], {"pade_terms": 0}),
     "cases.sphere_ka5.solver.osrc.pade_terms = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "solver", "osrc"], {"radius": 0}),
     "cases.sphere_ka5.solver.osrc.radius = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "hmatrix"], {"eps": 0}),
     "cases.sphere_ka5.solver.hmatrix.eps = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "hmatrix"], {"eps": 1}),
     "cases.sphere_ka5.solver.hmatrix.eps = 1: must be < 1"),
    (_set(["cases", "sphere_ka5", "solver", "hmatrix"], {"eta": 0}),
     "cases.sphere_ka5.solver.hmatrix.eta = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "hmatrix"], {"kd_max": 0}),
     "cases.sphere_ka5.solver.hmatrix.kd_max = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "hmatrix"], {"leaf_size": 3}),
     "cases.sphere_ka5.solver.hmatrix.leaf_size = 3: must be >= 4"),
    (_set(["cases", "sphere_ka5", "solver", "hmatrix"], {"dense_below": 0}),
     "cases.sphere_ka5.solver.hmatrix.dense_below = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "solver"], {"ranks": 0}),
     "cases.sphere_ka5.solver.ranks = 0: must be >= 1"),
    (_set(["cases", "sphere_ka5", "solver", "directional"], {"order": 1}),
     "cases.sphere_ka5.solver.directional.order = 1: must be >= 2"),
    (_set(["cases", "sphere_ka5", "solver", "directional"], {"order": 13}),
     "cases.sphere_ka5.solver.directional.order = 13: must be <= 12"),
    (_set(["cases", "sphere_ka5", "solver", "directional"], {"eta2": 0}),
     "cases.sphere_ka5.solver.directional.eta2 = 0: must be > 0"),
    (_set(["cases", "sphere_ka5", "solver", "directional"], {"aca_kd_max": 0}),
     "cases.sphere_ka5.solver.directional.aca_kd_max = 0: must be > 0"),
    *[(_set(["cases", "sphere_ka5", "solver", "quadrature"], {rule: bad}),
       f"cases.sphere_ka5.solver.quadrature.{rule} = {bad}: must be {what}")
      for rule in ("regular", "singular", "near") for bad, what in ((0, ">= 1"), (21, "<= 20"))],
    (_set(["cases", "sphere_band", "dg_cross_check", "order"], 0),
     "cases.sphere_band.dg_cross_check.order = 0: must be >= 1"),
    (_set(["cases", "sphere_band", "dg_cross_check", "order"], 7),
     "cases.sphere_band.dg_cross_check.order = 7: must be <= 6"),
    (_set(["cases", "sphere_band", "dg_cross_check", "points_per_wavelength"], 0),
     "cases.sphere_band.dg_cross_check.points_per_wavelength = 0: must be > 0"),
    *[(_set(["cases", "sphere_band", "hermite_cross_check"], {key: bad}),
       f"cases.sphere_band.hermite_cross_check.{key} = {bad}: must be {what}")
      for key, bad, what in (("degree", 0, ">= 1"), ("degree", 4, "<= 3"),
                             ("cells_per_wavelength", 0, "> 0"), ("cells_per_half_side", 0, "> 0"),
                             ("sponge_gap", -0.5, ">= 0"),
                             ("sponge_width", 0, "> 0"))],
    (_set(["cases", "sphere_ka5", "geometry", "radius"], 0), "cases.sphere_ka5.geometry.radius = 0: must be > 0"),
    (_set_geometry("sphere_ka5", {"kind": "spheroid", "semi_axes": [1, -2, 3]}),
     "cases.sphere_ka5.geometry.semi_axes[1] = -2: must be > 0"),
    (_set_geometry("sphere_ka5", {"kind": "box", "size": [1, 2, 0]}),
     "cases.sphere_ka5.geometry.size[2] = 0: must be > 0"),
    (_set_geometry("sphere_ka5", {"kind": "file", "path": "meshes/box.geo", "scale": 0}),
     "cases.sphere_ka5.geometry.scale = 0: must be > 0"),
    *[(_set(["cases", "submarine", "geometry", key], 0), f"cases.submarine.geometry.{key} = 0: must be > 0")
      for key, value in sorted(SUBMARINE_DEFAULTS.items()) if not isinstance(value, str)],
]
if "boundary" in load_schema()["$defs"]["case"]["properties"]:  # the fluid body's constants
    BOUND += [(_set(["cases", "sphere_ka5", "boundary"], {"kind": "fluid", key: 0}),
               f"cases.sphere_ka5.boundary.{key} = 0: must be > 0")
              for key in ("density_ratio", "density", "sound_speed_ratio", "sound_speed")]
    BOUND += [(_set(["cases", "sphere_ka5", "boundary"],
                    {"kind": "fluid", "density": 1.24, "sound_speed": 345,
                     "absorption_db_per_wavelength": -1}),
               "cases.sphere_ka5.boundary.absorption_db_per_wavelength = -1: must be >= 0")]

# The checks config.py makes beyond the schema, one bad value each.
EXPLICIT = [
    (_set_geometry("sphere_ka5", {"kind": "sphere"}), "cases.sphere_ka5.geometry: kind 'sphere' needs key 'radius'"),
    (_set(["cases", "sphere_ka5", "incident"], {"direction": [0, 0, 1], "directions": [[0, 0, 1]]}),
     "cases.sphere_ka5.incident = "),
    (_set(["cases", "sphere_ka5", "incident"], {"directions": [[0, 0, 1], [0, 0, 0]]}),
     "cases.sphere_ka5.incident.directions[1] = [0, 0, 0]: must be a non-zero finite vector"),
    (_set(["cases", "sphere_ka5", "receivers"], {"directions_deg": [[90, 0]], "count": 3}),
     "cases.sphere_ka5.receivers.count = 3: only used with plane"),
    (_set(["cases", "sphere_soft_ka2", "geometry"], {"kind": "cylinder", "radius": 1, "length": 2}),
     "cases.sphere_soft_ka2.dg_cross_check: the time-domain cross-check meshes a sphere, spheroid "
     "or box, not geometry kind 'cylinder'"),
    (_set(["cases", "sphere_soft_ka2", "dg_cross_check", "probes"], [[0, 0, 3], [0, 0.5, 0.5]]),
     "cases.sphere_soft_ka2.dg_cross_check.probes[1] = [0, 0.5, 0.5]: must lie outside the sphere"),
    (_set(["cases", "spheroid_ka2", "dg_cross_check", "probes"], [[1.1, 0, 0.1]]),
     "cases.spheroid_ka2.dg_cross_check.probes[0] = [1.1, 0, 0.1]: must lie outside the spheroid"),
    (_set(["cases", "sphere_impedance_ka2", "boundary"], {"kind": "impedance", "admittance": [0.5, 0.3]}),
     "cases.sphere_impedance_ka2.dg_cross_check: admittance = (0.5+0.3j): the time domain "
     "takes a real admittance"),
]


# --- averages (issue 26) ---
def _averages(averages, frequencies=(900.0, 1000.0, 1100.0), aspect=None):
    def apply(cfg):
        case = cfg["cases"]["sphere_ka5"]
        case["averages"] = averages
        case["frequencies_hz"] = list(frequencies)
        case["incident"] = {"aspect": aspect or {"plane": "xz", "start_deg": 0.0,
                                                 "stop_deg": 180.0, "count": 181}}
    return apply


if "averages" in load_schema()["$defs"]["case"]["properties"]:
    _TILT = {"mean_deg": 0.0, "std_deg": 10.0}
    BOUND += [
        (_averages({"band": {"center_hz": 0, "width_hz": 100}}),
         "cases.sphere_ka5.averages.band.center_hz = 0: must be > 0"),
        (_averages({"band": [{"center_hz": 1000, "width_hz": 0}]}),
         "cases.sphere_ka5.averages.band[0].width_hz = 0: must be > 0"),
        (_averages({"tilt": {"mean_deg": 0, "std_deg": 0}}),
         "cases.sphere_ka5.averages.tilt.std_deg = 0: must be > 0"),
        (_averages({"tilt": [{**_TILT, "cover_std": -1}]}),
         "cases.sphere_ka5.averages.tilt[0].cover_std = -1: must be >= 0"),
        (_averages({"tilt": {**_TILT, "points_per_std": 0}}),
         "cases.sphere_ka5.averages.tilt.points_per_std = 0: must be > 0"),
    ]
    EXPLICIT += [
        (lambda cfg: cfg["cases"]["sphere_ka5"].update(averages={"tilt": _TILT}),
         "cases.sphere_ka5.averages: averages are taken over the monostatic TS of an aspect "
         "sweep; give cases.sphere_ka5.incident.aspect"),
        (_averages({"band": {"center_hz": 1000, "width_hz": 100}}),
         "cases.sphere_ka5.averages.band: band 950-1050 Hz (center 1000, width 100) holds 1 of "
         "the case's frequencies (1000); a band average needs at least 3"),
        (_averages({"band": [{"center_hz": 1000, "width_hz": 200},
                             {"center_hz": 1000, "width_hz": 150}]}),
         "cases.sphere_ka5.averages.band[1]: band 925-1075 Hz"),
        (_averages({"tilt": [_TILT, {"mean_deg": 80, "std_deg": 10}]}),
         "cases.sphere_ka5.averages.tilt[1]: tilt N(80, 10) deg is at aspect 10 +- 20 deg "
         "(mean +- 2 std; aspect = 90 - tilt), outside the swept aspects 0 to 180 deg"),
        (_averages({"tilt": {"mean_deg": 0, "std_deg": 2}},
                   aspect={"plane": "xz", "start_deg": 60, "stop_deg": 120, "count": 41}),
         "cases.sphere_ka5.averages.tilt: tilt N(0, 2) deg: the aspect sweep's step of 1.5 deg "
         "gives 1.33 angles per standard deviation, fewer than 3"),
    ]


def _schema_bounds(node, schema, path):
    """(dotted key path, 'must be > 0'-style rule) of every numeric bound below `node`; the
    entries of a mapping (a case name) are '*', list items share their list's path. A nested
    body (`inside`, recursive) has the case's own geometry and boundary blocks (the same
    schema, by $ref), whose bounds are tested on the case: not walked again."""
    if path.endswith(".inside"):
        return
    if "$ref" in node:
        ref, node = node["$ref"], schema
        for part in ref.removeprefix("#/").split("/"):  # a JSON pointer into the schema
            node = node[part]
    from wavescat.configuration.schema import _WHAT

    for rule in ("exclusiveMinimum", "minimum", "exclusiveMaximum", "maximum"):
        if rule in node:
            yield path, _WHAT[rule](node[rule])
    for key, sub in node.get("properties", {}).items():
        yield from _schema_bounds(sub, schema, f"{path}.{key}" if path else key)
    if isinstance(node.get("additionalProperties"), dict):
        yield from _schema_bounds(node["additionalProperties"], schema, f"{path}.*")
    if isinstance(node.get("items"), dict):
        yield from _schema_bounds(node["items"], schema, path)
    for branch in node.get("oneOf", []) + node.get("anyOf", []):
        yield from _schema_bounds(branch, schema, path)


def _bound_of(message):
    """'cases.sphere_ka5.geometry.size[2] = 0: must be > 0' -> ('cases.*.geometry.size', 'must be > 0')."""
    path, rest = message.split(" = ", 1)
    path = re.sub(r"\[\d+\]", "", path)
    path = re.sub(r"^cases\.[^.]+", "cases.*", path)
    return path, rest.split(": ", 1)[1]


def test_every_schema_bound_is_tested():
    """Each numeric bound of the schema has a bad value in BOUND (or BAD), so that dropping
    one (say `density > 0`) fails a test."""
    schema = load_schema()
    tested = {_bound_of(m) for _, m in BOUND + BAD if " = " in m and ": must be " in m}
    bounds = set(_schema_bounds(schema, schema, ""))
    assert bounds - tested == set()


def pytest_generate_tests(metafunc):
    """BAD, BOUND and EXPLICIT (defined below BAD's test) each give test_bad_config_... cases."""
    if metafunc.function is test_bad_config_names_key_and_value:
        cases = BAD + BOUND + EXPLICIT
        metafunc.parametrize("mutate, message", cases, ids=[m for _, m in cases])
# --- one source of defaults ---------------------------------------------------------------

def _schema_defaults(node, defs, prefix=""):
    """(dotted key, default) of every key the schema fills, blocks split into their keys."""
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    for name, sub in node.get("properties", {}).items():
        key = prefix + name
        default = sub.get("default")
        if isinstance(default, dict) and "properties" in sub:
            yield from ((f"{key}.{k}", v) for k, v in default.items())
        elif "default" in sub:
            yield key, default
        yield from _schema_defaults(sub, defs, key + ".")


def _readme_defaults():
    """`key` -> default of the tables in config/README.md (rows that give one)."""
    import math
    import re

    def value(text):
        if text == "pi/3":
            return math.pi / 3
        try:
            return float(text)
        except ValueError:
            pass
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError:  # prose in a table that lists no default (boundary conditions)
            return text

    rows = re.findall(r"^\| `([^`]+)` \| ([^|]*) \|", (ROOT / "config" / "README.md").read_text(),
                      re.M)
    return {key: value(text.strip()) for key, text in rows
            if text.strip() and not text.strip().startswith("(")}


def test_config_readme_states_the_schema_defaults():
    from wavescat.defaults import load_schema

    schema = load_schema()
    defs = schema["$defs"]
    documented = _readme_defaults()
    filled = {**dict(_schema_defaults(schema, defs)),
              **dict(_schema_defaults(defs["case"], defs)),
              **dict(_schema_defaults(defs["study"], defs, "studies.<name>."))}
    for key, default in filled.items():
        if "." not in key:
            continue  # a top-level block: its keys are listed
        assert key in documented, f"config/README.md does not list the default of {key}"
        assert documented[key] == default, (key, documented[key], default)


def test_submarine_defaults_stated_as_the_builder_has_them():
    import re

    from wavescat.defaults import load_schema
    from wavescat.geometry.submarine import DEFAULTS

    documented = _readme_defaults()
    props = load_schema()["$defs"]["geometry"]["properties"]
    for key, value in DEFAULTS.items():
        assert documented[f"geometry.{key}"] == value, key
        said = re.search(r"default (\S+)$", props[key]["description"])
        assert said is None or yaml.safe_load(said.group(1)) == value, key


def test_library_keyword_defaults_are_the_normalised_case(default):
    """What a direct library call uses when a key is left out is what the workflow fills in."""
    import inspect

    from wavescat.bem.assembly.hmatrix import assemble_from_clouds
    from wavescat.bem.assembly.hmatrix.galerkin import assemble_hmatrix
    from wavescat.bem.assembly.hmatrix.block_tree import build_block_tree
    from wavescat.bem.assembly.hmatrix.cluster_tree import build_cluster_tree
    from wavescat.bem.formulations.osrc import OsrcNtD, pade_sqrt
    from wavescat.bem.discretisation.quadrature import QuadratureOrders
    from wavescat.configuration.case import Case, SolverSettings
    from wavescat.problem.farfield import incident_directions, receiver_directions
    from wavescat.geometry.sizing import MeshOptions, mesh_options
    from wavescat.bem.linalg.gmres import gmres

    cfg = copy.deepcopy(default)
    cfg["cases"]["bare"] = {"geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [100],
                            "receivers": {"plane": "xy"}}
    cfg["cases"]["sweep"] = {**cfg["cases"]["bare"], "incident": {"aspect": {"plane": "xy",
                                                                             "count": 5}}}
    prepared = prepare_config(cfg, base_dir=ROOT)
    case = prepared["cases"]["bare"]
    solver = case["solver"]

    def kw(fn, name):
        return inspect.signature(fn).parameters[name].default

    assert QuadratureOrders() == QuadratureOrders(**solver["quadrature"])
    for fn in (assemble_hmatrix, assemble_from_clouds):
        assert {k: kw(fn, k) for k in ("eps", "eta", "leaf_size", "storage")} == \
            {k: solver["hmatrix"][k] for k in ("eps", "eta", "leaf_size", "storage")}
    assert kw(build_block_tree, "eta") == solver["hmatrix"]["eta"]
    assert kw(build_cluster_tree, "leaf_size") == solver["hmatrix"]["leaf_size"]
    assert {k: kw(gmres, k) for k in solver["gmres"]} == solver["gmres"]
    assert (kw(OsrcNtD, "pade_terms"), kw(OsrcNtD, "branch_angle")) == \
        (kw(pade_sqrt, "n_terms"), kw(pade_sqrt, "branch_angle")) == \
        (solver["osrc"]["pade_terms"], solver["osrc"]["branch_angle"])
    assert SolverSettings.from_dict({}).as_dict() == solver
    assert kw(MeshOptions, "curvature_refinement") == case["mesh"]["curvature_refinement"]
    assert mesh_options(Case.from_dict({"frequencies_hz": [100]}, cfg["medium"])) == \
        mesh_options(Case.from_config(prepared, "bare"))
    assert len(receiver_directions({"plane": "xy"}).vectors) == case["receivers"]["count"]
    assert np.array_equal(incident_directions({"aspect": {"plane": "xy", "count": 5}}).aspect_deg,
                          incident_directions(prepared["cases"]["sweep"]["incident"]).aspect_deg)
    check = prepare_config(default, base_dir=ROOT)["cases"]["sphere_band"]["dg_cross_check"]
    # dg-scatter takes a case's dg_cross_check sizes, the schema's defaults where it has none
    import argparse

    from wavescat.commands.dg import _case_run
    case = {k: v for k, v in prepare_config(default, base_dir=ROOT)["cases"]["sphere_band"].items()
            if k != "dg_cross_check"}
    args = argparse.Namespace(case=json.dumps(case), medium=None, order=None, points_per_wavelength=None,
                              quick=False)
    _case_run(args)
    assert (args.order, args.points_per_wavelength) == (check["order"], check["points_per_wavelength"])


# --- averages (issue 26) ---
def test_averages_normalise_to_lists_with_tilt_defaults(default):
    from wavescat.results.averages import TILT_DEFAULTS

    cfg = copy.deepcopy(default)
    _averages({"band": {"center_hz": 1000, "width_hz": 200},
               "tilt": {"mean_deg": 5, "std_deg": 10, "sign": 1}})(cfg)
    out = prepare_config(cfg, base_dir=ROOT)["cases"]["sphere_ka5"]["averages"]
    assert out["band"] == [{"center_hz": 1000, "width_hz": 200}]
    assert out["tilt"] == [{**TILT_DEFAULTS, "mean_deg": 5, "std_deg": 10, "sign": 1}]
    # the workflow's own schema check (Snakemake's validate, defaults on) takes the lists
    from snakemake.utils import validate

    from wavescat.defaults import SCHEMA_PATH

    validate(prepare_config(cfg, base_dir=ROOT), str(SCHEMA_PATH))


def test_config_readme_states_the_tilt_defaults():
    from wavescat.results.averages import TILT_DEFAULTS

    documented = _readme_defaults()
    for key, value in TILT_DEFAULTS.items():
        assert documented[f"averages.tilt.{key}"] == value, key


def test_boundary_kinds_are_the_schemas():
    """The schema lists the boundary kinds a user may name; each is one formulation class."""
    from wavescat.bem.formulations import FORMULATIONS
    from wavescat.defaults import load_schema

    case = load_schema()["$defs"]["case"]["properties"]
    assert list(FORMULATIONS) == case["boundary"]["properties"]["kind"]["enum"]


def test_typed_cases_are_what_the_rules_read(default):
    """The rules read typed objects only (workflow/rules/common.smk): a Case hands a
    subcommand the text `case_json` gives for its block (params are a rerun trigger), a
    band's case carries the band's frequencies into it, and the `cluster` and `verification`
    blocks are typed too."""
    from wavescat.configuration.config import (ClusterSettings, VerificationSettings,
                                               case_json, typed_cases)

    cfg = copy.deepcopy(default)
    _averages({"band": {"center_hz": 1000, "width_hz": 200}})(cfg)
    cfg["cluster"] = {"gpus": True, "partitions": {"cpu": "batch", "gpu": "gpuq"}}
    prepared = prepare_config(cfg, base_dir=ROOT)
    cases = typed_cases(prepared)
    assert list(cases) == list(prepared["cases"])
    for name, case in cases.items():
        assert case.as_json() == case_json(prepared, name)
        assert case.as_json(("mesh", "solver")) == case_json(prepared, name, ("mesh", "solver"))
        assert case.as_dict() == prepared["cases"][name]
        assert case.has_averages == bool(prepared["cases"][name].get("averages"))
    case = cases["sphere_ka5"]
    assert case.has_averages
    band = case.with_frequencies(case.frequencies_hz[:1])
    assert json.loads(band.as_json())["frequencies_hz"] == [case.frequencies_hz[0]]
    assert band.as_dict() == {**prepared["cases"]["sphere_ka5"],
                              "frequencies_hz": [case.frequencies_hz[0]]}
    assert ClusterSettings.from_config(prepared) == ClusterSettings(
        True, None, {"cpu": "batch", "gpu": "gpuq"})
    assert ClusterSettings.from_config(prepare_config(default, base_dir=ROOT)) == ClusterSettings()
    assert VerificationSettings.from_config(prepared) == VerificationSettings(
        **prepared["verification"])
