"""Result files written atomically: a failed or interrupted run never leaves a half-written
file behind, and a finished file has the permissions of any file the user creates. Input
files read many times in one process (the schema, fish shapes) parsed once per version."""
from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_path(path: str | Path):
    """Yield a temporary path beside `path`; move it into place only if the block succeeds.

    The temporary name keeps the suffix of `path` (writers that pick their format from the
    suffix still work) and gets mode 0666 & ~umask: mkstemp's private 0600 would otherwise
    become the mode of the result.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}",
                               dir=path.parent)
    os.close(fd)
    try:
        os.chmod(tmp, 0o666 & ~_umask())
        yield Path(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def parsed_once(path: str | Path, parse):
    """parse(path), kept for this version of the file (resolved path, modification time and
    size), so an edited file is parsed again; `parse` a module-level function. The result is
    shared: callers that change it take a copy."""
    path = Path(path).resolve()
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size, parse)


@functools.lru_cache(maxsize=32)
def _parsed(path: Path, mtime_ns: int, size: int, parse):
    return parse(path)
