"""One case at one frequency: assemble the operators of the case's formulation
(bem/formulations.py) -> GMRES for every incidence direction -> far field at the receivers.
Holds numerics only; files are in solve/records.py.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field

import numpy as np

from .. import defaults, farfield
from ..backend import get_backend
from ..errors import ConfigError, SolverError
from . import parallel
from .gmres import gmres

log = logging.getLogger(__name__)

MIN_ELEMENTS_PER_WAVELENGTH = 5.0
# Batches of incidence directions: the Krylov bases take at most this share of the memory
# available when the solve starts (the rest is the operator products' working space)...
KRYLOV_MEMORY_SHARE = 0.5
# ...and a batch is as wide as fits a basis of this many vectors per direction (OSRC
# Burton-Miller converges in 15-20 iterations; more vectors are used where they fit, up to
# the restart length), plus about this many vectors of working space per direction.
KRYLOV_MIN_VECTORS = 32
WORK_VECTORS = 12


def solver_settings(solver: dict | None) -> dict:
    """The solver block of a case with every default filled in (what the records store):
    the schema's defaults, so a partial block solves as the workflow would solve it."""
    out = defaults.case_defaults()["solver"]
    for key, value in (solver or {}).items():
        out[key] = {**out[key], **(value or {})} if isinstance(out.get(key), dict) else value
    if out["operator_format"] not in ("auto", "dense", "hmatrix"):
        raise ConfigError(f"solver.operator_format = {out['operator_format']!r}: "
                          "must be one of auto, dense, hmatrix")
    return out


def operator_format_for(requested: str, n_dofs: int, dense_below: int, ranks: int = 1) -> str:
    """The format `auto` resolves to: dense below `dense_below` DOFs, else H-matrices; on
    several ranks H-matrices (their blocks are what the ranks share)."""
    if ranks > 1 and requested == "dense":
        raise ConfigError(f"solver.operator_format = 'dense' with {ranks} ranks: a solve over "
                          "several ranks shares H-matrix blocks (use hmatrix or auto)")
    if requested != "auto":
        return requested
    return "hmatrix" if n_dofs >= dense_below or ranks > 1 else "dense"


def boundary_operator(name, space, k, *, operator_format, backend, precision, quadrature=None,
                      hmatrix_options=None, ranks=parallel.ONE):
    """The seam between formats: an object with `shape`, `dtype` and `op @ X` for (n, r)
    arrays of the backend, for boundary operator `name` on `space` (trial = test); on
    several `ranks` this rank's share of an H-matrix whose products sum over the ranks."""
    from ..bem import operators  # noqa: PLC0415
    from ..bem.hmatrix import assemble_hmatrix  # noqa: PLC0415

    if operator_format == "dense":
        return operators.assemble(name, space, space, k, backend=backend, precision=precision,
                                  quadrature=quadrature)
    if operator_format == "hmatrix":
        opts = {key: v for key, v in (hmatrix_options or {}).items() if key != "dense_below"}
        if ranks.size > 1:
            from ..bem.hmatrix.distributed import assemble_distributed  # noqa: PLC0415

            return assemble_distributed(name, space, k, ranks, backend=backend,
                                        precision=precision, quadrature=quadrature, **opts)
        return assemble_hmatrix(name, space, space, k, backend=backend, precision=precision,
                                quadrature=quadrature, **opts)
    raise ConfigError(f"solver.operator_format = {operator_format!r}: must be dense or hmatrix")


def assemble_operators(formulation, space, k, operator_format, **options) -> dict:
    """{key: operator} of `formulation.operator_specs`: (name, wavenumber) on `space`, or
    (name, wavenumber, surfaces) on the P1 space of those surfaces of a union mesh (nested
    bodies), each part's space made once."""
    from ..bem.formulations import sub_space  # noqa: PLC0415

    parts = {}
    out = {}
    for key, (name, kk, *surfaces) in formulation.operator_specs(k, operator_format).items():
        on = space
        if surfaces:
            if surfaces[0] not in parts:
                parts[surfaces[0]] = sub_space(space, surfaces[0])[0]
            on = parts[surfaces[0]]
        out[key] = boundary_operator(name, on, kk, operator_format=operator_format, **options)
    return out


def krylov_batches(n_dofs: int, n_rhs: int, gmres: dict, available_bytes: int,
                   itemsize: int = 16) -> tuple[int, int]:
    """(directions per batch, Krylov basis bytes of a batch) for `n_rhs` right-hand sides of
    `n_dofs` unknowns in `available_bytes` of memory: as few, equally wide batches as hold
    a basis of KRYLOV_MIN_VECTORS vectors (fewer if the restart length is shorter) and the
    working vectors of each direction in KRYLOV_MEMORY_SHARE of the memory. GMRES grows the
    basis as it iterates and restarts early rather than exceed the bytes returned."""
    vectors = min(gmres["restart"], gmres["maxiter"], KRYLOV_MIN_VECTORS) + 1
    budget = KRYLOV_MEMORY_SHARE * available_bytes
    per_rhs = itemsize * n_dofs * (vectors + WORK_VECTORS)
    width = int(min(n_rhs, max(1, budget // per_rhs)))
    width = -(-n_rhs // -(-n_rhs // width))  # the same width for every batch
    basis = int(max(budget - itemsize * n_dofs * WORK_VECTORS * width,
                    itemsize * n_dofs * 2 * width))  # at least two vectors: one step
    return width, basis


def available_memory(backend) -> int:
    """Bytes free for the solve's arrays where the Krylov basis lives (GPU or host)."""
    from ..resources import available_gpu_bytes, available_host_bytes  # noqa: PLC0415

    return available_gpu_bytes(backend.xp) if backend.is_gpu else available_host_bytes()


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
    settings: dict
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


def solve_frequency(case: dict, medium: dict, mesh, frequency_hz: float,
                    ranks: parallel.Ranks | None = None) -> FrequencyResult:
    """Solve case `case` (validated config dict) on `mesh` at `frequency_hz`, on `ranks`
    (default: those `solver.ranks` asks for, solve/parallel.py); every rank calls it, and
    rank 0's result holds the far field."""
    from ..bem.formulations import formulation_for_case  # noqa: PLC0415

    formulation = formulation_for_case(case, medium)
    if not frequency_hz > 0 or not math.isfinite(frequency_hz):
        raise ConfigError(f"frequency = {frequency_hz!r}: must be a positive finite number (Hz)")
    c = float(medium.get("sound_speed", defaults.MEDIUM["sound_speed"]))
    if not c > 0:
        raise ConfigError(f"medium.sound_speed = {c!r}: must be positive")
    k = 2 * math.pi * frequency_hz / c
    settings = solver_settings(case.get("solver"))
    ranks = ranks or parallel.start(settings["ranks"])  # before CuPy: binds a GPU per rank
    be = get_backend(settings["backend"])
    precision = settings["precision"]
    incidence = farfield.incident_directions(case.get("incident", defaults.INCIDENT))
    receivers = farfield.receiver_directions(case.get("receivers", defaults.RECEIVERS))
    from ..bem.quadrature import QuadratureOrders  # noqa: PLC0415
    quadrature = QuadratureOrders(**settings["quadrature"])

    warnings = []
    epw = elements_per_wavelength(mesh, k)
    if epw < MIN_ELEMENTS_PER_WAVELENGTH:
        msg = (f"mesh coarser than {MIN_ELEMENTS_PER_WAVELENGTH:g} elements per wavelength at "
               f"{frequency_hz:g} Hz: {epw:.2f} (mean edge {mesh.edge_lengths.mean():.4g} m, "
               f"wavelength {2 * math.pi / k:.4g} m); results may be inaccurate")
        log.warning(msg)
        warnings.append(msg)

    timings = {}
    space = formulation.space(mesh)
    fmt = operator_format_for(settings["operator_format"], space.n_dofs,
                              settings["hmatrix"]["dense_below"], ranks.size)
    log.info("%d DOFs, %d elements, k = %.6g, %.2f elements per wavelength, %s on %s (%s)",
             space.n_dofs, mesh.n_triangles, k, epw, fmt, be.name, be.device_name)

    t0 = time.perf_counter()
    ops = assemble_operators(formulation, space, k, fmt, backend=be, precision=precision,
                             quadrature=quadrature, hmatrix_options=settings["hmatrix"],
                             ranks=ranks)
    be.synchronize()
    timings["assembly"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    # on several ranks the fluid preconditioner's choice from the least free memory of any
    # rank, so that every rank takes the same path
    # and the ranks sharing the OSRC maps' Padé terms (bem/osrc.py)
    agreed = {} if ranks.size == 1 else {"free_bytes": ranks.min(available_memory(be)),
                                         "group": ranks}
    system = formulation.system(space, k, ops, {**settings, **agreed}, xp=be.xp)
    rhs = formulation.rhs(system, space, k, incidence.directions)
    timings["preconditioner"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    gm = settings["gmres"]
    n_inc = len(incidence.directions)
    n_unknowns = formulation.n_unknowns(space)
    batch, basis_bytes = krylov_batches(n_unknowns, n_inc, gm, ranks.min(available_memory(be)),
                                        np.dtype(rhs.dtype).itemsize)
    log.info("GMRES: %d incidence direction(s) in batches of %d (Krylov basis grown as "
             "needed, at most %.3g GiB)", n_inc, batch, basis_bytes / 2**30)
    pressure = np.zeros((n_unknowns, n_inc), dtype=complex)
    iterations = np.zeros(n_inc, dtype=np.int64)
    residuals = np.zeros(n_inc)
    history = []
    for start in range(0, n_inc, batch):
        cols = slice(start, min(start + batch, n_inc))
        try:
            res = gmres(system.matvec, rhs[:, cols], xp=be.xp, tol=gm["tol"],
                        restart=gm["restart"], maxiter=gm["maxiter"], basis_bytes=basis_bytes)
        except SolverError as exc:
            raise SolverError(f"{exc} at {frequency_hz:g} Hz (incidence directions "
                              f"{start}..{cols.stop - 1})") from exc
        # a right-preconditioned system turns GMRES's unknowns into the formulation's
        pressure[:, cols] = be.asnumpy(system.solution(res.x))
        iterations[cols], residuals[cols] = res.iterations, res.residuals
        history.extend(res.history)
    timings["solve"] = time.perf_counter() - t0
    log.info("GMRES iterations %s, residuals <= %.2e", iterations.tolist(), residuals.max())

    t0 = time.perf_counter()
    far = mono = None
    if ranks.is_root:  # every rank holds the same solution: one computes its far field
        ff = be.asnumpy(formulation.far_field(space, receivers.vectors, k, backend=be))
        far = ff @ pressure
        if incidence.monostatic:
            fm = be.asnumpy(formulation.far_field(space, -incidence.directions, k, backend=be))
            mono = np.einsum("ij,ji->i", fm, pressure)
    timings["far_field"] = time.perf_counter() - t0

    return FrequencyResult(
        frequency_hz=float(frequency_hz), wavenumber=k, sound_speed=c, incidence=incidence,
        receivers=receivers, surface_pressure=pressure, far_field=far,
        monostatic_far_field=mono, iterations=iterations, residuals=residuals, timings=timings,
        settings=settings, operator_format=fmt, backend=be.describe(),
        formulation=formulation, dofs=space.n_dofs,
        elements=mesh.n_triangles, elements_per_wavelength=epw,
        mesh_fingerprint=mesh.fingerprint(), warnings=warnings, residual_history=history,
        parallel=ranks.record(timings, ops, be))
