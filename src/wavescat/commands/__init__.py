"""Subcommands of the `wavescat` CLI, one module per workflow stage.

Each module defines `register(subparsers)` that adds its subcommands with
`set_defaults(func=...)`; cli.py discovers the modules, so a stage adds itself
without touching shared code. Commands hold file handling only; numerics live
in the subpackages they call.
"""
