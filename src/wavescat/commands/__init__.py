"""Subcommands of the `wavescat` CLI, one module per workflow stage.

Each module defines `register(subparsers)` that adds its subcommands with
`set_defaults(func=...)`, and SUBCOMMANDS names the module of every subcommand: cli.py
imports only the module of the subcommand it runs (a mesh job does not load the plotting
or time-domain stacks). Commands hold file handling only; numerics live in the
subpackages they call.
"""
import json
from pathlib import Path

from ..configuration.case import Case
from ..errors import ConfigError

# subcommand -> module of this package that registers it (tests/test_cli.py checks both ways)
SUBCOMMANDS = {
    "averages": "averages", "study-averages": "averages",
    "check-config": "check_config",
    "verify-dg": "dg", "dg-scatter": "dg", "dg-vs-bem": "dg",
    "verify-hermite": "hermite",
    "hermite-scatter": "hermite_box", "hermite-vs-bem": "hermite_box",
    "kernels": "kernels",
    "mesh": "mesh",
    "near-field": "near_field",
    "bem-probes": "probes",
    "reference": "reference", "compare-farfield": "reference",
    "solve": "solve", "collect": "collect",
    "stale": "stale",
    "study": "study",
}


def json_text(text: str, name: str) -> str:
    """An argument given as JSON inline or as the path of a .json file: the JSON text."""
    if not text.lstrip().startswith("{") and Path(text).is_file():
        try:
            return Path(text).read_text()
        except OSError as exc:
            raise ConfigError(f"--{name} = {text[:80]!r}: cannot be read ({exc})") from None
    return text


def case_arguments(args, required=()) -> Case:
    """`--case` and `--medium` (and `--name`, where the command has one) read into a Case
    as the workflow reads them (defaults filled in, every check run), so a bare case typed
    by hand works like one from the rules, or fails naming the key; `required`: the keys
    the command needs."""
    name = getattr(args, "name", None) or ""
    try:
        return Case.from_json(json_text(args.case, "case"),
                              json_text(getattr(args, "medium", "{}"), "medium"), name,
                              required=required)
    except ConfigError as exc:
        message = str(exc)
        if not name:  # the key under --case (a named case's is its config path)
            for prefix, arg in (("case.", "--case "), ("case:", "--case:"),
                                ("case = ", "--case = "), ("medium.", "--medium "),
                                ("medium:", "--medium:"), ("case", "--case")):
                if message.startswith(prefix):
                    message = arg + message[len(prefix):]
                    break
        raise ConfigError(message) from None


def json_object(text: str, name: str) -> dict:
    """An argument `--<name>` given as a JSON object inline or in a .json file, read."""
    try:
        value = json.loads(json_text(text, name))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--{name}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"--{name} = {text[:80]!r}: must be a JSON object")
    return value


def study_cases(text: str) -> dict[str, Case]:
    """`--cases`: JSON {case name: case block} (in the order given) read into Cases."""
    blocks = json_object(text, "cases")
    return {name: Case.from_dict(block, name=name) for name, block in blocks.items()}


def comparison_arguments(c, method: str, producer: str) -> None:
    """The arguments of `<method>-vs-bem` (dg-vs-bem, hermite-vs-bem): the time-domain table of
    `producer`, the BEM's, the outputs and the run's summary with its tolerance."""
    c.add_argument(f"--{method}", required=True, help=f"CSV [frequency_hz,]x,y,z,re_p_{method},"
                   f"im_p_{method} (from {producer})")
    c.add_argument("--bem", required=True, help="CSV [frequency_hz,]x,y,z,re_p_bem,im_p_bem at the same "
                   "frequencies and points")
    c.add_argument("--out", required=True, help=f"{method}_vs_bem.csv (rows frequency by frequency)")
    c.add_argument("--errors", default=None, help="JSON: the relative L2 difference at each frequency")
    c.add_argument("--plot", default=None, help="plot of both amplitudes per probe (one frequency) "
                   "or over the band, with their differences")
    c.add_argument("--summary", default=None,
                   help=f"{method}_summary.json of {producer}: fail if the relative L2 difference "
                   "exceeds its `tolerance`")
