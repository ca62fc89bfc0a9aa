"""Memory where work runs: what the host and the GPU have and have free, a dense allocation
refused before it is tried, and an allocation that failed anyway turned into a message
naming the stage (`out_of_memory_message`).

The numerics ask here at the point of allocation; the checks made before any job starts
(wavescat.planning.preflight) ask here for the host's total (backend.gpu_memory_bytes: the GPU's).
"""
from __future__ import annotations

import psutil

from .errors import ResourceError
from .progress import current_stage

GIB = 2**30


def host_memory_bytes() -> int:
    return int(psutil.virtual_memory().total)


def available_host_bytes() -> int:
    return int(psutil.virtual_memory().available)


def available_gpu_bytes(xp) -> int:
    """Free device memory plus what CuPy's pool holds but does not use."""
    pool = xp.get_default_memory_pool()
    return int(xp.cuda.Device().mem_info[0] + pool.total_bytes() - pool.used_bytes())


def available_bytes(backend) -> int:
    """Bytes free where `backend` allocates its arrays (GPU or host)."""
    return available_gpu_bytes(backend.xp) if backend.is_gpu else available_host_bytes()


def check_dense_allocation(n_rows: int, n_cols: int, needed: int, backend, what: str) -> None:
    """Refuse a dense allocation of `needed` bytes that the device cannot hold, before trying."""
    available = available_bytes(backend)
    if needed > available:
        size = n_rows if n_rows == n_cols else f"{n_rows} x {n_cols}"
        where = "GPU" if backend.is_gpu else "host"
        raise ResourceError(
            f"dense {what} of {size} unknowns needs {needed / GIB:.3g} GiB, "
            f"{available / GIB:.3g} GiB of {where} memory available; use operator_format: hmatrix")


def out_of_memory_message(exc: BaseException, command: str) -> str | None:
    """A user's message for an allocation that failed (NumPy's or CuPy's MemoryError, or a
    CUDA library out of memory), naming the stage and the size; None for other errors."""
    text = str(exc)
    gpu = type(exc).__module__.split(".")[0] in ("cupy", "cupy_backends")
    if not isinstance(exc, MemoryError) and not (
            gpu and ("out of memory" in text.lower() or "ALLOC_FAILED" in text)):
        return None
    stage = current_stage(exc) or command
    return (f"out of {'GPU' if gpu else 'host'} memory in {stage!r}: {text or type(exc).__name__}; "
            "a smaller problem (frequency, elements per wavelength), operator_format: hmatrix, "
            f"or a {'larger GPU' if gpu else 'machine with more memory'} is needed")
