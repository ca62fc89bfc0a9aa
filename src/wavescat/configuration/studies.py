"""Parameter studies: base cases expanded over products of parameter values.

```yaml
studies:
  hull:
    cases: [submarine]                       # one or more base cases
    vary:                                    # product over all lists (dotted case keys)
      geometry.hull_length: [50, 62, 74]
      mesh.elements_per_wavelength: [6, 8]
    set:                                     # applied to every generated case
      frequencies_hz: {start: 50, stop: 200, count: 4}
      incident: {aspect: {plane: xy, count: 73}}
```
gives 6 cases named `hull_submarine_hull_length-50_elements_per_wavelength-6`, ... The names
depend only on the study, the base and the values, so results stay put when a study grows.
A part of a dotted key that is a number indexes a list (`inside.0.boundary.sound_speed`:
the first nested body's). Every combination of `vary` values becomes its own case (its own
mesh and jobs). Keys under
`set` stay inside each generated case: put frequency sweeps and incidence directions there
to solve them against one mesh and, per frequency, one set of assembled operators.
"""
from __future__ import annotations

import copy
import itertools
import re

from ..errors import ConfigError

CASE_KEYS = {"description", "geometry", "boundary", "inside", "frequencies_hz", "incident",
             "receivers", "mesh", "solver", "dg_cross_check", "hermite_cross_check",
             "averages", "near_field"}


def _label(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        # every digit counts (1.0000001 and 1.0000002 are two cases); 50.0 reads as 50
        text = str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
        return text.replace("+", "")
    if isinstance(value, str):
        return re.sub(r"[^A-Za-z0-9.-]+", "", value) or "x"
    if isinstance(value, (list, tuple)):
        return "x".join(_label(v) for v in value)
    raise ConfigError(f"study value {value!r}: use numbers, strings or lists of them")


def _assign(case: dict, dotted: str, value, where: str) -> None:
    keys = dotted.split(".")
    if keys[0] not in CASE_KEYS:
        raise ConfigError(f"{where}: {dotted!r} is not a case key (first part must be one of "
                          f"{', '.join(sorted(CASE_KEYS))})")
    node = case
    for key in keys[:-1]:
        if isinstance(node, list):  # a list entry by its index: inside.0.boundary.sound_speed
            node = _entry(node, key, dotted, where)
        else:
            node = node.setdefault(key, {})
        if not isinstance(node, (dict, list)):
            raise ConfigError(f"{where}: {dotted!r} goes through a value that is not a mapping")
    if isinstance(node, list):
        node[_index(node, keys[-1], dotted, where)] = copy.deepcopy(value)
    else:
        node[keys[-1]] = copy.deepcopy(value)


def _index(items: list, key: str, dotted: str, where: str) -> int:
    if not key.isdigit() or int(key) >= len(items):
        raise ConfigError(f"{where}: {dotted!r}: {key!r} is not an index of a list of "
                          f"{len(items)} (e.g. inside.0.boundary.sound_speed)")
    return int(key)


def _entry(items: list, key: str, dotted: str, where: str):
    return items[_index(items, key, dotted, where)]


def expand_study(name: str, study: dict, cases: dict) -> dict[str, dict]:
    """The generated cases of one study, {case name: case dict} in a reproducible order."""
    where = f"studies.{name}"
    vary = study.get("vary", {})
    keys = list(vary)
    out = {}
    for i, base in enumerate(study["cases"]):
        if base not in cases:
            raise ConfigError(f"{where}.cases[{i}] = {base!r}: no such case")
        for values in itertools.product(*(vary[k] for k in keys)):
            case = copy.deepcopy(cases[base])
            for dotted, value in study.get("set", {}).items():
                _assign(case, dotted, value, f"{where}.set")
            label = [name, base]
            for dotted, value in zip(keys, values):
                _assign(case, dotted, value, f"{where}.vary")
                label.append(f"{dotted.split('.')[-1]}-{_label(value)}")
            parameters = dict(zip(keys, values))
            case_name = "_".join(label)
            if case_name in out:
                raise ConfigError(
                    f"{where}.vary: values {out[case_name]['study']['parameters']} and "
                    f"{parameters} both give the case name {case_name!r} (names keep only "
                    "the letters, digits, '.' and '-' of a value): drop the repeated value or "
                    "make them differ there")
            case["study"] = {"name": name, "base": base, "parameters": parameters}
            out[case_name] = case
    return out


def expand_studies(config: dict) -> dict:
    """Add every study's generated cases to `config['cases']` (in place; returns config)."""
    for name, study in config.get("studies", {}).items():
        if name in config["cases"]:
            raise ConfigError(f"studies.{name}: a case has the same name; rename one of them")
        for case_name, case in expand_study(name, study, config["cases"]).items():
            if case_name in config["cases"]:
                raise ConfigError(f"studies.{name}: generated case {case_name!r} clashes with "
                                  "an existing case name")
            config["cases"][case_name] = case
    return config


def study_cases(config: dict, name: str) -> list[str]:
    return [c for c, v in config["cases"].items() if v.get("study", {}).get("name") == name]
