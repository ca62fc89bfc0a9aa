"""Progress of long steps in the job log: a tqdm bar on stderr with rate and ETA.

Snakemake sends a job's stderr to its log file, where carriage-return redraws would pile
up on one line: off a terminal every refresh becomes its own line, and refreshes are at
most every WAVESCAT_PROGRESS_INTERVAL seconds (default 10), so a long assembly, GMRES
solve or time-stepping run leaves a periodic line with rate and ETA and a last one when it
ends; steps shorter than the interval print nothing. WAVESCAT_PROGRESS=0 silences them.
"""
from __future__ import annotations

import os
import sys

from tqdm import tqdm


class _Lines:
    """A file for tqdm that writes each redraw as a line (for log files)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        text = text.replace("\r", "").strip()
        if text:
            self.stream.write(text + "\n")

    def flush(self) -> None:
        self.stream.flush()


def progress(total: int | None, desc: str, unit: str = "it") -> tqdm:
    """A progress bar for `total` units of work (a context manager; `.update(n)`)."""
    stream = sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = float(os.environ.get("WAVESCAT_PROGRESS_INTERVAL", "10"))
    return tqdm(total=total, desc=desc, unit=unit, file=stream if tty else _Lines(stream),
                mininterval=interval, delay=interval,
                disable=os.environ.get("WAVESCAT_PROGRESS", "1") == "0",
                ascii=not tty, dynamic_ncols=tty, leave=True)


_compile_note = None


def announce_compilation(log, what: str = "CPU kernels",
                         duration: str = "first run only, about a minute") -> None:
    """Log one line when Numba starts compiling a wavescat kernel, before it compiles.

    Kernels are compiled with `cache=True`: the machine code is stored on disk (beside the
    sources, or under NUMBA_CACHE_DIR), so this happens on the first run only. Numba signals
    a compilation only on a cache miss, so a warm cache logs nothing.
    """
    global _compile_note
    if _compile_note is not None:
        return
    from numba.core import event

    class _Note(event.Listener):
        said = False

        def on_start(self, ev):
            func = getattr(ev.data.get("dispatcher"), "py_func", None)
            if not self.said and getattr(func, "__module__", "").startswith("wavescat."):
                self.said = True
                log.info("compiling %s (%s)", what, duration)

        def on_end(self, ev):
            pass

    _compile_note = _Note()
    event.register("numba:compile", _compile_note)
