"""One solve over several MPI ranks (mpi4py): one rank per GPU, or per group of CPU cores.

A case with `solver.ranks: N` is started by the workflow as N processes (`mpiexec -n N` on
a workstation, `srun` on a SLURM cluster; workflow/rules/bem.smk), and `start` joins them
once, where the process begins (commands/solve.py, a benchmark's main), before anything
touches CuPy; the solve takes the Ranks it returns. Every rank runs the same solve
(solve/driver.py) with the same inputs, except for the operators: each rank assembles and
keeps only its share of every H-matrix's blocks (bem/assembly/hmatrix/distributed.py), and
a product with an operator is the sum over the ranks of their partial products (`Ranks.sum`,
an allreduce). The OSRC preconditioner's Padé terms are shared out too (each rank factorises
and solves its own, bem/formulations/osrc.py; an allreduce sums them). Everything else is
replicated, identical on every rank, because it is cheap beside the operators: GMRES and its
Krylov basis (each rank's GMRES sees the same reduced products, so every rank takes the same
steps and no vector is sent besides the products). The far field is computed and the result
written by rank 0 alone.

Decisions taken from the memory a rank finds free (Krylov batch widths, the fluid
preconditioner's `auto`) use the least over the ranks (`Ranks.min`), so that all ranks take
the same path through the collectives.

Reductions: host arrays go through MPI's allreduce in place. Device (CuPy) arrays go through
NCCL where CuPy has it (one communicator per solve, made at the first device reduction),
else through MPI with a host copy each way; WAVESCAT_REDUCTION=mpi or nccl forces one, for
measurements (bench/parallel_ranks.py). `Ranks.reductions` counts calls, bytes and seconds.
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
import traceback

import numba
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits

from ..bem.assembly.hmatrix.report import host_peak_bytes
from ..errors import ConfigError, WavescatError

log = logging.getLogger(__name__)

REDUCTIONS = ("auto", "mpi", "nccl")


class Ranks:
    """The processes of one solve (one process without `comm`) and the collectives the
    solve needs."""

    def __init__(self, comm=None, local=None):
        self.comm = comm
        self.rank = comm.Get_rank() if comm is not None else 0
        self.size = comm.Get_size() if comm is not None else 1
        self.local = local  # the ranks of this node
        self.local_rank = local.Get_rank() if local is not None else 0
        self.reductions = {"calls": 0, "bytes": 0, "seconds": 0.0, "method": "none"}
        self._nccl = None

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    # -- collectives ----------------------------------------------------------------------
    def sum(self, y):
        """The sum over the ranks of y (a NumPy or CuPy array of one shape on every rank),
        on every rank; y itself where there is one rank."""
        if self.size == 1:
            return y
        t0 = time.perf_counter()
        if isinstance(y, np.ndarray):
            y = np.ascontiguousarray(y)
            self.comm.Allreduce(self._mpi.IN_PLACE, y, op=self._mpi.SUM)
            method = "mpi"
        else:
            y, method = self._device_sum(y)
        self.reductions["calls"] += 1
        self.reductions["bytes"] += int(y.nbytes)
        self.reductions["seconds"] += time.perf_counter() - t0
        self.reductions["method"] = method
        return y

    def _device_sum(self, y):
        """(sum, method) of a CuPy array: NCCL on the device, or MPI through the host."""
        import cupy  # noqa: PLC0415 - a device array exists, so CuPy does

        y = cupy.ascontiguousarray(y)
        method = reduction_method()
        if method != "mpi" and self._nccl_communicator(required=method == "nccl"):
            from cupy.cuda import nccl  # noqa: PLC0415

            flat = y.view(y.real.dtype) if y.dtype.kind == "c" else y  # (re, im) as reals
            kind = {np.dtype(np.float64): nccl.NCCL_FLOAT64,
                    np.dtype(np.float32): nccl.NCCL_FLOAT32}[flat.dtype]
            self._nccl.allReduce(flat.data.ptr, flat.data.ptr, flat.size, kind, nccl.NCCL_SUM,
                                 cupy.cuda.get_current_stream().ptr)
            cupy.cuda.get_current_stream().synchronize()
            return y, "nccl"
        host = cupy.asnumpy(y)
        self.comm.Allreduce(self._mpi.IN_PLACE, host, op=self._mpi.SUM)
        return cupy.asarray(host), "mpi (host copies)"

    def _nccl_communicator(self, required: bool) -> bool:
        """Whether NCCL reduces device arrays: its communicator, made once by every rank
        together (the first device reduction is collective)."""
        if self._nccl is None:
            try:
                from cupy.cuda import nccl  # noqa: PLC0415
                usable = bool(nccl.available)
            except Exception:  # noqa: BLE001 - CuPy built without NCCL
                usable = False
            usable = bool(self.comm.allreduce(usable, op=self._mpi.LAND))
            why = "CuPy has no NCCL on some rank (pip install nvidia-nccl-cu12)"
            if usable:
                uid = self.comm.bcast(nccl.get_unique_id() if self.is_root else None, root=0)
                try:  # fails (on every rank) where two ranks share a GPU
                    self._nccl = nccl.NcclCommunicator(self.size, uid, self.rank)
                except Exception as exc:  # noqa: BLE001 - NCCL's own error, said below
                    usable, why = False, f"NCCL refused: {exc}"
                usable = bool(self.comm.allreduce(usable, op=self._mpi.LAND))
            if not usable:
                if required:
                    raise ConfigError(f"WAVESCAT_REDUCTION = 'nccl' but {why}")
                log.info("device reductions through MPI and the host: %s", why)
                self._nccl = False
        return self._nccl is not False

    def min(self, value):
        """The least of a number over the ranks (the same decision on every rank)."""
        return value if self.size == 1 else self.comm.allreduce(value, op=self._mpi.MIN)

    def allgather(self, value) -> list:
        """[value of rank 0, value of rank 1, ...] on every rank (small Python objects)."""
        return [value] if self.size == 1 else self.comm.allgather(value)

    @property
    def _mpi(self):
        from mpi4py import MPI  # noqa: PLC0415 - only reached with several ranks

        return MPI

    # -- errors ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def stop_all_on_error(self, command: str):
        """An error on one rank stops every rank (the others would wait in a collective for
        ever): its message on stderr, then MPI_Abort. One process: errors pass through."""
        try:
            yield
        except BaseException as exc:
            if self.size == 1 or isinstance(exc, SystemExit):
                raise
            print(f"wavescat {command} (rank {self.rank} of {self.size}): error: "
                  f"{type(exc).__name__}: {exc}", file=sys.stderr)
            if not isinstance(exc, WavescatError):  # a user's error needs no traceback
                traceback.print_exc(file=sys.stderr)
            sys.stderr.flush()
            self.comm.Abort(2)

    # -- what the records say -------------------------------------------------------------
    def record(self, timings: dict, operators: dict, backend, products=None) -> dict:
        """{ranks, reductions, per_rank: [{stage times, operator bytes, host peak bytes,
        device pool bytes, GMRES's products, each H-matrix's assembly times}]} gathered from every rank (collective);
        `products`: {count, seconds, operator_seconds (of them in the boundary operators'
        products, None where the system does not say)}."""
        mine = {"rank": self.rank, "timings_s": dict(timings), "threads": numba.get_num_threads(),
                "cpus": len(os.sched_getaffinity(0)),
                "blas_threads": max((i["num_threads"] for i in threadpool_info()
                                     if i["user_api"] == "blas"), default=0),
                "operator_bytes": int(sum(operator_bytes(op) for op in operators.values())),
                "operator_host_bytes": int(sum(operator_bytes(op, on_host=True)
                                               for op in operators.values())),
                "host_peak_bytes": host_peak_bytes(), "products": dict(products or {}),
                "operators": {name: {"time_s": dict(rep["time_s"]),
                                     "aca_levels": rep["blocks"].get("aca_levels", [])}
                              for name, op in operators.items()
                              if (rep := getattr(getattr(op, "local", op), "report", None))}}
        if backend.is_gpu:
            mine["device_pool_bytes"] = int(backend.xp.get_default_memory_pool().total_bytes())
        return {"ranks": self.size, "reductions": dict(self.reductions),
                "per_rank": self.allgather(mine)}


def reduction_method() -> str:
    """WAVESCAT_REDUCTION: how device arrays are summed (auto: NCCL where CuPy has it)."""
    method = os.environ.get("WAVESCAT_REDUCTION", "auto")
    if method not in REDUCTIONS:
        raise ConfigError(f"WAVESCAT_REDUCTION = {method!r}: must be one of "
                          f"{', '.join(REDUCTIONS)}")
    return method


def operator_bytes(op, on_host=False) -> int:
    """Bytes this rank stores of an operator: its H-matrix blocks, or the dense array;
    `on_host`: of its GPU blocks, those moved to host memory (host_blocks.py)."""
    local = getattr(op, "local", op)
    if on_host:
        return sum(getattr(p, "host_nbytes", 0) for p in getattr(local, "parts", ()))
    report = getattr(local, "report", None)
    return int(report["storage_bytes"]) if report else int(getattr(op, "nbytes", 0))


ONE = Ranks()


def start(requested: int) -> Ranks:
    """The ranks of a solve whose case asks for `requested` (solver.ranks, a checked Case's:
    the schema makes it an integer >= 1, the case's checks refuse several ranks with a dense
    or directional operator): one process for 1, else MPI's world, with one GPU bound to each
    rank of a node and the node's cores shared among its ranks. Call before anything touches
    CuPy (the binding sets CUDA_VISIBLE_DEVICES)."""
    if requested == 1:
        return ONE
    try:
        from mpi4py import MPI  # noqa: PLC0415
    except ImportError as exc:
        raise ConfigError(f"solver.ranks = {requested}: needs mpi4py and an MPI library "
                          f"(pip install -e '.[mpi]'): {exc}") from None
    comm = MPI.COMM_WORLD
    if comm.Get_size() == 1:
        log.warning("solver.ranks = %d but this solve runs as one process (not started by "
                    "mpiexec or srun with %d tasks): solving on one rank", requested, requested)
        return ONE
    if comm.Get_size() != requested:
        log.warning("solver.ranks = %d but %d ranks were started: solving on %d",
                    requested, comm.Get_size(), comm.Get_size())
    reduction_method()  # a bad WAVESCAT_REDUCTION stops every rank before any work
    ranks = Ranks(comm, comm.Split_type(MPI.COMM_TYPE_SHARED))
    bind_gpu(ranks.local_rank)
    share_cores(ranks)
    if not ranks.is_root:  # one log and one set of progress lines: rank 0's
        logging.getLogger().setLevel(logging.WARNING)
        os.environ["WAVESCAT_PROGRESS"] = "0"
    log.info("solving on %d MPI ranks (%s)", ranks.size, MPI.Get_library_version().splitlines()[0])
    return ranks


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES names them (or their indices
    from the driver's list), without initialising CUDA."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [v.strip() for v in visible.split(",") if v.strip()]
    try:
        return [str(i) for i in range(len(os.listdir("/proc/driver/nvidia/gpus")))]
    except OSError:
        return []


def bind_gpu(local_rank: int) -> str | None:
    """One GPU per rank of a node: the local_rank-th visible one (round robin), set in
    CUDA_VISIBLE_DEVICES before CuPy starts (srun's --gpus-per-task does it already)."""
    gpus = visible_gpus()
    if len(gpus) <= 1:
        return gpus[0] if gpus else None
    if "cupy" in sys.modules:
        log.warning("CuPy was imported before the ranks were bound to GPUs: every rank may "
                    "run on the first GPU")
    os.environ["CUDA_VISIBLE_DEVICES"] = gpus[local_rank % len(gpus)]
    return os.environ["CUDA_VISIBLE_DEVICES"]


def share_cores(ranks: Ranks) -> int:
    """Threads of this rank: its CPUs (affinity) over the ranks of the node whose CPUs
    overlap its own, and no more than OMP_NUM_THREADS (the job's threads), for Numba and
    for BLAS. mpiexec without binding gives every rank every core; srun gives each its
    cpus_per_task. BLAS is limited through threadpoolctl because it started its threads
    when NumPy was imported, one per core, and their idle threads spin, slowing the ranks
    beside them (bench/README.md, "Sparse factorisations and BLAS threads")."""
    cpus = os.sched_getaffinity(0)
    sharing = sum(1 for other in ranks.local.allgather(sorted(cpus)) if cpus & set(other))
    want = os.environ.get("OMP_NUM_THREADS", "")
    n = max(1, min(int(want) if want.isdigit() and int(want) > 0 else len(cpus),
                   len(cpus) // max(sharing, 1)))
    share = int(want) // ranks.local.size if want.isdigit() else 0
    if len(cpus) < share:  # bound by the launcher to fewer CPUs than the job gave this rank
        log.warning("rank %d is bound to %d CPU(s) of its share of %d threads: its sparse "
                    "factorisations and solves run on those only (Open MPI's mpiexec binds "
                    "each rank to a core: name cluster.mpi_launcher \"mpiexec --bind-to none\")",
                    ranks.rank, len(cpus), share)
    os.environ["OMP_NUM_THREADS"] = str(n)
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    threadpool_limits(limits=n)
    return n
