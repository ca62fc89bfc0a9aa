"""Subcommands of the `wavescat` CLI, one module per workflow stage.

Each module defines `register(subparsers)` that adds its subcommands with
`set_defaults(func=...)`, and SUBCOMMANDS names the module of every subcommand: cli.py
imports only the module of the subcommand it runs (a mesh job does not load the plotting
or time-domain stacks). Commands hold file handling only; numerics live in the
subpackages they call.
"""
import json

from ..config import prepare_config
from ..errors import ConfigError

# subcommand -> module of this package that registers it (tests/test_cli.py checks both ways)
SUBCOMMANDS = {
    "averages": "averages", "study-averages": "averages",
    "check-config": "check_config",
    "verify-dg": "dg", "dg-scatter": "dg", "dg-vs-bem": "dg",
    "verify-hermite": "hermite",
    "mesh": "mesh",
    "bem-probes": "probes",
    "reference": "reference", "compare-farfield": "reference",
    "solve": "solve", "collect": "solve",
    "study": "study",
}


def case_arguments(args) -> tuple[dict, dict]:
    """`--case` and `--medium` as JSON objects, normalised by `wavescat.config` as the workflow
    normalises them (defaults filled in, every check run), so a bare case typed by hand works
    like one from the rules, or fails naming the key."""
    given = {}
    for name in ("case", "medium"):
        text = getattr(args, name)
        try:
            given[name] = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--{name}: not valid JSON ({exc})") from None
        if not isinstance(given[name], dict):
            raise ConfigError(f"--{name} = {text[:80]!r}: must be a JSON object")
    config = {"medium": given["medium"], "run": ["case"], "cases": {"case": given["case"]}}
    try:
        config = prepare_config(config)
    except ConfigError as exc:
        message = str(exc)
        for prefix, arg in (("cases.case.", "--case "), ("cases.case", "--case"),
                            ("medium.", "--medium "), ("medium", "--medium")):
            if message.startswith(prefix):
                message = arg + message[len(prefix):]
                break
        raise ConfigError(message) from None
    return config["cases"]["case"], config["medium"]
