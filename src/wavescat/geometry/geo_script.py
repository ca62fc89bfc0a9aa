"""Refuse gmsh `.geo` scripts that could do more than describe a geometry.

A `.geo` file is a program: gmsh runs shell commands (`SystemCall`, `System`,
`NonBlockingSystemCall`, `OnelabRun`), ends the process (`Exit`, `Abort`), writes, renames
or deletes files (`Print`, `Save`, `Printf(...) > "file"`, `CreateDir`, `DeleteFile`,
`RenameFile`) and reads further scripts (`Include`, and `Merge` of anything that is not a
mesh or CAD data file; gmsh also reads `<file>.opt` beside every file it opens or merges).
`check_geo_script` scans the file and every script it pulls in, token by token (comments
and strings skipped, control flow ignored, so nothing hides in a branch or a macro), and
raises MeshError naming the file, the line and the command.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import MeshError

# Commands that run programs, end the process or write to the file system.
FORBIDDEN = {
    "SystemCall": "runs a shell command",
    "System": "runs a shell command",
    "NonBlockingSystemCall": "runs a shell command",
    "OnelabRun": "runs an external program",
    "OnelabAction": "drives external programs",
    "Exit": "ends the meshing process",
    "Abort": "ends the meshing process",
    "Print": "writes a file",
    "Save": "writes a file",
    "CreateDir": "creates a directory",
    "DeleteFile": "deletes a file",
    "RenameFile": "renames a file",
}
# Commands that read another file; its name must be a literal so that it can be checked.
READS = {"Include", "Merge", "MergeWithBoundingBox", "ShapeFromFile"}
# Files gmsh reads as data, not as a script.
DATA_SUFFIXES = {".step", ".stp", ".brep", ".iges", ".igs", ".stl", ".msh"}

_SUSPECT = re.compile(r"\b(" + "|".join(sorted(FORBIDDEN.keys() | READS | {"Solver", "Printf"}))
                      + r")\b")
_TOKEN = re.compile(r'//[^\n]*|/\*.*?\*/|"[^"]*"|\'[^\']*\'|[A-Za-z_][A-Za-z0-9_]*|\S', re.S)


def _tokens(text: str):
    """(kind, value, line) for every token: kind is 'name', 'string' or 'char'."""
    line, pos = 1, 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        line, pos = line + text.count("\n", pos, m.start()), m.start()
        if tok.startswith(("//", "/*")):
            continue
        if tok[0] in "\"'":
            yield "string", tok[1:-1], line
        elif tok[0].isalpha() or tok[0] == "_":
            yield "name", tok, line
        else:
            yield "char", tok, line


def _refuse(path: Path, line: int, what: str) -> None:
    raise MeshError(f"geometry file {str(path)!r}, line {line}: {what}; wavescat does not run "
                    ".geo files that can execute commands or touch other files")


def check_geo_script(path: str | Path, _seen: set | None = None) -> None:
    """Raise MeshError if the script at `path` (or a script it reads) can run commands."""
    path = Path(path)
    seen = set() if _seen is None else _seen
    key = path.resolve()
    if key in seen:
        return
    seen.add(key)
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        raise MeshError(f"cannot read geometry file {str(path)!r}: {exc}") from exc
    if _SUSPECT.search(text) is None:  # the common case: no command worth a closer look
        _check_options_file(path, seen)
        return
    toks = list(_tokens(text))
    for i, (kind, value, line) in enumerate(toks):
        if kind != "name":
            continue
        after = toks[i + 1] if i + 1 < len(toks) else ("char", ";", line)
        if value in FORBIDDEN and after[1] != ".":  # `Print.Width` is an option, not a command
            _refuse(path, line, f"{value!r} {FORBIDDEN[value]}")
        if value == "Solver" and after[1] == ".":
            _refuse(path, line, "'Solver.*' options name external programs")
        if value == "Printf" and _redirects(toks, i):
            _refuse(path, line, "'Printf' with '>' writes a file")
        if value in READS:
            if value == "ShapeFromFile" and after[1] == "(":
                after = toks[i + 2] if i + 2 < len(toks) else after
            if after[0] != "string":
                _refuse(path, line, f"{value!r} of a computed file name cannot be checked")
            _check_read(path.parent / after[1], path, line, seen)
    _check_options_file(path, seen)


def _redirects(toks, i: int) -> bool:
    """Whether the Printf statement starting at token i sends its output to a file."""
    depth = 0
    for kind, value, _ in toks[i + 1:]:
        if value == ";" and kind == "char":
            return False
        if kind == "char":
            depth += value in "([{"
            depth -= value in ")]}"
            if value == ">" and depth == 0:
                return True
    return False


def _check_read(target: Path, source: Path, line: int, seen: set) -> None:
    if not target.is_file():
        return  # gmsh fails on it with its own error; nothing runs
    if target.suffix.lower() not in DATA_SUFFIXES:  # anything else is parsed as a script
        try:
            check_geo_script(target, seen)
        except MeshError as exc:
            raise MeshError(f"{exc} (read from {str(source)!r}, line {line})") from None
    _check_options_file(target, seen)


def _check_options_file(path: Path, seen: set) -> None:
    options = path.with_name(path.name + ".opt")
    if options.is_file():
        check_geo_script(options, seen)
