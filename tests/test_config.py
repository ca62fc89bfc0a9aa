"""Config validation: the default config passes; each kind of bad config names key and value."""
import copy
from pathlib import Path

import pytest
import yaml

from wavescat.config import frequencies, prepare_config
from wavescat.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default():
    with open(ROOT / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


def test_default_config_valid_and_defaults_filled(default):
    cfg = prepare_config(default, base_dir=ROOT)
    case = cfg["cases"]["sphere_ka5"]
    assert case["solver"]["gmres"]["tol"] == 1e-5
    assert case["solver"]["osrc"]["pade_terms"] == 8
    assert case["mesh"]["max_element_size"] is None
    assert case["geometry"]["center"] == [0.0, 0.0, 0.0]
    assert cfg["medium"]["sound_speed"] == 1500.0
    assert set(cfg["run"]) <= set(cfg["cases"])


def test_frequency_sweep_expands():
    assert frequencies({"start": 100, "stop": 200, "count": 3}) == [100.0, 150.0, 200.0]
    assert frequencies([50, 70]) == [50.0, 70.0]


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


@pytest.mark.parametrize("mutate, message", BAD, ids=[m for _, m in BAD])
def test_bad_config_names_key_and_value(default, mutate, message):
    cfg = copy.deepcopy(default)
    mutate(cfg)
    with pytest.raises(ConfigError) as info:
        prepare_config(cfg, base_dir=ROOT)
    assert message in str(info.value)


def test_user_list_replaces_default_list(default, tmp_path):
    """Snakemake merges --configfile dicts key by key and replaces lists: check our view of it."""
    from snakemake.utils import update_config

    cfg = copy.deepcopy(default)
    update_config(cfg, {"run": ["sphere_ka2"]})
    assert prepare_config(cfg, base_dir=ROOT)["run"] == ["sphere_ka2"]


def test_schema_lists_exactly_the_submarine_keys_the_builder_knows():
    from wavescat.config import GEOMETRY_KEYS, load_schema
    from wavescat.geometry.submarine import DEFAULTS

    props = set(load_schema()["$defs"]["geometry"]["properties"])
    assert set(DEFAULTS) == GEOMETRY_KEYS["submarine"]
    assert set(DEFAULTS) <= props


def test_submarine_key_of_other_kind_refused(default):
    cfg = copy.deepcopy(default)
    cfg["cases"]["submarine"]["geometry"]["hull_length"] = -3
    with pytest.raises(ConfigError, match=r"cases.submarine.geometry.hull_length = -3: must be > 0"):
        prepare_config(cfg, base_dir=ROOT)
    cfg = copy.deepcopy(default)
    cfg["cases"]["sphere_ka5"]["geometry"]["hull_length"] = 30
    with pytest.raises(ConfigError, match="not a key of geometry kind 'sphere'"):
        prepare_config(cfg, base_dir=ROOT)
