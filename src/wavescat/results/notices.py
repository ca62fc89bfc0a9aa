"""Warnings that reach the user: those of a run's cases (their summary.json, else their mesh
statistics) gathered and printed on the console when a workflow run ends, and a short note
for the plots of a case that carries warnings. The jobs themselves write warnings only to
their logs and to summary.json, which nobody reads by default."""
from __future__ import annotations

import json
import sys
from pathlib import Path


def _read(path: Path) -> list[str]:
    try:
        return list(json.loads(path.read_text()).get("warnings", []))
    except (OSError, ValueError, AttributeError):
        return []


def case_warnings(case: str, results: str | Path = "results") -> list[str]:
    """The warnings recorded for `case`: its summary.json's (which hold its meshes' too),
    else its meshes' statistics (a run that stopped before the summary)."""
    folder = Path(results, case)
    summary = folder / "summary.json"
    if summary.is_file():
        return _read(summary)
    out: list[str] = []
    for stats in [folder / "mesh_stats.json", *sorted((folder / "meshes").glob("b*_stats.json"))]:
        out += [w for w in _read(stats) if w not in out]
    return out


def run_warnings(cases, results: str | Path = "results", known=()) -> dict[str, list[str]]:
    """{case: warnings} of the cases that have any; `known` (e.g. the config check's
    hypersensitivity lines, "case <name>: ...") are added to a case that has no summary.json
    yet (its solves repeat them in the summary)."""
    out: dict[str, list[str]] = {}
    for case in cases:
        ws = case_warnings(case, results)
        if not Path(results, case, "summary.json").is_file():
            ws += [w for w in known if w.startswith(f"case {case}:") and w not in ws]
        if ws:
            out[case] = ws
    return out


# The console shows at most this many warning lines (a study of many cases repeats them).
CONSOLE_LINES = 20


def format_warnings(warnings: dict[str, list[str]], ending: str = "ended",
                    limit: int = CONSOLE_LINES) -> str:
    """The console text: a header, then one line per warning under its case (at most
    `limit`, then how many more); '' if none."""
    if not warnings:
        return ""
    n = sum(len(v) for v in warnings.values())
    lines = [f"wavescat: the run {ending} with {n} warning{'s' * (n != 1)} "
             f"(also in results/<case>/summary.json):"]
    for case, ws in warnings.items():
        lines += [f"  {case}: {w}" for w in ws]
    if len(lines) > limit + 1:
        rest = len(lines) - 1 - limit
        lines = lines[:limit + 1] + [f"  ... and {rest} more (results/<case>/summary.json)"]
    return "\n".join(lines)


def config_warning_lines(warnings, limit: int = CONSOLE_LINES) -> list[str]:
    """The config check's warnings for the console, one line each, at most `limit`."""
    warnings = list(warnings)
    lines = [f"wavescat: warning: {w}" for w in warnings[:limit]]
    if len(warnings) > limit:
        lines.append(f"wavescat: ... and {len(warnings) - limit} more warnings of the same kind")
    return lines


def print_run_warnings(cases, results: str | Path = "results", known=(), ending="ended",
                       stream=None) -> int:
    """Print every warning of the run's cases to `stream` (stderr); return how many."""
    warnings = run_warnings(cases, results, known)
    text = format_warnings(warnings, ending)
    if text:
        print(text, file=stream or sys.stderr, flush=True)
    return sum(len(v) for v in warnings.values())


def plot_note(warnings) -> str:
    """A one-paragraph note for the TS plots of a case with warnings ('' without)."""
    warnings = list(warnings or [])
    if not warnings:
        return ""
    first = warnings[0]
    if len(first) > 600:
        first = first[:600].rsplit(" ", 1)[0] + " ..."
    more = f" (and {len(warnings) - 1} more)" if len(warnings) > 1 else ""
    return f"WARNING{more}, see summary.json: {first}"
