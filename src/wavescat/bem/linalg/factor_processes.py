"""Sparse LU factorisations kept in processes of their own, so that they and their solves run
side by side for real.

SciPy's SuperLU on threads of one process did not run side by side at the sizes that matter:
on the 2 kHz submarine (299,154 unknowns, 32 cores) the NtD map's ten solves on ten threads
took 1.13 s, 7.7 times one solve, and its ten factorisations 21.9 s; with each factor in a
worker process 0.28 s and 13.0 s (bench/README.md; on the 2-core machine two small solves on
two threads do overlap, so the cause is not the GIL alone: memory, or SuperLU's own state).
While they ran beside the assembly, the thread driving the GPU slowed too (the double
layer's trees 5.7 s against 2.9 s). A `RemoteLU` is a factorisation held by one worker
process of a pool: the LU (sparse_lu.OrderedLU) runs there, and so does every `solve`, the
caller's thread waiting on a pipe with the GIL released. It answers what `triangular.py` reads
of a SuperLU (shape, perm_r, perm_c, L, U), fetched from its worker when asked. A worker also
makes a large pattern's nested-dissection ordering (`order_in_worker`: METIS holds the GIL).

The workers are fresh interpreters (`python -m wavescat.bem.linalg.factor_processes`: a fork
would copy a CUDA context and MPI's state, and multiprocessing's spawn would run the main
script again), started on first use, one per sparse-solve thread at most, and kept for the
process's life; each runs with one BLAS thread (SuperLU's BLAS calls are small:
bench/README.md, "Sparse factorisations and BLAS threads") and flushes subnormal numbers to
zero (`flush_subnormals`). A worker whose pipe closes (its parent gone) exits.
"""
from __future__ import annotations

import atexit
import ctypes
import ctypes.util
import itertools
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from types import SimpleNamespace
from multiprocessing.connection import Connection

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from ...errors import WavescatError
from .sparse_lu import OrderedLU, metis_order


# x86-64 MXCSR bits: flush-to-zero (results) and denormals-are-zero (operands)
_FTZ_DAZ = 0x8040
_MXCSR_OFFSET = 28  # in glibc's x86-64 fenv_t (x87 environment, then MXCSR)
# where `flush_subnormals` can: the MXCSR layout above is x86-64 glibc's
FLUSHES_SUBNORMALS = platform.machine() == "x86_64" and sys.platform == "linux"


def flush_subnormals() -> bool:
    """Flush subnormal numbers to zero in this thread's SSE arithmetic (x86-64, glibc;
    elsewhere nothing, False). The resolvents' factors decay across the mesh like the mass
    matrix's inverse, and at a million unknowns some updates fall below 2.2e-308, where an
    Intel core takes a microcode assist per operation: the smallest Padé shift's factorisation
    of the 4 kHz submarine took 78.5 s against 20.6 s flushed, on an H200 host
    (docs/performance.md); values that small change no digit of a solve. Only the workers flush:
    it changes this thread's arithmetic for good."""
    if not FLUSHES_SUBNORMALS:
        return False
    name = ctypes.util.find_library("m")
    if name is None:
        return False
    libm = ctypes.CDLL(name)
    env = ctypes.create_string_buffer(64)  # fenv_t is 32 bytes here
    if libm.fegetenv(env) != 0:
        return False
    at = ctypes.addressof(env) + _MXCSR_OFFSET
    mxcsr = ctypes.c_uint32.from_address(at)
    mxcsr.value |= _FTZ_DAZ
    return libm.fesetenv(env) == 0


def _serve(requests, answers) -> None:
    """A worker's loop: (operation, key, argument) in, (ok, result) out, until EOF."""
    threadpool_limits(limits=1, user_api="blas")
    flush_subnormals()
    factors = {}
    while True:
        try:
            op, key, arg = requests.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if op == "drop":  # no answer
            factors.pop(key, None)
            continue
        try:
            if op == "factorise":  # arg: (matrix, ordering)
                factors[key] = OrderedLU(*arg)
                out = None
            elif op == "order":  # arg: a pattern
                out = metis_order(arg)
            elif op == "solve":  # a wide block a pair of columns at a time (osrc.SparseLU.COLUMNS)
                lu = factors[key]
                out = lu.solve(arg) if arg.ndim == 1 or arg.shape[1] <= 2 else np.concatenate(
                    [lu.solve(np.ascontiguousarray(arg[:, s:s + 2])) for s in range(0, arg.shape[1], 2)],
                    axis=1)
            else:  # "get": an attribute of the SuperLU object; L and U through files
                name, folder = arg
                out = getattr(factors[key], name)
                if folder is not None:
                    out = _to_files(out.tocsc(), folder)
            answers.send((True, out))
        except Exception as exc:  # noqa: BLE001 - sent back, raised by the caller
            answers.send((False, f"{type(exc).__name__}: {exc}"))


# a factor of the 2 kHz submarine has 20 million entries in each of L and U: through the pipe
# a pickle of them took 2.6 s per factor, through files in memory (/dev/shm) a copy or two
_PARTS = ("data", "indices", "indptr")


def _to_files(matrix, folder):
    """A CSC matrix's arrays saved in `folder`: (shape, paths) for `_from_files`."""
    paths = [os.path.join(folder, f"{part}.npy") for part in _PARTS]
    for path, part in zip(paths, _PARTS):
        np.save(path, getattr(matrix, part))
    return matrix.shape, paths


def _from_files(shape, paths):
    """The CSC matrix `_to_files` saved, read into memory, its files removed."""
    try:
        data, indices, indptr = (np.load(path) for path in paths)
    finally:
        for path in paths:
            os.unlink(path)
    return sp.csc_matrix((data, indices, indptr), shape=shape)


class Worker:
    """One process holding factorisations; `call` is one round trip, one caller at a time."""

    def __init__(self):
        to_child, to_parent = os.pipe(), os.pipe()  # (read, write) each
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(to_child[0]), str(to_parent[1])],
            pass_fds=(to_child[0], to_parent[1]), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        os.close(to_child[0])
        os.close(to_parent[1])
        self.requests = Connection(to_child[1], readable=False)
        self.answers = Connection(to_parent[0], writable=False)
        self.lock = threading.Lock()
        self.live = 0  # factorisations held (the pool's choice)
        self.dropped = []  # keys of factors no longer referenced, sent with the next call

    def call(self, op, key, arg=None):
        with self.lock:
            try:
                if self.process.poll() is not None:  # not a write into a closed pipe
                    raise EOFError("no process")
                while self.dropped:
                    self.requests.send(("drop", self.dropped.pop(), None))
                self.requests.send((op, key, arg))
                ok, out = self.answers.recv()
            except (EOFError, OSError) as exc:
                raise WavescatError(f"the sparse LU worker process (pid {self.process.pid}) "
                                    f"stopped (exit code {self.process.poll()}): {exc}") from None
        if not ok:
            raise WavescatError(f"sparse LU in a worker process: {out}")
        return out

    def release(self, key) -> None:
        with _POOL_LOCK:
            self.live -= 1
        self.dropped.append(key)


_POOL: list[Worker] = []
_POOL_LOCK = threading.Lock()
_KEYS = itertools.count()


@atexit.register
def _close_pool() -> None:
    """At exit: every worker's pipe closed (it exits on EOF), and waited for briefly."""
    for w in _POOL:
        w.requests.close()
    for w in _POOL:
        try:
            w.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            w.process.kill()


def _take(size: int) -> Worker:
    """A worker for one more factorisation: an idle one, else a new one while the pool has
    fewer than `size`, else the least loaded."""
    with _POOL_LOCK:
        _POOL[:] = [w for w in _POOL if w.process.poll() is None]  # a dead one holds nothing usable
        least = min(_POOL, key=lambda w: w.live, default=None)
        if least is None or (least.live > 0 and len(_POOL) < size):
            least = Worker()
            _POOL.append(least)
        least.live += 1
        return least


def order_in_worker(pattern, workers: int) -> np.ndarray:
    """sparse_lu.metis_order(pattern), made by a worker of the pool of at most `workers`."""
    worker = _take(max(1, int(workers)))
    try:
        return worker.call("order", None, pattern)
    finally:
        with _POOL_LOCK:
            worker.live -= 1


class RemoteLU:
    """OrderedLU(matrix, order) held by a worker process of a pool of at most `workers`;
    `solve(b)` as SuperLU's, and the attributes triangular.py reads."""

    def __init__(self, matrix, order, workers: int):
        self.shape = matrix.shape
        self._key = next(_KEYS)
        self._worker = _take(max(1, int(workers)))
        try:
            self._worker.call("factorise", self._key, (matrix, order))
        finally:
            weakref.finalize(self, self._worker.release, self._key)

    def solve(self, b):
        return self._worker.call("solve", self._key, np.ascontiguousarray(b))

    def local(self) -> SimpleNamespace:
        """What triangular.py reads of the factors, fetched here (the device copies' source)."""
        return SimpleNamespace(shape=self.shape, perm_r=self.perm_r, perm_c=self.perm_c,
                               L=self.L, U=self.U)

    def __getattr__(self, name):
        if name in ("perm_r", "perm_c", "nnz"):
            return self._worker.call("get", self._key, (name, None))
        if name in ("L", "U"):  # hundreds of MB: through files in memory where /dev/shm has room
            need = 24 * int(self.nnz)  # complex values and int32 indices of L and U at most
            shm = "/dev/shm" if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > need \
                else None  # (a container's is often 64 MB): the temporary folder
            with tempfile.TemporaryDirectory(prefix="wavescat-lu-", dir=shm) as folder:
                return _from_files(*self._worker.call("get", self._key, (name, folder)))
        raise AttributeError(name)


if __name__ == "__main__":  # a worker: python -m wavescat.bem.linalg.factor_processes R W
    _serve(Connection(int(sys.argv[1]), writable=False), Connection(int(sys.argv[2]), readable=False))
