"""The `wavescat` command: the stages of the wavescat workflow (modules of
`wavescat.commands`, each adding its subcommands through `register(subparsers)`)."""
from __future__ import annotations

import argparse
import importlib
import logging
import sys

from . import __version__, commands
from .backend import follow_job_threads
from .errors import WavescatError
from .memory import out_of_memory_message
from .progress import job


DESCRIPTION = """\
The stages of the wavescat workflow. These subcommands are its plumbing: the Snakemake rules
call them with cases as normalised JSON. Run a study through Snakemake instead:

  snakemake --cores all target_strength --configfile my.yaml

(README.md, config/README.md). The subcommand meant for users is

  wavescat check-config my.yaml

which checks config files as the workflow does, naming file, line, key and value of an error.
"""


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of `command` alone (only its module is imported)."""
    parser = argparse.ArgumentParser(prog="wavescat", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"wavescat {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    names = ([commands.SUBCOMMANDS[command]] if command in commands.SUBCOMMANDS
             else sorted(set(commands.SUBCOMMANDS.values())))
    for name in names:
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    follow_job_threads()
    argv = sys.argv[1:] if argv is None else list(argv)
    # the options before a subcommand take no value: the first word is the subcommand
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        with job(f"wavescat {args.command}"):
            result = args.func(args)
    except WavescatError as exc:
        print(f"wavescat {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # an allocation that failed anywhere, host or GPU
        message = out_of_memory_message(exc, args.command)
        if message is None:
            raise
        print(f"wavescat {args.command}: error: {message}", file=sys.stderr)
        return 2
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
