"""The config schema at work: a validator that fills the schema's defaults as it checks, and
one-line messages for its errors that name the key path and the value, e.g.
``cases.sub.frequencies_hz[0] = -50: must be > 0``.
"""
from __future__ import annotations

import copy
import json
import math
import re

from jsonschema import Draft202012Validator, exceptions, validators

from ..errors import ConfigError


def key_path(parts) -> str:
    """('cases', 'sub', 'frequencies_hz', 0) -> 'cases.sub.frequencies_hz[0]'."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "<config>"


def show(value) -> str:
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


def _describe(error, prefix=()) -> str:
    """A one-line message for a jsonschema error: '<path> = <value>: <what is wrong>'."""
    path = key_path(tuple(prefix) + tuple(error.absolute_path))
    v, kind, arg = error.instance, error.validator, error.validator_value
    if kind == "additionalProperties":
        extra = sorted(set(v) - set(error.schema.get("properties", {})))
        allowed = ", ".join(sorted(error.schema.get("properties", {})))
        where = path if error.absolute_path or prefix else "top level"
        return f"{where}: unknown key {', '.join(map(repr, extra))} (allowed: {allowed})"
    if kind == "required":
        missing = [k for k in arg if k not in v]
        return f"{path}: missing required key {', '.join(map(repr, missing))}"
    what = _WHAT[kind](arg) if kind in _WHAT else error.message
    if kind == "enum" and len(error.absolute_path) > 1 and error.absolute_path[-1] == "kind":
        what = f"unknown {error.absolute_path[-2]} kind; " + what  # geometry or boundary
    return f"{path} = {show(v)}: {what}"


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


def validator(schema: dict):
    base = Draft202012Validator
    validate_properties = base.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, sch):
        if isinstance(instance, dict):
            for name, sub in properties.items():
                if "default" in sub:
                    instance.setdefault(name, copy.deepcopy(sub["default"]))
        yield from validate_properties(validator, properties, instance, sch)

    return validators.extend(base, {"properties": set_defaults})(schema)


def check_finite(node, parts=()) -> None:
    """Every number anywhere in the config is finite: YAML's .nan and .inf pass the schema's
    bounds (nan compares false with everything) and would fail far from the key."""
    if isinstance(node, dict):
        for key, value in node.items():
            check_finite(value, parts + (key,))
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            check_finite(value, parts + (i,))
    elif isinstance(node, float) and not math.isfinite(node):
        raise ConfigError(f"{key_path(parts)} = {node}: must be a finite number")


# YAML 1.1 (Snakemake's loader) reads 1e-4 or 2E3, a number without a dot, as a string
_YAML_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def read_exponent_numbers(validator, cfg) -> None:
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


def raise_first(validator, cfg, prefix=()) -> None:
    """ConfigError of the most relevant schema error of `cfg`, its path under `prefix`; the
    other errors' messages in its `also` (a user fixes them all in one go)."""
    errors = list(validator.iter_errors(cfg))
    if errors:
        best = exceptions.best_match(errors, key=exceptions.relevance)
        first = _describe(_best_error([best] + list(best.context or [])), prefix)
        others = (_describe(_best_error([e] + list(e.context or [])), prefix) for e in errors)
        exc = ConfigError(first)
        exc.also = tuple(dict.fromkeys(m for m in others if m != first))
        raise exc
