"""Progress of long steps in the job log: a tqdm bar on stderr with rate and ETA.

Snakemake sends a job's stderr to its log file, where carriage-return redraws would pile
up on one line: off a terminal every refresh becomes its own line, and refreshes are at
most every WAVESCAT_PROGRESS_INTERVAL seconds (default 10), so a long assembly, GMRES
solve or time-stepping run leaves a periodic line with rate and ETA and a last one when it
ends; steps shorter than the interval print nothing. An open bar that has not advanced for
an interval (Numba compiling its kernels on first use, or one slow iteration) is redrawn
anyway by a heartbeat thread, so a log never stays silent for longer than an interval
while a bar is open. WAVESCAT_PROGRESS=0 silences them.

The bars double as the record of the running stage (with `stage(name)` for steps without
one): `current_stage()` names the innermost open one, and an exception leaving a bar's or
stage's `with` block carries its name as `wavescat_stage`, so that an error (an
out-of-memory one above all) can say where it struck.
"""
from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
import time

from numba.core import event
from tqdm import tqdm


_CURSOR_MOVES = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class _Lines:
    """A file for tqdm that writes each redraw as a line (for log files)."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> None:
        # nested bars move the cursor between their rows: in a file those moves are noise
        text = _CURSOR_MOVES.sub("", text.replace("\r", ""))
        for line in text.splitlines():
            if line.strip():
                self.stream.write(line.strip() + "\n")

    def flush(self) -> None:
        self.stream.flush()


_open: list = []  # open bars and stages (names), innermost last
_heartbeat: threading.Thread | None = None


def _drop(item) -> None:
    """Remove `item` from the open list by identity (tqdm bars compare by position)."""
    for i in range(len(_open) - 1, -1, -1):
        if _open[i] is item:
            del _open[i]
            return


def _beat() -> None:
    """Redraw the innermost open bar when it has printed nothing for its interval."""
    while True:
        time.sleep(0.5)
        bars = [b for b in list(_open) if isinstance(b, _StageBar) and b.watched]
        if not bars:
            continue
        bar, now = bars[-1], time.time()
        if now - bar.start_t < bar.delay or now - bar.last_print_t < bar.mininterval:
            continue
        with contextlib.suppress(Exception):  # the bar closing meanwhile
            bar.refresh()
            bar.last_print_t = now


class _StageBar(tqdm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stage = kwargs["desc"]
        # with a zero interval every update prints anyway
        self.watched = not self.disable and self.mininterval > 0
        _open.append(self)
        if self.watched:
            _start_heartbeat()

    def close(self):
        _drop(self)
        super().close()

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and not hasattr(exc, "wavescat_stage"):
            exc.wavescat_stage = current_stage()  # a bar left open inside counts
        return super().__exit__(exc_type, exc, tb)


def _start_heartbeat() -> None:
    global _heartbeat
    if _heartbeat is None:
        _heartbeat = threading.Thread(target=_beat, daemon=True, name="wavescat-progress")
        _heartbeat.start()


@contextlib.contextmanager
def stage(name: str):
    """Mark a stage that has no bar of its own (for `current_stage` and errors leaving it)."""
    _open.append(name)
    try:
        yield
    except BaseException as exc:
        if not hasattr(exc, "wavescat_stage"):
            exc.wavescat_stage = current_stage()
        raise
    finally:
        _drop(name)


def current_stage(exc: BaseException | None = None) -> str | None:
    """The stage `exc` left, else the innermost open bar or stage (None outside any)."""
    if getattr(exc, "wavescat_stage", None):
        return exc.wavescat_stage
    inner = _open[-1] if _open else None
    return getattr(inner, "stage", inner)


def job(name: str) -> tqdm:
    """The whole job as the outermost bar, so the heartbeat keeps its log alive where no
    inner bar is open (module imports, Numba compiling before a stage's first bar)."""
    return progress(None, name, bar_format="{desc}: running for {elapsed}")


def progress(total: int | None, desc: str, unit: str = "it", **options) -> tqdm:
    """A progress bar for `total` units of work (a context manager; `.update(n)`); `options`
    go to tqdm."""
    stream = sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = float(os.environ.get("WAVESCAT_PROGRESS_INTERVAL", "10"))
    bar = _StageBar(total=total, desc=desc, unit=unit, file=stream if tty else _Lines(stream),
                    mininterval=interval, delay=interval,
                    disable=os.environ.get("WAVESCAT_PROGRESS", "1") == "0",
                    ascii=not tty, dynamic_ncols=tty, leave=True, **options)
    return bar


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
