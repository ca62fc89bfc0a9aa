"""The `wavescat` command. Each module in `wavescat.commands` adds its subcommands
through `register(subparsers)`; the Snakemake rules call these subcommands."""
from __future__ import annotations

import argparse
import importlib
import logging
import pkgutil
import sys

from . import __version__, commands
from .errors import WavescatError
from .progress import job
from .resources import follow_job_threads, out_of_memory_message


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wavescat", description=__doc__)
    parser.add_argument("--version", action="version", version=f"wavescat {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    follow_job_threads()
    parser = build_parser()
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
