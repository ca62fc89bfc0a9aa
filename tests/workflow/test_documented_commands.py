"""Every Snakemake command the documentation shows runs as written.

The commands are read from the fenced shell blocks and inline code of README.md,
config/README.md and docs/*.md, and from the comment lines of the shipped configs and profiles,
then dry-run (`-n` after the program name, nothing else changed) in a temporary copy of the
repository; documented `wavescat` commands (config checks) run as they are. `.venv/bin/snakemake`
and `snakemake` become the test's interpreter with `-m snakemake`, `.venv/bin/wavescat` and
`wavescat` likewise with `-m wavescat`; where a command names `my.yaml`, a small stand-in study
is written first.
Installation steps (venv, pip) and the test-suite command itself are listed as skipped items,
so what is not run stays visible.
"""
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "config/README.md", *sorted(p.relative_to(ROOT).as_posix()
                                                 for p in (ROOT / "docs").glob("*.md"))]
COMMENTED = sorted(p.relative_to(ROOT).as_posix() for pattern in
                   ("config/examples/*.yaml", "profiles/*/config.yaml")
                   for p in ROOT.glob(pattern))
PROGRAMS = {"snakemake": "snakemake", ".venv/bin/snakemake": "snakemake",
            "wavescat": "wavescat", ".venv/bin/wavescat": "wavescat"}

# The user's own study of the README, as small as a study can be.
MY_YAML = """\
run: [my_sphere]
cases:
  my_sphere:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: [200]
    receivers: {plane: xz, count: 13}
"""

FENCE = re.compile(r"^```(\w*)\s*$")
INLINE = re.compile(r"`([^`\n]+)`")
COMMENT_COMMAND = re.compile(r"^#\s+((?:\.venv/bin/)?(?:snakemake|wavescat)\s.*)$")


def documented_commands():
    """(where, command) for every shell command in the docs, `&&` chains split in parts."""
    found = []
    for name in DOCS:
        shell = False
        for lineno, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            fence = FENCE.match(line.strip())
            if fence:
                shell = not shell and fence.group(1) in ("bash", "sh", "shell", "console")
                continue
            if shell:
                text = line.split(" #")[0].strip()
                if text and not text.startswith("#"):
                    found += [(f"{name}:{lineno}", part.strip()) for part in text.split("&&")]
            else:
                found += [(f"{name}:{lineno}", span.strip()) for span in INLINE.findall(line)
                          if span.split()[0] in PROGRAMS and len(span.split()) > 1]
    for name in COMMENTED:
        for lineno, line in enumerate((ROOT / name).read_text().splitlines(), 1):
            match = COMMENT_COMMAND.match(line.strip())
            if match:
                found.append((f"{name}:{lineno}", match.group(1).strip()))
    return found


COMMANDS = documented_commands()


def unimplemented_boundaries(words: list[str]) -> list[str]:
    """Boundary kinds that the repository's config files named in a command use and this
    build does not implement yet (the contract names every kind before each one lands)."""
    from wavescat.bem.formulations import BOUNDARY_KINDS, FORMULATIONS

    kinds = set()
    for word in words:
        path = ROOT / word.split("=")[-1]
        if path.suffix in (".yaml", ".yml") and path.is_file():
            cases = (yaml.safe_load(path.read_text()) or {}).get("cases") or {}
            kinds |= {(c.get("boundary") or {}).get("kind", "rigid") for c in cases.values()}
    return sorted(k for k in kinds if k in BOUNDARY_KINDS and k not in FORMULATIONS)


def not_run_because(command: str) -> str | None:
    """Why a documented command is not run here, or None for a command this test runs."""
    words = shlex.split(command)
    if words[0] in PROGRAMS:
        tools = {"conda": ("conda", "mamba"), "apptainer": ("apptainer", "singularity")}
        absent = [m for m in tools if "--sdm" in words and m in words
                  and not any(shutil.which(t) for t in tools[m])]
        if absent:
            return f"--sdm {' '.join(absent)} needs {' or '.join(tools[absent[0]])}, absent here"
        missing = unimplemented_boundaries(words)
        if missing:
            return f"its config uses boundary kind {', '.join(missing)}, not implemented yet"
        return None
    if words[:3] == ["python3", "-m", "venv"] or "pip" in Path(words[0]).name \
            or words[1:3] == ["-m", "pip"] or "install" in words:
        return "installation step: the test's environment is already installed"
    if words[1:3] == ["-m", "pytest"]:
        return "the test suite itself"
    if words[0] in ("docker", "apptainer"):
        return "builds the container image (see the Dockerfile)"
    return None


def test_the_docs_show_snakemake_commands():
    runnable = [c for _, c in COMMANDS if not_run_because(c) is None]
    assert len(runnable) >= 5, COMMANDS
    assert any(c.split()[0].endswith("wavescat") for c in runnable)
    assert any("--configfile" in c and "my.yaml" in c for c in runnable)


@pytest.mark.parametrize("where, command", COMMANDS, ids=[f"{w} {c}" for w, c in COMMANDS])
def test_documented_command_runs(repo, where, command):
    reason = not_run_because(command)
    if reason:
        pytest.skip(f"{where}: `{command}` not run: {reason}")
    words = shlex.split(command)
    assert words[0] in PROGRAMS, f"{where}: `{command}`: no rule to check this command"
    if "my.yaml" in words or "--configfile=my.yaml" in words:
        (repo / "my.yaml").write_text(MY_YAML)
    program, args = PROGRAMS[words[0]], words[1:]
    # Snakemake dry-runs; --unlock changes nothing but the lock, wavescat commands only check
    dry = ["-n"] if program == "snakemake" and "--unlock" not in args else []
    argv = [sys.executable, "-m", program] + dry + args
    out = subprocess.run(argv, cwd=repo, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    if "--report" in args:
        # A report before any run can only say that the results are missing: the command line,
        # the config and the DAG were fine up to there.
        assert "marked for report but does not exist" in text or out.returncode == 0, \
            f"{where}: `{command}` failed:\n{text[-3000:]}"
        return
    assert out.returncode == 0, f"{where}: `{command}` failed:\n{text[-3000:]}"


LINK = re.compile(r"\]\(([^)#\s]+)[^)]*\)|`([\w./-]+\.(?:md|yaml|py|smk))`")


@pytest.mark.parametrize("name", DOCS)
def test_docs_point_only_into_the_repository(name):
    """Every file a doc links or names in backticks exists in a clone (no ../shared/...)."""
    doc = ROOT / name
    missing = []
    for link, named in LINK.findall(doc.read_text()):
        target = link or named
        if target.startswith(("http://", "https://")) or target in ("my.yaml",):
            continue
        inside = [p.resolve() for p in (doc.parent / target, ROOT / target)
                  if p.resolve().is_relative_to(ROOT)]
        if not any(p.exists() for p in inside):
            missing.append(target)
    assert not missing, f"{name} points to files no clone has: {missing}"
