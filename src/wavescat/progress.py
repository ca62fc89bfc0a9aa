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
import sys
import threading
import time
import weakref

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


_open: list[str] = []  # descriptions of the bars not yet closed, innermost last
_shown = weakref.WeakSet()  # the bars the heartbeat watches
_heartbeat: threading.Thread | None = None


def _beat() -> None:
    """Redraw every open bar that has printed nothing for its interval."""
    while True:
        time.sleep(0.5)
        now = time.time()
        for bar in list(_shown):
            quiet = now - bar.last_print_t
            if bar.disable or now - bar.start_t < bar.delay or quiet < bar.mininterval:
                continue
            with contextlib.suppress(Exception):  # a bar closing meanwhile
                bar.refresh()
                bar.last_print_t = now


def _watch(bar) -> None:
    global _heartbeat
    if bar.disable or bar.mininterval <= 0:
        return  # every update prints anyway
    _shown.add(bar)
    if _heartbeat is None:
        _heartbeat = threading.Thread(target=_beat, daemon=True, name="wavescat-progress")
        _heartbeat.start()


class _StageBar(tqdm):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.stage, self._listed = kwargs["desc"], True
        _open.append(self.stage)

    def close(self):
        if getattr(self, "_listed", False):
            _open.remove(self.stage)
            self._listed = False
        _shown.discard(self)
        super().close()

    def __exit__(self, exc_type, exc, tb):
        if exc is not None and not hasattr(exc, "wavescat_stage"):
            exc.wavescat_stage = self.stage
        return super().__exit__(exc_type, exc, tb)


@contextlib.contextmanager
def stage(name: str):
    """Mark a stage that has no bar of its own (for `current_stage` and errors leaving it)."""
    _open.append(name)
    try:
        yield
    except BaseException as exc:
        if not hasattr(exc, "wavescat_stage"):
            exc.wavescat_stage = name
        raise
    finally:
        _open.remove(name)


def current_stage(exc: BaseException | None = None) -> str | None:
    """The stage `exc` left, else the innermost open progress bar (None outside any)."""
    return getattr(exc, "wavescat_stage", None) or (_open[-1] if _open else None)


def progress(total: int | None, desc: str, unit: str = "it") -> tqdm:
    """A progress bar for `total` units of work (a context manager; `.update(n)`)."""
    stream = sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    interval = float(os.environ.get("WAVESCAT_PROGRESS_INTERVAL", "10"))
    bar = _StageBar(total=total, desc=desc, unit=unit, file=stream if tty else _Lines(stream),
                    mininterval=interval, delay=interval,
                    disable=os.environ.get("WAVESCAT_PROGRESS", "1") == "0",
                    ascii=not tty, dynamic_ncols=tty, leave=True)
    _watch(bar)
    return bar
