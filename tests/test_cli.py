"""`wavescat --help` tells a user what the command is for and where to go instead."""
import subprocess
import sys

import pytest

from wavescat.cli import main


def test_help_says_the_command_is_plumbing_and_points_to_snakemake(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "plumbing" in text
    assert "snakemake --cores all target_strength --configfile my.yaml" in text
    assert "wavescat check-config my.yaml" in text
    assert "wavescat.commands" not in text  # no developer notes in a user's help


def test_every_subcommand_is_found_by_its_module():
    """cli.py imports only the module SUBCOMMANDS names for the subcommand it runs: the table
    must list every subcommand the modules register, each with the module that does."""
    import argparse
    import importlib

    from wavescat import commands

    for module in set(commands.SUBCOMMANDS.values()):
        sub = argparse.ArgumentParser().add_subparsers()
        importlib.import_module(f"wavescat.commands.{module}").register(sub)
        assert {n: module for n in sub.choices} == {
            n: m for n, m in commands.SUBCOMMANDS.items() if m == module}


def test_a_solve_job_does_not_load_the_plotting_stack():
    """`wavescat solve` runs once per frequency of every case: the module SUBCOMMANDS names
    for it loads no matplotlib (`collect`, its own module, draws the plots)."""
    code = ("import sys; from wavescat.cli import build_parser; build_parser('solve'); "
            "print(sorted({'matplotlib', 'wavescat.results.plots'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
