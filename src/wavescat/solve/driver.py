"""One case at one frequency: assemble the operators of the case's formulation
(bem/formulations/) and its system (`assemble_system`, which the benchmarks build theirs
with too) -> GMRES for every incidence direction -> far field at the receivers.
Holds numerics only; files are in solve/records.py.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import kernel_cache
from ..backend import get_backend
from ..bem.assembly import operators
from ..bem.assembly.directional import assemble_directional
from ..bem.assembly.hmatrix import assemble_hmatrix, host_blocks
from ..bem.assembly.hmatrix.distributed import assemble_distributed
from ..bem.formulations import formulation_for_case, sub_space
from ..bem.linalg.gmres import gmres, krylov_batches, least_basis_bytes
from ..defaults import SOLVER
from ..errors import InputError, SolverError
from ..memory import available_bytes
from ..problem import farfield
from . import parallel

log = logging.getLogger(__name__)

MIN_ELEMENTS_PER_WAVELENGTH = 5.0


def boundary_operator(name, space, k, *, operator_format, backend, precision, quadrature=None,
                      hmatrix_options=None, ranks=parallel.ONE):
    """The seam between formats: an object with `shape`, `dtype` and `op @ X` for (n, r)
    arrays of the backend, for boundary operator `name` on `space` (trial = test);
    `hmatrix_options`: the keywords of assemble_hmatrix (HmatrixSettings.options). On
    several `ranks` this rank's share of an H-matrix (or directional one) whose products sum
    over the ranks."""
    if operator_format == "dense":
        return operators.assemble(name, space, space, k, backend=backend, precision=precision,
                                  quadrature=quadrature)
    if operator_format == "hmatrix":
        if ranks.size > 1:
            return assemble_distributed(name, space, k, ranks, backend=backend,
                                        precision=precision, quadrature=quadrature,
                                        **(hmatrix_options or {}))
        return assemble_hmatrix(name, space, space, k, backend=backend, precision=precision,
                                quadrature=quadrature, **(hmatrix_options or {}))
    if operator_format == "directional":
        return assemble_directional(name, space, space, k, backend=backend, precision=precision,
                                    quadrature=quadrature, ranks=ranks, **(hmatrix_options or {}))
    raise InputError(f"operator format = {operator_format!r}: must be dense, hmatrix or "
                     "directional")


def assemble_operators(formulation, space, k, operator_format, each=None, **options) -> dict:
    """{key: operator} of `formulation.operator_specs`: (name, wavenumber) on `space`, or
    (name, wavenumber, surfaces) on the P1 space of those surfaces of a union mesh (nested
    bodies), each part's space made once. `each(key, operator, seconds)`, where given, is
    called as each operator is done (the benchmarks' per-operator lines)."""
    parts = {}
    out = {}
    for key, (name, kk, *surfaces) in formulation.operator_specs(k, operator_format).items():
        on = space
        if surfaces:
            if surfaces[0] not in parts:
                parts[surfaces[0]] = sub_space(space, surfaces[0])[0]
            on = parts[surfaces[0]]
        t0 = time.perf_counter()
        out[key] = boundary_operator(name, on, kk, operator_format=operator_format, **options)
        if each is not None:
            options["backend"].synchronize()
            each(key, out[key], time.perf_counter() - t0)
    return out


@dataclass
class Assembled:
    """A case's preconditioned system at one wavenumber (`assemble_system`)."""

    formulation: object  # bem.formulations class instance
    space: object  # the unknown's function space
    operator_format: str  # dense, hmatrix or directional (`auto` resolved)
    operators: dict  # {key: operator} of formulation.operator_specs
    system: object  # matvec, rhs, solution (bem/formulations/: burton_miller, transmission, nested)
    backend: object  # backend.Backend
    timings: dict  # seconds: assembly, preconditioner
    format_reason: str = ""  # why this format (SolverSettings.format_choice)


def assemble_system(case, mesh, k: float, each=None, hmatrix_options=None,
                    ranks=parallel.ONE, choose_format=None) -> Assembled:
    """The operators of the case's formulation on `mesh` at wavenumber k, in the case's
    format, backend, precision and quadrature, and its preconditioned system: what
    solve_frequency solves, and what the benchmarks time their sweeps on. `each`: see
    assemble_operators; `hmatrix_options`: keywords of assemble_hmatrix over the case's
    (a benchmark's working memory); `ranks`: the solve's processes (solve/parallel.py),
    each of which calls this and keeps its share of the H-matrices; `choose_format(case,
    n_dofs, k, area, gpu, ranks)` -> (format, why), `area` the mesh's: how
    `operator_format: auto` is resolved (`wavescat solve` passes
    planning.resources.solve_format: against the machine's memory); by default by size
    alone (SolverSettings.format_choice)."""
    settings = case.solver
    be = get_backend(settings.backend)
    formulation = formulation_for_case(case)
    space = formulation.space(mesh)
    if choose_format is None:
        fmt, why = settings.format_choice(space.n_dofs, ranks.size)
    else:
        fmt, why = choose_format(case, space.n_dofs, k, mesh.total_area, be.is_gpu, ranks.size)
    log.info("%d DOFs, %d elements, k = %.6g, %s on %s (%s); %s", space.n_dofs,
             mesh.n_triangles, k, fmt, be.name, be.device_name, why)
    options = {**settings.hmatrix.options(),
               **(settings.directional.options() if fmt == "directional" else {}),
               **(hmatrix_options or {})}
    if fmt == "hmatrix" and be.device_count > 1 and "devices" not in options:
        # a process assembles on one GPU: spreading one process's blocks over several GPUs
        # made the assembly slower (issue 28, bench/README.md), the ranks scale
        options["devices"] = 1
        if ranks.size == 1:
            log.warning("%d GPUs visible: this solve runs on one; solver.ranks: %d runs one "
                        "rank per GPU (README, \"One solve over several GPUs or nodes\")",
                        be.device_count, be.device_count)
    timings = {}
    if be.is_gpu:  # a fresh machine's kernels on every core, before anything needs them
        kernel_cache.warm_up(processes=max(1, kernel_cache.workers() // ranks.size))
    group = None if ranks.size == 1 else ranks
    start = getattr(formulation, "start_preconditioner", None)
    # the preconditioner's factorisations on the host's cores while the GPU assembles
    ahead = start(space, k, settings, group) if start is not None and be.is_gpu else None
    t0 = time.perf_counter()
    ops = assemble_operators(formulation, space, k, fmt, each=each, backend=be,
                             precision=settings.precision, quadrature=settings.quadrature,
                             hmatrix_options=options, ranks=ranks)
    be.synchronize()
    timings["assembly"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    # on several ranks the fluid preconditioner's choice from the least free memory of any
    # rank, so that every rank takes the same path; the ranks share the OSRC Padé terms
    free = None if ranks.size == 1 else ranks.min(available_bytes(be))
    system = formulation.system(space, k, ops, settings, xp=be.xp, free_bytes=free, group=group,
                                **({} if ahead is None else {"ahead": ahead}))
    # (started beside the assembly: only what was left of it once the assembly was done)
    timings["preconditioner"] = time.perf_counter() - t0
    return Assembled(formulation, space, fmt, ops, system, be, timings, why)


def elements_per_wavelength(mesh, k: float) -> float:
    """Wavelength over the mean edge length."""
    return float(2 * math.pi / k / mesh.edge_lengths.mean())


@dataclass
class FrequencyResult:
    frequency_hz: float
    wavenumber: float
    sound_speed: float
    incidence: farfield.Incidence
    receivers: farfield.Directions
    surface_pressure: np.ndarray  # (n_unknowns, n_incidence) complex: the formulation's unknown
    far_field: np.ndarray  # (n_receivers, n_incidence) complex, metres
    monostatic_far_field: np.ndarray | None  # (n_incidence,) at -d, for aspect sweeps
    iterations: np.ndarray
    residuals: np.ndarray
    timings: dict
    settings: object  # the case's SolverSettings
    operator_format: str
    backend: dict
    formulation: object  # bem.formulations class instance: what the records say about it
    dofs: int
    elements: int
    elements_per_wavelength: float
    mesh_fingerprint: str
    warnings: list = field(default_factory=list)
    residual_history: list = field(default_factory=list)
    parallel: dict = field(default_factory=dict)  # ranks, reductions, per-rank times and memory
    operator_format_reason: str = ""  # why operator_format (SolverSettings.format_choice)


def solve_frequency(case, mesh, frequency_hz: float, ranks: parallel.Ranks = parallel.ONE,
                    choose_format=None) -> FrequencyResult:
    """Solve `case` (case.Case) on `mesh` at `frequency_hz`, on `ranks` (default: this one
    process): those that parallel.start gave the process for `solver.ranks`, started where
    the process begins (commands/solve.py), before anything touches CuPy. Every rank calls
    it, and rank 0's result holds the far field. `choose_format`: see assemble_system."""
    if not frequency_hz > 0 or not math.isfinite(frequency_hz):
        raise InputError(f"frequency = {frequency_hz!r}: must be a positive finite number (Hz)")
    c, k = case.medium.sound_speed, case.medium.wavenumber(frequency_hz)
    settings = case.solver
    incidence, receivers = case.incidence, case.receivers

    warnings = []
    epw = elements_per_wavelength(mesh, k)
    if epw < MIN_ELEMENTS_PER_WAVELENGTH:
        msg = (f"mesh coarser than {MIN_ELEMENTS_PER_WAVELENGTH:g} elements per wavelength at "
               f"{frequency_hz:g} Hz: {epw:.2f} (mean edge {mesh.edge_lengths.mean():.4g} m, "
               f"wavelength {2 * math.pi / k:.4g} m); results may be inaccurate")
        log.warning(msg)
        warnings.append(msg)

    log.info("%.2f elements per wavelength", epw)
    assembled = assemble_system(case, mesh, k, ranks=ranks, choose_format=choose_format)
    formulation, space, system, be = (assembled.formulation, assembled.space,
                                      assembled.system, assembled.backend)
    fmt, timings = assembled.operator_format, dict(assembled.timings)
    # the directional settings the accuracy checks verify: the schema's defaults
    verified = type(settings.directional)(**SOLVER["directional"]).options()
    if fmt == "directional" and settings.directional.options() != verified:
        msg = (f"solver.directional = {settings.directional.options()} differs from the "
               f"defaults {verified}, the settings whose target strength the "
               "tests and the submarine check against hmatrix; compare with operator_format: "
               "hmatrix on a smaller case before trusting these results")
        log.warning(msg)
        warnings.append(msg)
    t0 = time.perf_counter()
    rhs = formulation.rhs(system, space, k, incidence.directions)
    timings["preconditioner"] += time.perf_counter() - t0  # the data are its work too

    solved = solve_system(assembled, rhs, settings.gmres, frequency_hz, ranks)
    timings["solve"] = solved.seconds
    log.info("GMRES iterations %s, residuals <= %.2e", solved.iterations.tolist(),
             solved.residuals.max())

    t0 = time.perf_counter()
    far = mono = None
    if ranks.is_root:  # every rank holds the same solution: one computes its far field
        far, mono = far_fields(assembled, k, incidence, receivers, solved.pressure)
    timings["far_field"] = time.perf_counter() - t0

    return FrequencyResult(
        frequency_hz=float(frequency_hz), wavenumber=k, sound_speed=c, incidence=incidence,
        receivers=receivers, surface_pressure=solved.pressure, far_field=far,
        monostatic_far_field=mono, iterations=solved.iterations, residuals=solved.residuals,
        timings=timings,
        settings=settings, operator_format=fmt,
        operator_format_reason=assembled.format_reason, backend=be.describe(),
        formulation=formulation, dofs=space.n_dofs,
        elements=mesh.n_triangles, elements_per_wavelength=epw,
        mesh_fingerprint=mesh.fingerprint(), warnings=warnings,
        residual_history=solved.history,
        parallel=ranks.record(timings, assembled.operators, be, {
            **solved.products, "operator_seconds": getattr(system, "operator_seconds", None)}))


@dataclass
class Solved:
    """GMRES's answer for every incidence direction: the formulation's unknowns (n, n_inc)
    on the host, iterations and residuals per direction, the residual history, the system
    products' count and seconds, and GMRES's seconds."""

    pressure: np.ndarray
    iterations: np.ndarray
    residuals: np.ndarray
    history: list
    products: dict
    seconds: float


def solve_system(assembled: Assembled, rhs, gm, frequency_hz: float,
                 ranks=parallel.ONE) -> Solved:
    """GMRES (settings `gm`: the case's solver.gmres) on the assembled system for the
    right-hand sides `rhs` (n, n_inc), in batches of directions whose Krylov bases fit in
    the least free memory of the ranks; every rank calls it."""
    formulation, space, system, be = (assembled.formulation, assembled.space,
                                      assembled.system, assembled.backend)
    t0 = time.perf_counter()
    n_inc = rhs.shape[1]
    n_unknowns = formulation.n_unknowns(space)
    # the least basis of one right-hand side (what krylov_batches grants at least), beside
    # the operators' blocks: a card they fill moves some to the host first
    host_blocks.make_room_here(be, least_basis_bytes(n_unknowns, min(gm.restart, gm.maxiter),
                                                     np.dtype(rhs.dtype).itemsize))
    batch, basis_bytes = krylov_batches(n_unknowns, n_inc, min(gm.restart, gm.maxiter),
                                        ranks.min(available_bytes(be)),
                                        np.dtype(rhs.dtype).itemsize)
    log.info("GMRES: %d incidence direction(s) in batches of %d (Krylov basis grown as "
             "needed, at most %.3g GiB)", n_inc, batch, basis_bytes / 2**30)
    pressure = np.zeros((n_unknowns, n_inc), dtype=complex)
    iterations = np.zeros(n_inc, dtype=np.int64)
    residuals = np.zeros(n_inc)
    history = []
    products = {"count": 0, "seconds": 0.0}

    def matvec(x):  # timed: GMRES's time beside its products' (the record, bench_ranks.py)
        t = time.perf_counter()
        y = system.matvec(x)
        products["count"] += 1
        products["seconds"] += time.perf_counter() - t
        return y

    for start in range(0, n_inc, batch):
        cols = slice(start, min(start + batch, n_inc))
        try:
            res = gmres(matvec, rhs[:, cols], xp=be.xp, tol=gm.tol,
                        restart=gm.restart, maxiter=gm.maxiter, basis_bytes=basis_bytes)
        except SolverError as exc:
            raise SolverError(f"{exc} at {frequency_hz:g} Hz (incidence directions "
                              f"{start}..{cols.stop - 1})") from exc
        # a right-preconditioned system turns GMRES's unknowns into the formulation's
        pressure[:, cols] = be.asnumpy(system.solution(res.x))
        iterations[cols], residuals[cols] = res.iterations, res.residuals
        history.extend(res.history)
    return Solved(pressure, iterations, residuals, history, products,
                  time.perf_counter() - t0)


def far_fields(assembled: Assembled, k: float, incidence, receivers, pressure):
    """(F at the receivers (n_receivers, n_inc), the monostatic F of each incidence direction
    or None where the incidence is not monostatic) of the solutions `pressure` (host)."""
    formulation, space, be = assembled.formulation, assembled.space, assembled.backend
    ff = be.asnumpy(formulation.far_field(space, receivers.vectors, k, backend=be))
    far, mono = ff @ pressure, None
    if incidence.monostatic:
        fm = be.asnumpy(formulation.far_field(space, -incidence.directions, k, backend=be))
        mono = np.einsum("ij,ji->i", fm, pressure)
    return far, mono
