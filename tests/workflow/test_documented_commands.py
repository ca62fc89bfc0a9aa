"""Every command the documentation shows runs as written.

The commands are read from the fenced shell blocks (```bash) and inline code of README.md,
config/README.md, bench/README.md and docs/*.md, and from the comment lines of the shipped
configs and profiles. Each is checked in a temporary copy of the repository:
- Snakemake commands are dry-run (`-n` after the program name, nothing else changed);
  documented `wavescat` commands (config checks) run as they are. `.venv/bin/snakemake` and
  `snakemake` become the test's interpreter with `-m snakemake`, `.venv/bin/wavescat` and
  `wavescat` likewise with `-m wavescat`. Where a command names `my.yaml`, a small stand-in
  study is written first; a ```yaml block of the same doc whose first line is `# NAME.yaml`
  is the file NAME.yaml that the doc's commands use, and is written first too.
- A Snakemake command with `--sdm conda` or `--sdm apptainer` where that tool is absent must
  get as far as Snakemake's own call of the tool (the command line, the config and the DAG
  are fine up to there), and no further error.
- Bench scripts (`python bench/NAME.py ...`) must exist, answer `--help`, and know every
  option the command gives them.
- `pip install` must name extras that pyproject.toml defines; `docker`/`apptainer build`
  need the Dockerfile; a repository script must exist and know the subcommand given.
Anything else fails as "no rule to check this command", so the docs show only commands
this test can check. The venv and the test-suite commands themselves are listed as skipped.
`test_a_wrong_command_fails` feeds known-wrong commands through the same checks.
"""
import functools
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ["README.md", "config/README.md", "bench/README.md",
        *sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").glob("*.md"))]
COMMENTED = sorted(p.relative_to(ROOT).as_posix() for pattern in
                   ("config/examples/*.yaml", "profiles/*/config.yaml")
                   for p in ROOT.glob(pattern))
PROGRAMS = {"snakemake": "snakemake", ".venv/bin/snakemake": "snakemake",
            "wavescat": "wavescat", ".venv/bin/wavescat": "wavescat"}
PYTHONS = {"python", "python3", ".venv/bin/python", ".venv/bin/python3"}
SDM_TOOLS = {"conda": (("conda", "mamba"), "Error running conda info"),
             "apptainer": (("apptainer", "singularity"),
                           "The apptainer or singularity command has to be available")}

# The user's own study of the README, as small as a study can be.
MY_YAML = """\
run: [my_sphere]
cases:
  my_sphere:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: [200]
    receivers: {plane: xz, count: 13}
"""

TOO_LARGE_HERE = re.compile(r"more than the [\d.]+ [TGM]B of [^(]*\(this machine's")
FENCE = re.compile(r"^```(\w*)\s*$")
INLINE = re.compile(r"`([^`\n]+)`")
COMMENT_COMMAND = re.compile(r"^#\s+((?:\.venv/bin/)?(?:snakemake|wavescat)\s.*)$")
NAMED_FILE = re.compile(r"^#\s*([\w.-]+\.ya?ml)\b")


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


def doc_files(name: str) -> dict[str, str]:
    """NAME.yaml -> text of the ```yaml blocks of a doc whose first line is `# NAME.yaml`."""
    files, block = {}, None
    for line in (ROOT / name).read_text().splitlines():
        fence = FENCE.match(line.strip())
        if fence and block is None:
            block = [] if fence.group(1) in ("yaml", "yml") else False
        elif fence:
            if block:
                match = NAMED_FILE.match(block[0])
                if match:
                    files[match.group(1)] = "\n".join(block) + "\n"
            block = None
        elif block is not None and block is not False:
            block.append(line)
    return files


def same_check(command: str) -> tuple:
    """What decides a command's check: the program (`.venv/bin/` or not), its arguments but the
    number of cores (a dry run's outcome does not depend on them)."""
    words = shlex.split(command)
    words[:1] = [PROGRAMS.get(words[0], words[0])] if words else []
    kept = []
    for word in words:
        if kept and kept[-1] == "--cores":
            kept[-1] = "--cores N"
        else:
            kept.append(word)
    return tuple(kept)


def distinct(commands):
    """The commands, each (with the files its doc defines) checked once: where it appears
    first."""
    seen, kept = set(), []
    for where, command in commands:
        doc = where.rsplit(":", 1)[0]
        key = (same_check(command),
               tuple(sorted(doc_files(doc).items())) if doc.endswith(".md") else ())
        if key not in seen:
            seen.add(key)
            kept.append((where, command))
    return kept


COMMANDS = distinct(documented_commands())


def unimplemented_boundaries(words: list[str]) -> list[str]:
    """Boundary kinds that the repository's config files named in a command use and this
    build does not implement yet (the contract names every kind before each one lands)."""
    from wavescat.bem.formulations import FORMULATIONS
    from wavescat.defaults import BOUNDARY, load_schema

    named = load_schema()["$defs"]["case"]["properties"]["boundary"]["properties"]["kind"]["enum"]
    kinds = set()
    for word in words:
        path = ROOT / word.split("=")[-1]
        if path.suffix in (".yaml", ".yml") and path.is_file():
            cases = (yaml.safe_load(path.read_text()) or {}).get("cases") or {}
            kinds |= {{**BOUNDARY, **(c.get("boundary") or {})}["kind"] for c in cases.values()}
    return sorted(k for k in kinds if k in named and k not in FORMULATIONS)


def without_environment(words: list[str]) -> list[str]:
    """The command without leading `NAME=value` environment settings."""
    while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
        words = words[1:]
    return words


def not_run_because(command: str) -> str | None:
    """Why a documented command is not checked here, or None for one this test checks."""
    words = without_environment(shlex.split(command))
    if words[0] in PROGRAMS:
        missing = unimplemented_boundaries(words)
        if missing:
            return f"its config uses boundary kind {', '.join(missing)}, not implemented yet"
        return None
    if words[:3] == ["python3", "-m", "venv"]:
        return "installation step: the test's environment is already installed"
    if words[1:3] == ["-m", "pytest"]:
        return "the test suite itself"
    return None


@functools.cache
def script_help(script: str) -> str:
    """The `--help` text of a bench script (run once per script)."""
    out = subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"`{script} --help` failed:\n{(out.stdout + out.stderr)[-2000:]}"
    return out.stdout


def sdm_tool_absent(args: list[str]) -> str | None:
    """The deployment method (conda, apptainer) a Snakemake command asks for whose tool is
    absent here, or None."""
    methods = []
    for i, arg in enumerate(args):
        if arg.startswith("--sdm="):
            methods += arg.split("=", 1)[1].split()
        elif arg == "--sdm":
            methods += [a for a in args[i + 1:i + 3] if a in SDM_TOOLS]
    for method in methods:
        if method in SDM_TOOLS and not any(shutil.which(t) for t in SDM_TOOLS[method][0]):
            return method
    return None


def check_program(words: list[str], repo: Path, files: dict[str, str]) -> None:
    """Dry-run a Snakemake command, or run a wavescat config check, in the copy `repo`."""
    for name, text in files.items():
        (repo / name).write_text(text)
    if "my.yaml" in words or "--configfile=my.yaml" in words:
        (repo / "my.yaml").write_text(MY_YAML)
    program, args = PROGRAMS[words[0]], words[1:]
    # Snakemake dry-runs; --unlock changes nothing but the lock, wavescat commands only check
    dry = ["-n"] if program == "snakemake" and "--unlock" not in args else []
    out = subprocess.run([sys.executable, "-m", program] + dry + args, cwd=repo,
                         capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    absent = sdm_tool_absent(args) if program == "snakemake" else None
    if absent:
        # Snakemake parsed the command line, read the config and built the DAG, then asked
        # for the tool that this machine lacks: as far as a check can go here.
        assert SDM_TOOLS[absent][1] in text, f"failed before it needed {absent}:\n{text[-3000:]}"
        return
    if out.returncode != 0 and TOO_LARGE_HERE.search(text):
        # A case meant for a larger machine (the docs say which): refused by the check of its
        # estimates against this machine's memory, after the command line and the config passed.
        return
    if "--report" in args:
        # A report before any run can only say that the results are missing: the command line,
        # the config and the DAG were fine up to there.
        assert "marked for report but does not exist" in text or out.returncode == 0, text[-3000:]
        return
    assert out.returncode == 0, text[-3000:]


def check_bench(words: list[str]) -> None:
    """A bench script exists, answers --help, and knows every option given to it."""
    script = words[1]
    assert (ROOT / script).is_file(), f"no script {script}"
    source = (ROOT / script).read_text()
    if "argparse" not in source:  # positional arguments only (bench_meshing.py: frequencies)
        compile(source, script, "exec")
        assert not [w for w in words[2:] if w.startswith("-")], f"{script} takes no options"
        return
    known = script_help(script)
    for option in (w.split("=")[0] for w in words[2:] if w.startswith("--")):
        assert re.search(rf"{re.escape(option)}\b", known), f"{script} has no option {option}"


def check_other(words: list[str]) -> None:
    """Installation, container and repository-script commands: what they name exists."""
    if "pip" in Path(words[0]).name or words[1:3] == ["-m", "pip"]:
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        extras = set(extras.get("optional-dependencies", {}))
        for word in words:
            match = re.fullmatch(r"\.(?:\[([\w,-]+)\])?", word)
            if match and match.group(1):
                unknown = set(match.group(1).split(",")) - extras
                assert not unknown, f"pyproject.toml defines no extra {unknown}"
        return
    if words[0] in ("docker", "podman", "apptainer") and words[1] == "build":
        assert (ROOT / "Dockerfile").is_file()
        return
    script = ROOT / words[0]
    if "/" in words[0] and script.is_file():
        assert script.stat().st_mode & 0o111, f"{words[0]} is not executable"
        if len(words) > 1 and not words[1].startswith("-"):
            assert re.search(rf"^\s*{re.escape(words[1])}\)", script.read_text(), re.M), \
                f"{words[0]} has no subcommand {words[1]}"
        return
    raise AssertionError("no rule to check this command")


def check(command: str, repo: Path, files: dict[str, str]) -> None:
    """Run or check one documented command; AssertionError says what is wrong with it."""
    words = without_environment(shlex.split(command))
    if words[0] in PROGRAMS:
        check_program(words, repo, files)
    elif words[0] in PYTHONS and len(words) > 1 and words[1].startswith("bench/"):
        check_bench(words)
    else:
        check_other(words)


def test_the_docs_show_snakemake_commands():
    runnable = [c for _, c in COMMANDS if not_run_because(c) is None]
    assert len(runnable) >= 5, COMMANDS
    assert any(c.split()[0].endswith("wavescat") for c in runnable)
    assert any("--configfile" in c and "my.yaml" in c for c in runnable)
    assert any("--sdm" in c for c in runnable)
    assert any(" bench/" in c for c in runnable)


@pytest.mark.parametrize("where, command", COMMANDS, ids=[f"{w} {c}" for w, c in COMMANDS])
def test_documented_command_runs(repo, where, command):
    reason = not_run_because(command)
    if reason:
        pytest.skip(f"{where}: `{command}` not run: {reason}")
    doc = where.rsplit(":", 1)[0]
    try:
        check(command, repo, doc_files(doc) if doc.endswith(".md") else {})
    except AssertionError as exc:
        raise AssertionError(f"{where}: `{command}`: {exc}") from None


WRONG = [
    # --sdm takes several values and swallows the target
    "snakemake --cores all --sdm conda target_strength --configfile my.yaml",
    # --configfile takes several files and reads the target as one
    "snakemake --cores all --configfile my.yaml target_strength",
    "snakemake --cores all no_such_target",
    "wavescat check-config no_such_file.yaml",
    "python bench/bench_sweep.py --no-such-option 3",
    "python bench/no_such_script.py",
    ".venv/bin/pip install -q -e '.[no-such-extra]'",
    "profiles/slurm/one-node-cluster.sh no_such_subcommand",
    "make everything",
]


@pytest.mark.parametrize("command", WRONG)
def test_a_wrong_command_fails(repo, command):
    with pytest.raises(AssertionError):
        check(command, repo, {})


LINK = re.compile(r"\]\(([^)#\s]+)[^)]*\)|`([\w./-]+\.(?:md|yaml|py|smk))`")


@pytest.mark.parametrize("name", DOCS)
def test_docs_point_only_into_the_repository(name):
    """Every file a doc links or names in backticks exists in a clone (no ../shared/...)."""
    doc = ROOT / name
    own = set(doc_files(name)) | {"my.yaml"}
    missing = []
    for link, named in LINK.findall(doc.read_text()):
        target = link or named
        if target.startswith(("http://", "https://")) or target in own:
            continue
        inside = [p.resolve() for p in (doc.parent / target, ROOT / target)
                  if p.resolve().is_relative_to(ROOT)]
        if not any(p.exists() for p in inside):
            missing.append(target)
    assert not missing, f"{name} points to files no clone has: {missing}"
