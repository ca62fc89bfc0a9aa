"""The case as every stage takes it: frozen typed objects, read once from a case block.

`Case.from_dict(block, medium)` (and `Case.from_json`, what the `wavescat` subcommands call
with the JSON the rules hand them) checks the block against the config schema's `case`
(filling its defaults), runs the checks a schema cannot express, and returns a Case: its
bodies (geometry.shape.Geometry, bem.formulations.Boundary per surface), frequencies,
incidence and receivers (farfield), mesh and solver settings. This is the config layer:
its errors are ConfigErrors naming the key path and the value (`cases.<name>.<key>`); the
stages below it name parameters, never keys.

A block may hold only some of a case's keys (a rule hands each job the keys it depends on):
what it lacks is None or empty, or the schema's default where the schema has one.
`normalise` is the part of the checks that rewrites the dict itself (frequency sweeps into
lists, directions to unit length, ...), which config.prepare_config applies to the whole
config before the rules pass cases on.
"""
from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import numpy as np

from .. import defaults
from ..bem.discretisation.quadrature import QuadratureOrders
from ..bem.formulations import INNER_KINDS, boundary_from
from ..errors import ConfigError, InputError
from ..geometry.bodies import Body
from ..geometry.kinds import GEOMETRIES
from ..geometry.shape import Geometry
from ..problem.boundary import Boundary
from ..problem.farfield import Directions, Incidence, incident_directions, receiver_directions
from ..problem.medium import Medium
from ..results.averages import (TILT_DEFAULTS, AveragesError, Band, Tilt, band_weights,
                                parse_averages, tilt_weights)
from ..timedomain.dg.scatterer import SHAPES
from ..timedomain.dg.scatterer import Body as ScatteringBody
from ..timedomain.hermite.box_checks import CPU_SIZES as HERMITE_CPU_SIZES
from ..timedomain.hermite.box_checks import check_rigid_box, grid_cell, incidence_axis
from .schema import raise_first, show, validator

BODY_KEYS = {"description", "geometry", "boundary", "inside"}


# -- settings ------------------------------------------------------------------------------

@dataclass(frozen=True)
class GmresSettings:
    tol: float
    restart: int
    maxiter: int


@dataclass(frozen=True)
class OsrcSettings:
    pade_terms: int
    branch_angle: float
    radius: float | None


@dataclass(frozen=True)
class HmatrixSettings:
    eps: float
    eta: float
    kd_max: float | None
    leaf_size: int
    storage: str  # auto | single | double: the stored blocks' precision
    dense_below: int

    def options(self) -> dict:
        """The keywords of bem.assembly.hmatrix.assemble_hmatrix."""
        return {"eps": self.eps, "eta": self.eta, "kd_max": self.kd_max,
                "leaf_size": self.leaf_size, "storage": self.storage}


@dataclass(frozen=True)
class DirectionalOptions:
    order: int
    eta2: float
    aca_kd_max: float

    def options(self) -> dict:
        """The keywords of bem.assembly.directional.assemble_directional over the H-matrix's."""
        return {"kd_max": self.aca_kd_max, "order": self.order, "eta2": self.eta2}


@dataclass(frozen=True)
class SolverSettings:
    """A case's `solver` block, every default filled in."""

    operator_format: str
    backend: str
    precision: str
    ranks: int  # MPI ranks of one solve (solve/parallel.py)
    fluid_preconditioner: str
    gmres: GmresSettings
    osrc: OsrcSettings
    hmatrix: HmatrixSettings
    quadrature: QuadratureOrders
    directional: DirectionalOptions = None
    block: str = field(default="{}", repr=False)  # as JSON: what the records keep

    @classmethod
    def from_dict(cls, block: dict | None = None) -> SolverSettings:
        """A (partial) solver block over the schema's defaults, as the workflow fills it."""
        out = copy.deepcopy(defaults.SOLVER)
        for key, value in (block or {}).items():
            out[key] = {**out[key], **(value or {})} if isinstance(out.get(key), dict) else value
        try:
            return cls(out["operator_format"], out["backend"], out["precision"], out["ranks"],
                       out["fluid_preconditioner"], GmresSettings(**out["gmres"]),
                       OsrcSettings(**out["osrc"]), HmatrixSettings(**out["hmatrix"]),
                       QuadratureOrders(**out["quadrature"]),
                       DirectionalOptions(**out["directional"]), json.dumps(out, sort_keys=True))
        except (TypeError, InputError) as exc:
            raise ConfigError(f"solver: {exc}") from None

    def format_for(self, n_dofs: int, ranks: int | None = None, memory: float | None = None,
                   need=None) -> str:
        """The operator format (`format_choice`'s, without its reason)."""
        return self.format_choice(n_dofs, ranks, memory, need)[0]

    def format_choice(self, n_dofs: int, ranks: int | None = None, memory: float | None = None,
                      need=None, where: str = "memory") -> tuple[str, str]:
        """(operator format, why). `auto`: dense below `hmatrix.dense_below` DOFs; on
        several `ranks` (default `self.ranks`: those of the solve) H-matrices, whose blocks
        are what the ranks share; else H-matrices where they fit the `memory` (bytes) the
        solve will have, `need(format)` being the solve's estimated bytes in that format
        (wavescat.planning.resources), and where they do not but the directional format's
        do, `directional`; H-matrices when neither fits (the pre-flight then refuses the
        case) or when `memory` or `need` is not given (a caller that does not know the
        machine). `where` names the memory in the reason."""
        if self.operator_format != "auto":
            return self.operator_format, f"operator_format: {self.operator_format}"
        ranks = self.ranks if ranks is None else ranks
        if ranks > 1:
            return "hmatrix", f"auto: {ranks} ranks share the H-matrix's blocks"
        if n_dofs < self.hmatrix.dense_below:
            return "dense", (f"auto: {n_dofs} DOFs, under hmatrix.dense_below = "
                             f"{self.hmatrix.dense_below}")
        if memory is None or need is None:
            return "hmatrix", (f"auto: {n_dofs} DOFs, at least hmatrix.dense_below = "
                               f"{self.hmatrix.dense_below}")
        gb = 1e9
        hmatrix = need("hmatrix")
        if hmatrix <= memory:
            return "hmatrix", (f"auto: the hmatrix solve (about {hmatrix / gb:.3g} GB "
                               f"estimated) fits the {memory / gb:.3g} GB of {where}")
        directional = need("directional")
        verdict = "fits" if directional <= memory else "does not fit either"
        return ("directional" if directional <= memory else "hmatrix"), (
            f"auto: the hmatrix solve (about {hmatrix / gb:.3g} GB estimated) does not fit "
            f"the {memory / gb:.3g} GB of {where}; the directional one (about "
            f"{directional / gb:.3g} GB) {verdict}")

    def as_dict(self) -> dict:
        return json.loads(self.block)


@dataclass(frozen=True)
class MeshSettings:
    """A case's `mesh` block, every default filled in (config/README.md)."""

    elements_per_wavelength: float = defaults.MESH["elements_per_wavelength"]
    max_element_size: float | None = defaults.MESH["max_element_size"]
    curvature_refinement: int = defaults.MESH["curvature_refinement"]
    max_volume_error: float | None = defaults.MESH["max_volume_error"]
    match_volume: str | bool = defaults.MESH["match_volume"]
    resolve_interior: bool = defaults.MESH["resolve_interior"]
    band_ratio: float = defaults.MESH["band_ratio"]
    allow_coarse: bool = False

    def matches_volume(self, boundary: Boundary) -> bool:
        """`match_volume` for a body of this boundary: `auto` is on for fluid bodies only,
        whose answers follow the volume; the others keep the inscribed mesh."""
        if self.match_volume == "auto":
            return boundary.is_fluid
        return bool(self.match_volume)


@dataclass(frozen=True)
class DgCrossCheck:
    """`dg_cross_check`: the time-domain DG run compared with the BEM at probe points."""

    order: int
    points_per_wavelength: float
    probes: tuple[tuple[float, float, float], ...]


@dataclass(frozen=True)
class HermiteCrossCheck:
    """`hermite_cross_check`: the time-domain Hermite-Taylor run (a rigid box on a Cartesian
    grid) compared with the BEM at probe points."""

    degree: int
    cells_per_wavelength: float
    probes: tuple[tuple[float, float, float], ...]
    sponge_gap: float
    sponge_width: float
    cells_per_half_side: float


@dataclass(frozen=True)
class NearFieldSettings:
    """`near_field`: a map of the pressure on a plane through the body
    (wavescat.results.near_field)."""

    plane: str  # xy | xz | yz
    center: tuple[float, float, float] | None  # None: the body's bounding-box centre
    size: tuple[float, float] | None  # [width, height] in metres; None: from the body
    points: int  # along the longer side
    frequencies: str  # highest | all
    incidence: int  # which incidence direction, in config order


# -- the case ------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Case:
    """One case of a study (a part of one, where a job is handed only some keys)."""

    medium: Medium
    name: str = ""
    bodies: tuple[Body, ...] = ()  # surface order: the outer body, then those inside
    frequencies_hz: tuple[float, ...] = ()
    incidence: Incidence | None = None
    receivers: Directions | None = None
    mesh: MeshSettings = field(default_factory=MeshSettings)
    solver: SolverSettings = field(default_factory=SolverSettings.from_dict)
    description: str = ""
    dg_cross_check: DgCrossCheck | None = None
    hermite_cross_check: HermiteCrossCheck | None = None
    near_field: NearFieldSettings | None = None
    bands: tuple[Band, ...] = ()  # averages.band
    tilts: tuple[Tilt, ...] = ()  # averages.tilt
    study: dict | None = None  # set by study expansion: name, base, parameters
    where: str = "case"  # its config path in messages
    # the normalised block as compact JSON: what the rules hand a subcommand (`as_json`)
    block: str = field(default="{}", repr=False, compare=False)

    @classmethod
    def from_dict(cls, block: dict, medium: dict | Medium | None = None, name: str = "",
                  base_dir: str | Path = ".", required=()) -> Case:
        """The case of a (partial) case block: checked and normalised as the workflow
        checks it (ConfigError naming `cases.<name>.<key>`, or `case.<key>` without a
        name), relative paths of files taken from `base_dir`; `required`: the keys the
        caller needs."""
        where = f"cases.{name}" if name else "case"
        if not isinstance(medium, Medium):
            medium = copy.deepcopy(medium or {})
            check_block(medium, "medium", "medium")
            medium = medium_from(medium)
        block = copy.deepcopy(block)
        check_block(block, where)
        missing = [key for key in required if key not in block]
        if missing:
            raise ConfigError(f"{where}: missing required key {missing[0]!r}")
        normalise(block, where, Path(base_dir).resolve(), medium)
        return build(block, medium, name, where)

    @classmethod
    def from_json(cls, text: str, medium: str = "{}", name: str = "",
                  base_dir: str | Path = ".", required=()) -> Case:
        """`from_dict` of JSON texts (a case block, a medium block): what a rule hands a
        subcommand."""
        blocks = []
        for label, value in (("case", text), ("medium", medium)):
            try:
                blocks.append(json.loads(value))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"{label}: not valid JSON ({exc})") from None
            if not isinstance(blocks[-1], dict):
                raise ConfigError(f"{label} = {value[:80]!r}: must be a JSON object")
        return cls.from_dict(blocks[0], blocks[1], name, base_dir, required)

    @classmethod
    def from_config(cls, config: dict, name: str) -> Case:
        """Case `name` of a config that config.prepare_config has checked and normalised."""
        return build(config["cases"][name], medium_from(config["medium"]), name,
                     f"cases.{name}")

    @property
    def geometry(self) -> Geometry | None:
        return self.bodies[0].geometry if self.bodies else None

    @property
    def boundary(self) -> Boundary:
        return self.bodies[0].boundary if self.bodies else boundary_from()

    @property
    def nested(self) -> bool:
        """Whether bodies lie inside the case's body."""
        return len(self.bodies) > 1

    @property
    def has_averages(self) -> bool:
        """Whether the case asks for TS averages (`averages`: a band, a tilt, or both)."""
        return bool(self.bands or self.tilts)

    def with_frequencies(self, frequencies_hz) -> Case:
        """The case at these frequencies (a mesh band's, or one solve's)."""
        freqs = tuple(float(f) for f in frequencies_hz)
        block = compact_json({**self.as_dict(), "frequencies_hz": list(freqs)})
        return replace(self, frequencies_hz=freqs, block=block)

    def as_dict(self) -> dict:
        """The normalised case block (a copy)."""
        return json.loads(self.block)

    def as_json(self, keys=None) -> str:
        """The normalised case block (only `keys` of it, if given) as compact JSON with sorted
        keys: what a rule hands a subcommand, which `Case.from_json` reads back; the same
        text for the same settings, as params are a rerun trigger."""
        block = self.as_dict()
        if keys is not None:
            block = {k: block[k] for k in keys if k in block}
        return compact_json(block)


# -- reading a block -----------------------------------------------------------------------

def compact_json(block) -> str:
    """A block as the rules hand it on: compact JSON with sorted keys."""
    return json.dumps(block, sort_keys=True, separators=(",", ":"))


def medium_from(block: dict | None) -> Medium:
    try:
        return Medium.from_dict(block)
    except (InputError, TypeError) as exc:
        raise ConfigError(f"medium.{exc}" if isinstance(exc, InputError)
                          else f"medium: {exc}") from None


@lru_cache(maxsize=None)
def _validator(what: str):
    """The schema's `case` without its required keys (a rule hands a job some keys), or its
    `medium`."""
    schema = defaults.load_schema()
    node = schema["$defs"]["case"] if what == "case" else schema["properties"]["medium"]
    return validator({**{k: v for k, v in node.items() if k != "required"},
                      "$defs": schema["$defs"]})


def check_block(block: dict, where: str, what: str = "case") -> None:
    """The schema's checks of a case (any of its keys may be missing) or medium block, its
    defaults filled in."""
    if not isinstance(block, dict):
        raise ConfigError(f"{where} = {show(block)}: must be a mapping")
    raise_first(_validator(what), block, tuple(where.split(".")))


def frequencies(spec) -> list[float]:
    """A list of frequencies from a list or a {start, stop, count} sweep (linear spacing)."""
    if isinstance(spec, dict):
        return [float(f) for f in np.linspace(spec["start"], spec["stop"], spec["count"])]
    return [float(f) for f in spec]


def _unit(vec, where: str) -> list[float]:
    n = math.sqrt(sum(float(x) ** 2 for x in vec))
    if not n > 0 or not math.isfinite(n):
        raise ConfigError(f"{where} = {show(vec)}: must be a non-zero finite vector")
    return [float(x) / n for x in vec]


def _geometry_block(geo: dict, where: str, base_dir: Path) -> None:
    """The geometry block at `where`: the keys of its kind, its values and files; fills
    `center` and normalises a cylinder's axis."""
    kind = geo["kind"]
    cls = GEOMETRIES[kind]
    given = set(geo) - {"kind", "center"}
    foreign = given - cls.keys()
    if foreign:
        key = sorted(foreign)[0]
        raise ConfigError(f"{where}.{key} = {show(geo[key])}: not a key of geometry kind "
                          f"{kind!r} (allowed: {', '.join(sorted(cls.keys() | {'center'}))})")
    missing = cls.required() - given
    if missing:
        raise ConfigError(f"{where}: kind {kind!r} needs key {sorted(missing)[0]!r}")
    geo.setdefault("center", [0.0, 0.0, 0.0])
    if kind == "cylinder":
        geo["axis"] = _unit(geo.get("axis", [0.0, 0.0, 1.0]), f"{where}.axis")
    shape = _geometry(geo, where)
    try:
        shape.check_files(base_dir)
    except InputError as exc:  # the file's own problems are the block's, not a key's
        text = str(exc)
        raise ConfigError(f"{where}.{text}" if text.startswith("path = ")
                          else f"{where}: {text}") from None


def _geometry(block: dict, where: str) -> Geometry:
    """The Geometry of a geometry block whose keys are its kind's."""
    try:
        return GEOMETRIES[block["kind"]].from_block(block)
    except InputError as exc:
        raise ConfigError(f"{where}.{exc}") from None


def _body_blocks(case: dict, where: str) -> list[tuple[dict, int, int, str]]:
    """(block, parent, depth, where) of the case's body and of the bodies `inside` it, in
    surface order (depth first), the tree's shape checked; the case's own block may lack
    `geometry` (a job handed some keys only)."""
    out = []

    def visit(node, parent: int, depth: int, path: str) -> None:
        if not isinstance(node, dict):
            raise ConfigError(f"{path} = {node!r}: must be a body (geometry, boundary, inside)")
        if depth:
            foreign = sorted(set(node) - BODY_KEYS)
            if foreign:
                raise ConfigError(f"{path}.{foreign[0]}: not a key of a body inside another "
                                  f"(allowed: {', '.join(sorted(BODY_KEYS))})")
            for key in ("geometry", "boundary"):
                if not isinstance(node.get(key), dict):
                    raise ConfigError(f"{path}: a body inside another needs `{key}` (a mapping)")
        if depth and not isinstance(node.get("geometry"), dict):
            raise ConfigError(f"{path}.geometry: missing (a mapping with `kind`)")
        given = node.get("boundary")
        if given is not None and not isinstance(given, dict):
            raise ConfigError(f"{path}.boundary = {given!r}: must be a mapping")
        kind = {**defaults.BOUNDARY, **(given or {})}["kind"]
        if depth and kind not in INNER_KINDS:
            raise ConfigError(f"{path}.boundary.kind = {kind!r}: a body inside another must be "
                              f"one of {', '.join(INNER_KINDS)}")
        index = len(out)
        out.append((node, parent, depth, path))
        inside = node.get("inside")
        if inside is None:
            return
        if not isinstance(inside, list):
            raise ConfigError(f"{path}.inside = {inside!r}: must be a list of bodies")
        if inside and kind != "fluid":
            article = "an" if kind[:1] in "aeiou" else "a"
            raise ConfigError(f"{path}.inside: bodies inside {article} {kind.replace('_', '-')} "
                              "body are not possible (no field enters it); only a fluid body "
                              "(boundary.kind: fluid) can hold others")
        for i, child in enumerate(inside):
            visit(child, index, depth + 1, f"{path}.inside[{i}]")

    visit(case, -1, 0, where)
    return out


def _material(block: dict, medium: Medium, key: str) -> float:
    """A fluid body's density or sound speed: absolute, or its ratio times the medium's."""
    value = block.get(key)
    return float(value) if value is not None else float(block[f"{key}_ratio"]) * getattr(medium, key)


def bodies(case: dict, medium: Medium, where: str) -> tuple[Body, ...]:
    """The Body objects of a case block's body tree, in surface order (geometry None where
    the block has none)."""
    out = []
    for node, parent, depth, path in _body_blocks(case, where):
        block = {**defaults.BOUNDARY, **(node.get("boundary") or {})}
        try:
            boundary = boundary_from(block, medium)
        except InputError as exc:
            raise ConfigError(f"{path}.boundary.{exc}") from None
        geo = node.get("geometry")
        shape = None if geo is None else _geometry(geo, f"{path}.geometry")
        fluid = boundary.is_fluid
        out.append(Body(len(out), parent, depth, shape, boundary, path,
                        _material(block, medium, "sound_speed") if fluid else None,
                        _material(block, medium, "density") if fluid else None))
    return tuple(out)


def check_boxes(bodies: tuple[Body, ...]) -> None:
    """A body whose bounding box (known from its parameters) is not strictly inside its
    parent's cannot be inside it: refused before any job starts (the mesher checks the
    surfaces themselves)."""
    for body in bodies[1:]:
        inner = body.geometry.bounding_box()
        outer = bodies[body.parent].geometry.bounding_box()
        if inner is None or outer is None:
            continue
        if any(lo <= plo for lo, plo in zip(inner[0], outer[0])) or any(
                hi >= phi for hi, phi in zip(inner[1], outer[1])):
            raise ConfigError(f"{body.where}.geometry: its bounding box {inner[0]}..{inner[1]} "
                              f"m is not inside that of {bodies[body.parent].where} "
                              f"{outer[0]}..{outer[1]} m: a body inside another must lie "
                              "strictly within it (check radius, semi_axes, size, center)")


def normalise(case: dict, where: str, base_dir: Path, medium: Medium) -> None:
    """The checks of a (schema-checked) case block that a schema cannot express, and the
    rewriting of the block they imply (in place): keys of the geometry kind and the files
    they name, the body tree, frequency sweeps into lists, unit directions, receivers'
    count, the time-domain probes, averages."""
    for node, _, _, path in _body_blocks(case, where):
        if "geometry" in node:
            _geometry_block(node["geometry"], f"{path}.geometry", base_dir)
    tree = bodies(case, medium, where)  # kinds and keys of every boundary
    spec = case.get("frequencies_hz")
    if spec is not None:
        if isinstance(spec, dict) and spec["stop"] < spec["start"]:
            raise ConfigError(f"{where}.frequencies_hz.stop = {spec['stop']}: must be >= start "
                              f"({spec['start']})")
        case["frequencies_hz"] = frequencies(spec)
    inc = case.get("incident")
    if inc is not None:
        modes = [k for k in ("direction", "directions", "aspect") if k in inc]
        if len(modes) != 1:
            raise ConfigError(f"{where}.incident = {show(inc)}: give exactly one of direction, "
                              "directions, aspect")
        if "direction" in inc:
            inc["direction"] = _unit(inc["direction"], f"{where}.incident.direction")
        if "directions" in inc:
            inc["directions"] = [_unit(d, f"{where}.incident.directions[{i}]")
                                 for i, d in enumerate(inc["directions"])]
    _normalise_dg(case, where, tree, medium)
    _normalise_hermite(case, where, tree, medium)
    rec = case.get("receivers")
    if rec is not None:
        if ("directions_deg" in rec) == ("plane" in rec):
            raise ConfigError(f"{where}.receivers = {show(rec)}: give either plane (with count) "
                              "or directions_deg")
        if "plane" in rec:
            rec.setdefault("count", defaults.RECEIVERS["count"])
        elif "count" in rec:
            raise ConfigError(f"{where}.receivers.count = {rec['count']}: only used with plane")
    if "averages" in case:
        _normalise_averages(where, case)
    solver = case.get("solver") or {}
    ranks = solver.get("ranks", 1)
    if ranks > 1 and solver.get("operator_format") == "dense":
        raise ConfigError(f"{where}.solver.operator_format = 'dense' with {ranks} ranks: a "
                          "solve over several ranks shares H-matrix blocks (use hmatrix, "
                          "directional or auto)")
    if "near_field" in case and inc is not None:
        count = len(incident_directions(inc).directions)
        if case["near_field"]["incidence"] >= count:
            raise ConfigError(f"{where}.near_field.incidence = {case['near_field']['incidence']}:"
                              f" the case has {count} incidence direction(s), numbered from 0")


def _normalise_dg(case: dict, where: str, tree: tuple[Body, ...], medium: Medium) -> None:
    """A time-domain cross-check models one sphere, spheroid or box of any boundary kind (a
    real admittance, a lossless fluid); its probes lie outside the body (default: six points
    at 1.5 times the body's extent)."""
    check = case.get("dg_cross_check")
    if not (check and check.get("enabled", True)):
        return
    geo = case.get("geometry") or {}
    if geo.get("kind") not in SHAPES:
        raise ConfigError(f"{where}.dg_cross_check: the time-domain cross-check meshes a sphere, "
                          f"spheroid or box, not geometry kind {geo.get('kind')!r}")
    if len(tree) > 1:
        raise ConfigError(f"{where}.dg_cross_check: the time-domain cross-check models one body, "
                          "not bodies inside it")
    try:
        body = ScatteringBody(tree[0].geometry, tree[0].boundary, medium)
    except InputError as exc:
        raise ConfigError(f"{where}.dg_cross_check: {exc}") from None
    if "probes" not in check:
        axes = np.vstack([np.eye(3), -np.eye(3)])
        check["probes"] = (body.center + 1.5 * body.extent() * axes).tolist()
    for i, x in enumerate(check["probes"]):
        if body.contains(np.asarray(x, float))[0]:
            raise ConfigError(f"{where}.dg_cross_check.probes[{i}] = {show(x)}: must lie "
                              f"outside the {geo['kind']}")


def _normalise_hermite(case: dict, where: str, tree: tuple[Body, ...], medium: Medium) -> None:
    """The Hermite-Taylor cross-check models one rigid box, the incident wave along one of its
    axes, on a grid whose cell divides its half-sides (at the configured size and at the CPU
    size); its probes (default: dg_cross_check.probes) lie outside the box."""
    check = case.get("hermite_cross_check")
    if not (check and check.get("enabled", True)):
        return
    at = f"{where}.hermite_cross_check"
    geo = case.get("geometry") or {}
    try:
        check_rigid_box(geo.get("kind"), tree[0].boundary.kind)
        if len(tree) > 1:
            raise InputError("the Hermite cross-check models one body, not bodies inside it")
        inc = case.get("incident")
        if inc is not None:
            directions = incident_directions(inc).directions
            if len(directions) != 1:
                raise InputError(f"the case has {len(directions)} incidence directions: the "
                                 "Hermite cross-check runs one, along one of the box's axes")
            incidence_axis(directions[0])
        body = ScatteringBody(tree[0].geometry, tree[0].boundary, medium)
        if "frequencies_hz" in case:
            shortest = medium.sound_speed / max(case["frequencies_hz"])
            asked = {key: check.get(key, defaults.HERMITE_CROSS_CHECK[key])
                     for key in ("cells_per_wavelength", "cells_per_half_side")}
            cpu = {key: min(v, HERMITE_CPU_SIZES[key]) for key, v in asked.items()}
            for size in (asked, cpu):  # the run's cell at either sizes must divide the box
                grid_cell(body.half_axes(), shortest, **size)
    except InputError as exc:
        raise ConfigError(f"{at}: {exc}") from None
    if "probes" not in check:
        dg = case.get("dg_cross_check") or {}
        if "probes" not in dg:
            raise ConfigError(f"{at}.probes: required (the case has no dg_cross_check.probes "
                              "to take)")
        check["probes"] = copy.deepcopy(dg["probes"])
    for i, x in enumerate(check["probes"]):
        if body.contains(np.asarray(x, float))[0]:
            raise ConfigError(f"{at}.probes[{i}] = {show(x)}: must lie outside the box")


def _normalise_averages(where: str, case: dict) -> None:
    """`averages` (issue 26): `band` and `tilt` become lists; every band holds at least 3 of
    the case's frequencies and every tilt distribution fits the aspect sweep
    (wavescat.results.averages)."""
    spec = case["averages"]
    incident = case.get("incident")
    if incident is not None and "aspect" not in incident:
        raise ConfigError(f"{where}.averages: averages are taken over the monostatic TS of an "
                          f"aspect sweep; give {where}.incident.aspect "
                          "{plane, start_deg, stop_deg, count}")
    checks = {}
    if "frequencies_hz" in case:
        checks["band"] = lambda b: band_weights(case["frequencies_hz"], b)
    if incident is not None:
        sweep = incident["aspect"]
        aspects = np.linspace(sweep["start_deg"], sweep["stop_deg"], sweep["count"])
        checks["tilt"] = lambda t: tilt_weights(aspects, t)
    for key in ("band", "tilt"):
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
                if key in checks:
                    checks[key]((bands + tilts)[0])
            except AveragesError as exc:
                raise ConfigError(f"{at}: {exc}") from None


def build(case: dict, medium: Medium, name: str = "", where: str | None = None) -> Case:
    """The Case of a checked and normalised case block."""
    where = where or (f"cases.{name}" if name else "case")
    out = {"bodies": bodies(case, medium, where)}
    if "frequencies_hz" in case:
        out["frequencies_hz"] = tuple(float(f) for f in case["frequencies_hz"])
    for key, read in (("incident", incident_directions), ("receivers", receiver_directions)):
        if key in case:
            try:
                out["incidence" if key == "incident" else key] = read(case[key])
            except InputError as exc:
                raise ConfigError(f"{where}.{key}.{exc}") from None
    if "mesh" in case:
        out["mesh"] = MeshSettings(**case["mesh"])
    if "solver" in case:
        out["solver"] = SolverSettings.from_dict(case["solver"])
    check = case.get("dg_cross_check")
    if check and check.get("enabled", True):
        out["dg_cross_check"] = DgCrossCheck(
            int(check.get("order", defaults.DG_CROSS_CHECK["order"])),
            float(check.get("points_per_wavelength",
                            defaults.DG_CROSS_CHECK["points_per_wavelength"])),
            tuple(tuple(float(c) for c in p) for p in check["probes"]))
    check = case.get("hermite_cross_check")
    if check and check.get("enabled", True):
        hermite = {**defaults.HERMITE_CROSS_CHECK, **check}
        out["hermite_cross_check"] = HermiteCrossCheck(
            int(hermite["degree"]), float(hermite["cells_per_wavelength"]),
            tuple(tuple(float(c) for c in p) for p in check["probes"]),
            float(hermite["sponge_gap"]), float(hermite["sponge_width"]),
            float(hermite["cells_per_half_side"]))
    near = case.get("near_field")
    if near:
        out["near_field"] = NearFieldSettings(
            near["plane"], None if near["center"] is None else tuple(map(float, near["center"])),
            None if near["size"] is None else tuple(map(float, near["size"])), near["points"],
            near["frequencies"], near["incidence"])
    if case.get("averages"):
        try:
            bands, tilts = parse_averages(case["averages"])
        except AveragesError as exc:
            raise ConfigError(f"{where}.averages: {exc}") from None
        out["bands"], out["tilts"] = tuple(bands), tuple(tilts)
    return Case(medium=medium, name=name, description=case.get("description", ""),
                study=case.get("study"), where=where, block=compact_json(case), **out)
