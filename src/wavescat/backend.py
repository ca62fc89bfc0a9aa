"""The one place that decides between CuPy (GPU) and NumPy/Numba (CPU).

Every other module asks `resolve(backend)` for the Backend of a name or a Backend it was
given, and never imports CuPy itself, so the rest of the code is written once against
`backend.xp`. A library call that names no backend runs on DEFAULT; a case names its own
(`solver.backend`, whose default is the schema's `auto`).
"""
from __future__ import annotations

import contextlib
import functools
import logging
import os
import platform
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse

from . import kernel_cache
from .errors import BackendError

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Backend:
    """An array module plus what a report needs to know about where work runs."""

    name: str  # "cpu" or "gpu"
    xp: Any  # numpy or cupy
    device_name: str
    device_count: int = 1
    reason: str = ""  # why this backend was chosen (logged and written to summary.json)

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    def asnumpy(self, a):
        """A host (NumPy) copy of `a`, whichever backend made it."""
        if self.is_gpu:
            return self.xp.asnumpy(a)
        return np.asarray(a)

    def device(self, index: int = 0):
        """Context in which work runs on GPU `index` (nothing to do on the CPU)."""
        if self.is_gpu:
            return self.xp.cuda.Device(index)
        return contextlib.nullcontext()

    def synchronize(self) -> None:
        """Wait for the current device's queued work (timings); nothing on the CPU."""
        if self.is_gpu:
            self.xp.cuda.Device().synchronize()

    def describe(self) -> dict:
        return {"backend": self.name, "device": self.device_name,
                "device_count": self.device_count, "reason": self.reason}


def to_host(a) -> np.ndarray:
    """A NumPy array of `a`, a host or a device (CuPy) array: for code that receives arrays
    of either backend without holding the Backend."""
    return a.get() if hasattr(a, "get") else np.asarray(a)


def array_module(a):
    """NumPy for host arrays, CuPy for device arrays."""
    if isinstance(a, np.ndarray):
        return np
    import cupy  # noqa: PLC0415 - a device array exists, so CuPy does

    return cupy.get_array_module(a)


def scatter_add(target, index, values) -> None:
    """target[index] += values with repeated indices accumulated (np.add.at), `index`
    picking entries of a flat target or rows of a wider one, for host or device arrays (on
    the device a complex target and its values as real arrays with a trailing (re, im) axis:
    one atomic pass)."""
    if isinstance(target, np.ndarray):
        np.add.at(target, index, values)
        return
    import cupyx  # noqa: PLC0415

    values = values.astype(target.dtype, copy=False)
    if target.dtype.kind == "c":
        real = target.real.dtype
        values = array_module(values).ascontiguousarray(values)
        target = target.view(real).reshape(target.shape + (2,))
        values = values.view(real).reshape(values.shape + (2,))
    cupyx.scatter_add(target, index, values)


def sparse_module(a):
    """The sparse-matrix module of the backend that holds `a`: SciPy's for host arrays,
    cupyx's (cuSPARSE) for device arrays."""
    if isinstance(a, np.ndarray):
        return scipy.sparse
    import cupyx.scipy.sparse  # noqa: PLC0415 - a device array exists, so CuPy does
    return cupyx.scipy.sparse


@functools.lru_cache(maxsize=1)
def _probe_gpu() -> tuple[Any, str, int] | str:
    """(cupy, device name, device count) when CuPy sees a GPU, else why not."""
    try:
        import cupy  # noqa: PLC0415 - optional dependency, imported only here
    except Exception as exc:  # ImportError, or a broken CUDA install
        return f"CuPy not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return f"CuPy sees no CUDA device ({type(exc).__name__})"
    if count < 1:
        return "CuPy sees no CUDA device"
    props = cupy.cuda.runtime.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    if os.environ.get(kernel_cache.RECORD_ENV):  # making the kernel manifest
        kernel_cache.start_recording(os.environ[kernel_cache.RECORD_ENV])
    return cupy, name, count


def gpu_available() -> bool:
    return not isinstance(_probe_gpu(), str)


def gpu_memory_bytes() -> int | None:
    """Total memory of the GPU the jobs would use (None where CuPy sees none)."""
    probe = _probe_gpu()
    if isinstance(probe, str):
        return None
    return int(probe[0].cuda.Device(0).mem_info[1])


def cpu_name() -> str:
    return f"{platform.processor() or platform.machine()} ({os.cpu_count()} cores)"


def get_backend(name: str = "auto") -> Backend:
    """Return the backend for `name` in {"auto", "cpu", "gpu"}.

    `auto` takes the GPU when CuPy sees one and says why it fell back otherwise;
    `gpu` without a GPU is an error, never a silent fallback.
    """
    if name not in ("auto", "cpu", "gpu"):
        raise BackendError(f"backend = {name!r}: must be one of auto, cpu, gpu")
    if name == "cpu":
        return Backend("cpu", np, cpu_name(), reason="requested cpu")
    probe = _probe_gpu()
    if isinstance(probe, str):
        if name == "gpu":
            raise BackendError(f"backend 'gpu' asked for, but no GPU is usable: {probe}")
        log.info("backend auto: running on the CPU (%s)", probe)
        return Backend("cpu", np, cpu_name(), reason=f"auto: no GPU ({probe})")
    cupy, dev, count = probe
    return Backend("gpu", cupy, dev, count, reason=f"{name}: CuPy sees {count} GPU(s)")


# What a library call that names no backend runs on: the host, whose arrays every caller can
# read (a device array must be asked for).
DEFAULT = "cpu"


def resolve(backend: Backend | str | None = None) -> Backend:
    """`backend` itself, the Backend of a name ("auto", "cpu", "gpu"), or DEFAULT's for None."""
    if isinstance(backend, Backend):
        return backend
    return get_backend(DEFAULT if backend is None else backend)


def real_dtype(precision: str):
    if precision not in ("single", "double"):
        raise BackendError(f"precision = {precision!r}: must be single or double")
    return np.float32 if precision == "single" else np.float64


def complex_dtype(precision: str):
    return np.complex64 if real_dtype(precision) == np.float32 else np.complex128


def follow_job_threads() -> None:
    """Numba's thread pool takes the job's thread count, which Snakemake passes to every
    job as OMP_NUM_THREADS (a rule's `threads`); without this each job spins one thread per
    core, and jobs running side by side stall on each other's parallel-loop barriers."""
    n = os.environ.get("OMP_NUM_THREADS", "")
    if not n.isdigit() or int(n) < 1 or "NUMBA_NUM_THREADS" in os.environ:
        return
    numba = sys.modules.get("numba")
    if numba is not None:  # already loaded: its pool is sized, only the threads used change
        numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))
    else:
        os.environ["NUMBA_NUM_THREADS"] = n
