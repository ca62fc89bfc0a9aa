"""Validation and normalisation of a wavescat configuration.

`prepare_config(config)` checks a config dict against the package's config.schema.yaml (defaults.SCHEMA_PATH),
fills in the defaults, then applies the checks a schema cannot express (keys that belong
to another geometry kind, a missing mesh file, a `run:` entry with no case, ...). Every
error names the key path and the value, e.g. ``cases.sub.frequencies_hz[0] = -50: must be > 0``.
The result is what the Snakemake rules hand to `wavescat` subcommands, one case at a time.
"""
from __future__ import annotations

import copy
import json
import math
import re
from pathlib import Path

import numpy as np

from .averages import TILT_DEFAULTS, AveragesError, band_weights, parse_averages, tilt_weights
from .bem.formulations import formulation_for
from .defaults import RECEIVERS, SCHEMA_PATH, load_schema
from .errors import ConfigError, MeshError
from .farfield import incident_directions
from .geometry.bodies import body_tree, check_boxes
from .geometry.geo_script import check_geo_script
from .geometry.submarine import DEFAULTS as SUBMARINE_DEFAULTS
from .studies import expand_studies, study_cases

# Keys each geometry kind accepts besides `kind` and `center`; the ones in REQUIRED must be given.
GEOMETRY_KEYS = {
    "sphere": {"radius"},
    "spheroid": {"semi_axes"},
    "box": {"size"},
    "cylinder": {"radius", "length", "axis"},
    "file": {"path", "scale"},
    "krm": {"path", "part", "shape", "scale"},
    "submarine": set(SUBMARINE_DEFAULTS),
}
REQUIRED_GEOMETRY_KEYS = {"sphere": {"radius"}, "spheroid": {"semi_axes"}, "box": {"size"},
                          "cylinder": {"radius", "length"}, "file": {"path"},
                          "krm": {"path"}, "submarine": set()}
MESH_SUFFIXES = {".step", ".stp", ".stl", ".msh", ".geo"}


def key_path(parts) -> str:
    """('cases', 'sub', 'frequencies_hz', 0) -> 'cases.sub.frequencies_hz[0]'."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<config>"


def _show(value) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


_WHAT = {
    "exclusiveMinimum": lambda a: f"must be > {a}",
    "minimum": lambda a: f"must be >= {a}",
    "exclusiveMaximum": lambda a: f"must be < {a}",
    "maximum": lambda a: f"must be <= {a}",
    "enum": lambda a: "must be one of " + ", ".join(map(str, a)),
    "type": lambda a: "must be of type " + (a if isinstance(a, str) else " or ".join(a)),
    "minItems": lambda a: f"must have at least {a} item(s)",
    "maxItems": lambda a: f"must have at most {a} item(s)",
    "minProperties": lambda a: f"must have at least {a} entr{'y' if a == 1 else 'ies'}",
    "pattern": lambda a: f"must match {a}",
    "oneOf": lambda a: "must be a list of positive numbers or {start, stop, count}",
}


def _describe(error) -> str:
    """A one-line message for a jsonschema error: '<path> = <value>: <what is wrong>'."""
    path = key_path(error.absolute_path)
    v, kind, arg = error.instance, error.validator, error.validator_value
    if kind == "additionalProperties":
        extra = sorted(set(v) - set(error.schema.get("properties", {})))
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        where = path if error.absolute_path else "top level"
        return f"{where}: unknown key {', '.join(map(repr, extra))} (allowed: {allowed})"
    if kind == "required":
        missing = [k for k in arg if k not in v]
        return f"{path}: missing required key {', '.join(map(repr, missing))}"
    what = _WHAT[kind](arg) if kind in _WHAT else error.message
    if kind == "enum" and len(error.absolute_path) > 1 and error.absolute_path[-1] == "kind":
        what = f"unknown {error.absolute_path[-2]} kind; " + what  # geometry or boundary
    return f"{path} = {_show(v)}: {what}"


def _best_error(errors):
    """For a oneOf failure, report the branch error that went deepest (the most specific)."""
    def depth(e):
        return len(e.absolute_path)
    err = max(errors, key=depth)
    if err.validator == "oneOf" and err.context:
        # a number that fails inside the list branch: say which element and why
        list_branch = [c for c in err.context if c.validator in ("exclusiveMinimum", "type")
                       and len(c.absolute_path) > len(err.absolute_path)]
        if list_branch and isinstance(err.instance, list):
            return list_branch[0]
    return err


def _validator(schema: dict):
    from jsonschema import Draft202012Validator, validators

    base = Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, sch):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from validate_properties(validator, properties, instance, sch)

    return validators.extend(base, {"properties": set_defaults})(schema)


def frequencies(spec) -> list[float]:
    """A list of frequencies from a list or a {start, stop, count} sweep (linear spacing)."""
    if isinstance(spec, dict):
        return [float(f) for f in np.linspace(spec["start"], spec["stop"], spec["count"])]
    return [float(f) for f in spec]


def _unit(vec, where: str) -> list[float]:
    n = math.sqrt(sum(float(x) ** 2 for x in vec))
    if not n > 0 or not math.isfinite(n):
        raise ConfigError(f"{where} = {_show(vec)}: must be a non-zero finite vector")
    return [float(x) / n for x in vec]


def _check_krm(where: str, geo: dict, base_dir: Path) -> None:
    """A KRM shape file at `where` (a geometry block): there, readable, the part's stations
    in order, the swim bladder inside the body (the checks the mesher runs, before any job
    starts)."""
    from .geometry.krm import read_shape
    path = Path(geo["path"])
    full = path if path.is_absolute() else base_dir / path
    if not full.is_file():
        raise ConfigError(f"{where}.path = {geo['path']!r}: file not found "
                          f"(relative paths are taken from {base_dir})")
    try:
        read_shape({**geo, "path": str(full)})
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _check_geometry(geo: dict, where: str, base_dir: Path) -> None:
    """The geometry block at `where` (e.g. cases.fish.inside[0].geometry): keys of its kind,
    the file it names; fills `center` and normalises a cylinder's axis."""
    kind = geo["kind"]
    given = set(geo) - {"kind", "center"}
    foreign = given - GEOMETRY_KEYS[kind]
    if foreign:
        key = sorted(foreign)[0]
        raise ConfigError(f"{where}.{key} = {_show(geo[key])}: not a key of geometry kind "
                          f"{kind!r} (allowed: {', '.join(sorted(GEOMETRY_KEYS[kind] | {'center'}))})")
    missing = REQUIRED_GEOMETRY_KEYS[kind] - given
    if missing:
        raise ConfigError(f"{where}: kind {kind!r} needs key {sorted(missing)[0]!r}")
    geo.setdefault("center", [0.0, 0.0, 0.0])
    if kind == "cylinder":
        geo["axis"] = _unit(geo.get("axis", [0.0, 0.0, 1.0]), f"{where}.axis")
    if kind == "file":
        path = Path(geo["path"])
        full = path if path.is_absolute() else base_dir / path
        if path.suffix.lower() not in MESH_SUFFIXES:
            raise ConfigError(f"{where}.path = {geo['path']!r}: unsupported file type "
                              f"(use one of {', '.join(sorted(MESH_SUFFIXES))})")
        if not full.is_file():
            raise ConfigError(f"{where}.path = {geo['path']!r}: file not found "
                              f"(relative paths are taken from {base_dir})")
        if path.suffix.lower() == ".geo":
            try:
                check_geo_script(full)
            except MeshError as exc:
                raise ConfigError(f"{where}.path = {geo['path']!r}: {exc}") from None
    if kind == "krm":
        _check_krm(where, geo, base_dir)


def _check_bodies(where: str, case: dict, base_dir: Path, medium: dict) -> None:
    """The bodies nested in the case (`inside`): where they may be, their kinds and keys."""
    bodies = body_tree(case, medium, where)
    for body in bodies[1:]:
        _check_geometry(body.geometry, f"{body.where}.geometry", base_dir)
        formulation_for(body.boundary, f"{body.where}.boundary", medium)  # kinds, their keys
    check_boxes(bodies)


def _check_case(name: str, case: dict, base_dir: Path, medium: dict | None = None) -> None:
    where = f"cases.{name}"
    geo = case["geometry"]
    kind = geo["kind"]
    _check_geometry(geo, f"{where}.geometry", base_dir)
    if "inside" in case:
        _check_bodies(where, case, base_dir, medium or {})
    spec = case["frequencies_hz"]
    if isinstance(spec, dict) and spec["stop"] < spec["start"]:
        raise ConfigError(f"{where}.frequencies_hz.stop = {spec['stop']}: must be >= start "
                          f"({spec['start']})")
    case["frequencies_hz"] = frequencies(spec)
    inc = case["incident"]
    modes = [k for k in ("direction", "directions", "aspect") if k in inc]
    if len(modes) != 1:
        raise ConfigError(f"{where}.incident = {_show(inc)}: give exactly one of direction, "
                          "directions, aspect")
    if "direction" in inc:
        inc["direction"] = _unit(inc["direction"], f"{where}.incident.direction")
    if "directions" in inc:
        inc["directions"] = [_unit(d, f"{where}.incident.directions[{i}]")
                             for i, d in enumerate(inc["directions"])]
    check = case.get("dg_cross_check")
    if check and check.get("enabled", True):
        _check_dg_cross_check(where, case, medium)
    rec = case["receivers"]
    if ("directions_deg" in rec) == ("plane" in rec):
        raise ConfigError(f"{where}.receivers = {_show(rec)}: give either plane (with count) or "
                          "directions_deg")
    if "plane" in rec:
        rec.setdefault("count", RECEIVERS["count"])
    elif "count" in rec:
        raise ConfigError(f"{where}.receivers.count = {rec['count']}: only used with plane")
    formulation_for(case.get("boundary"), f"{where}.boundary")  # kinds implemented, their keys
    if "averages" in case:
        _check_averages(where, case)
    if "near_field" in case:
        count = len(incident_directions(inc).directions)
        if case["near_field"]["incidence"] >= count:
            raise ConfigError(f"{where}.near_field.incidence = {case['near_field']['incidence']}:"
                              f" the case has {count} incidence direction(s), numbered from 0")


def _check_dg_cross_check(where: str, case: dict, medium: dict | None) -> None:
    """A time-domain cross-check models one sphere, spheroid or box of any boundary kind (a
    real admittance, a lossless fluid); its probes lie outside the body (default: six points
    at 1.5 times the body's extent)."""
    from .defaults import MEDIUM
    from .timedomain.dg.scatterer import SHAPES, Body

    kind = case["geometry"]["kind"]
    if kind not in SHAPES:
        raise ConfigError(f"{where}.dg_cross_check: the time-domain cross-check meshes a sphere, "
                          f"spheroid or box, not geometry kind {kind!r}")
    if case.get("inside"):
        raise ConfigError(f"{where}.dg_cross_check: the time-domain cross-check models one body, "
                          "not bodies inside it")
    try:
        body = Body(case["geometry"], case.get("boundary"), {**MEDIUM, **(medium or {})})
    except ConfigError as exc:
        raise ConfigError(f"{where}.dg_cross_check: {exc}") from None
    check = case["dg_cross_check"]
    if "probes" not in check:
        axes = np.vstack([np.eye(3), -np.eye(3)])
        check["probes"] = (body.center + 1.5 * body.extent() * axes).tolist()
    for i, x in enumerate(check["probes"]):
        if body.contains(np.asarray(x, float))[0]:
            raise ConfigError(f"{where}.dg_cross_check.probes[{i}] = {_show(x)}: must lie "
                              f"outside the {kind}")


def _check_averages(where: str, case: dict) -> None:
    """`averages` (issue 26): `band` and `tilt` become lists; every band holds at least 3 of
    the case's frequencies and every tilt distribution fits the aspect sweep
    (wavescat.averages)."""
    spec = case["averages"]
    if "aspect" not in case["incident"]:
        raise ConfigError(f"{where}.averages: averages are taken over the monostatic TS of an "
                          f"aspect sweep; give {where}.incident.aspect "
                          "{plane, start_deg, stop_deg, count}")
    sweep = case["incident"]["aspect"]
    aspects = np.linspace(sweep["start_deg"], sweep["stop_deg"], sweep["count"])
    for key, check in (("band", lambda b: band_weights(case["frequencies_hz"], b)),
                       ("tilt", lambda t: tilt_weights(aspects, t))):
        if key not in spec:
            continue
        listed = isinstance(spec[key], list)
        spec[key] = spec[key] if listed else [spec[key]]
        for i, item in enumerate(spec[key]):
            if key == "tilt":
                for name, value in TILT_DEFAULTS.items():
                    item.setdefault(name, value)
            at = f"{where}.averages.{key}" + (f"[{i}]" if listed else "")
            try:
                bands, tilts = parse_averages({key: item})
                check((bands + tilts)[0])
            except AveragesError as exc:
                raise ConfigError(f"{at}: {exc}") from None


def _check_finite(node, parts=()) -> None:
    """Every number anywhere in the config is finite: YAML's .nan and .inf pass the schema's
    bounds (nan compares false with everything) and would fail far from the key."""
    if isinstance(node, dict):
        for key, value in node.items():
            _check_finite(value, parts + (key,))
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            _check_finite(value, parts + (i,))
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{key_path(parts)} = {node}: must be a finite number")


# A case or study name is one folder under results/: a single path component, not hidden.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _check_names(cfg: dict) -> None:
    for section in ("cases", "studies"):
        names = cfg.get(section)
        for name in names if isinstance(names, dict) else ():
            if not (isinstance(name, str) and SAFE_NAME.fullmatch(name)):
                raise ConfigError(
                    f"{section}: name {name!r} is not usable (it names the folder "
                    "results/<name>): use letters, digits, '_', '-' and '.', not starting with "
                    "'.' or '-'")


# YAML 1.1 (Snakemake's loader) reads 1e-4 or 2E3, a number without a dot, as a string
_YAML_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def _read_exponent_numbers(validator, cfg) -> None:
    """Turn strings like '1e-4' into numbers where the schema asks for a number, as a user
    who wrote them meant; every other string stays as written."""
    def wants_number(err):
        kinds = [err.validator_value] if isinstance(err.validator_value, str) else err.validator_value
        return (err.validator == "type" and isinstance(err.instance, str)
                and {"number", "integer"} & set(kinds) and _YAML_FLOAT.fullmatch(err.instance.strip()))

    def walk(errors):
        for err in errors:
            yield err
            yield from walk(err.context or [])

    # one pass: the errors of every oneOf branch come with their parent's (err.context)
    for err in [e for e in walk(validator.iter_errors(cfg)) if wants_number(e)]:
        *parents, last = err.absolute_path
        holder = cfg
        for key in parents:
            holder = holder[key]
        value = float(err.instance)
        holder[last] = int(value) if "integer" in str(err.validator_value) \
            and value.is_integer() else value


def _raise_first(validator, cfg) -> None:
    from jsonschema import exceptions

    errors = list(validator.iter_errors(cfg))
    if errors:
        best = exceptions.best_match(errors, key=exceptions.relevance)
        raise ConfigError(_describe(_best_error([best] + list(best.context or []))))


def run_cases(config: dict) -> list[str]:
    """Cases that `target_strength` builds: those named in `run` and those of named studies."""
    out = []
    for name in config["run"]:
        names = study_cases(config, name) if name in config["studies"] else [name]
        out += [n for n in names if n not in out]
    return out


def run_studies(config: dict) -> list[str]:
    return [n for n in config["run"] if n in config["studies"]]


def prepare_config(config: dict, base_dir: str | Path = ".", schema_path=SCHEMA_PATH) -> dict:
    """Validate `config`, fill defaults and normalise it; raise ConfigError naming the key."""
    cfg = copy.deepcopy(dict(config))
    _check_finite(cfg)
    _check_names(cfg)
    validator = _validator(load_schema(schema_path))
    _read_exponent_numbers(validator, cfg)
    _raise_first(validator, cfg)
    # Studies copy their (defaults-filled) base cases; check the generated ones again.
    expand_studies(cfg)
    _raise_first(validator, cfg)
    for i, name in enumerate(cfg["run"]):
        if name not in cfg["cases"] and name not in cfg["studies"]:
            raise ConfigError(f"run[{i}] = {name!r}: no such case or study (cases: "
                              f"{', '.join(sorted(cfg['cases']))})")
    for name, case in cfg["cases"].items():
        _check_case(name, case, Path(base_dir).resolve(), cfg["medium"])
    return cfg


# The keys of a case that the `solve` rule hands to `wavescat solve`.
SOLVE_KEYS = ("geometry", "boundary", "inside", "incident", "receivers", "solver", "mesh")


def solve_case(config: dict, name: str) -> dict:
    """Case `name` of a prepared config exactly as `wavescat solve` receives it from the rule."""
    return json.loads(case_json(config, name, SOLVE_KEYS))


def case_json(config: dict, name: str, keys=None) -> str:
    """The normalised case (only `keys` of it, if given) as compact JSON for a subcommand."""
    case = config["cases"][name]
    if keys is not None:
        case = {k: case[k] for k in keys if k in case}
    return json.dumps(case, sort_keys=True, separators=(",", ":"))


def medium_json(config: dict) -> str:
    return json.dumps(config["medium"], sort_keys=True, separators=(",", ":"))
