"""Resource estimates for the Snakemake rules (threads, memory, run time, GPUs), from the
case alone, before anything is meshed: the scheduler must place a job before it runs, and a
job that cannot fit the machine (config key `limits`) is refused before any job starts.

Memory estimates are calibrated against measured peaks (a little above them); the rules ask
for 1.5 times as much. The checks that refuse a case before any job starts are in
wavescat.planning.preflight; dense allocations are checked again where they happen
(wavescat.memory).
"""
from __future__ import annotations

import functools
import math
import shlex
import subprocess

import numpy as np

from ..backend import complex_dtype, gpu_memory_bytes
from ..bem.assembly.hmatrix.assembly import stored_dtype
from ..bem.formulations import formulation_for
from ..bem.formulations.muller_preconditioner import estimated_bytes
from ..bem.formulations.osrc import PROCESS_UNKNOWNS
from ..bem.linalg.gmres import least_basis_bytes
from ..configuration.config import ClusterSettings
from ..geometry.sizing import element_sizes
from ..memory import host_memory_bytes

# Mean triangle area of a mesh with edge length h is about sqrt(3)/4 h^2; vertices ~ triangles / 2.
_TRIANGLE_AREA_FACTOR = math.sqrt(3.0) / 4.0


def _vertices_estimate(geometry, h: float, error) -> int:
    """Vertices of a body's mesh at element size h and volume tolerance `error`, from its
    parameters (Geometry: area, volume and total curvature, or a stored mesh's count)."""
    stored = geometry.vertex_count()
    if stored:  # a stored mesh is used as it is
        return stored
    area = geometry.area()
    if area is None:
        return 20_000  # a file geometry not read: assume a mid-size problem
    # gmsh's edges come out a few percent shorter than the target h: 2-12% more vertices
    # than area / (sqrt(3)/4 h^2) / 2 on spheres of 2k-400k unknowns, hence the 1.1
    triangles = area / (_TRIANGLE_AREA_FACTOR * h ** 2)
    # Geometry sizing (wavescat.geometry.sizing): h^2 = 8 e (V / A) / H keeps the meshed volume
    # within e, so it needs A / (sqrt(3)/4 8 e V) x int H dA triangles, more than the
    # frequency's at low frequency (the submarine at 100 Hz: about 3x).
    curved = geometry.volume_and_curvature()
    if error and curved:
        volume, total_curvature = curved
        triangles = max(triangles, area * total_curvature
                        / (_TRIANGLE_AREA_FACTOR * 8.0 * error * volume))
    return max(12, int(1.1 * triangles / 2))


def surface_vertex_estimates(case) -> list[int]:
    """Vertices of each surface of the case (case.Case; surface-id order: the body, then the
    bodies inside it, depth-first), each at its own element size (sizing.element_sizes)."""
    error = case.mesh.max_volume_error
    return [_vertices_estimate(body.geometry, h, error)
            for body, h in zip(case.bodies, element_sizes(case))]


def p1_dofs_estimate(case) -> int:
    """P1 degrees of freedom (vertices) of the case's mesh, all its surfaces together."""
    return sum(surface_vertex_estimates(case))


def _nested_estimate(case) -> tuple[int, int, list[int]]:
    """(vertices, unknowns, vertices on the boundary of each region) of a case with bodies
    inside: two traces on each fluid interface, one on a rigid or pressure-release core;
    a region is the water outside or a fluid body's interior, bounded by the body and the
    bodies directly inside it (each region assembles its own operators among them)."""
    bodies = case.bodies
    vertices = surface_vertex_estimates(case)
    unknowns = sum((2 if b.is_fluid else 1) * n for b, n in zip(bodies, vertices))
    regions = [vertices[0]]
    for b in bodies:
        if b.is_fluid:
            regions.append(vertices[b.index] + sum(vertices[c.index] for c in bodies
                                                   if c.parent == b.index))
    return sum(vertices), unknowns, regions


def gpu_count(backend: str, cluster: ClusterSettings) -> int:
    """GPUs a job asks the scheduler for: one on the GPU backend, and on `auto` where the
    cluster's nodes have GPUs (config `cluster.gpus`); `auto` falls back to the CPU anyway."""
    return int(backend == "gpu" or (backend == "auto" and cluster.gpus))


@functools.cache
def mpiexec_command(mpiexec: str) -> str:
    """The default launcher (a shell word) of a solve's ranks on a workstation: `mpiexec`, and
    with Open MPI's `--bind-to none`. Open MPI binds each of two ranks to one core (to a socket
    for more), so each rank's sparse factorisations and solves ran on one thread (the OSRC
    set-up took 257 s a rank at the 4 kHz size on 2 ranks, against 55 s on the host's cores;
    docs/performance.md); solve.parallel.share_cores divides the cores among unbound ranks.
    MPICH's Hydra does not bind by default. The version is asked once, only where a case runs on
    several ranks."""
    try:
        version = subprocess.run([*shlex.split(mpiexec), "--version"], capture_output=True,
                                 text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return mpiexec  # not there or not answering: the job's own error will name it
    return f"{mpiexec} --bind-to none" if "Open MPI" in version or "OpenRTE" in version \
        else mpiexec


def partition(gpus: int, cluster: ClusterSettings) -> str | None:
    """SLURM partition of a job by whether it asks for a GPU (config `cluster.partitions`);
    None where the config names none, so the profile's `slurm_partition` applies."""
    partitions = cluster.partitions
    return partitions["gpu" if gpus else "cpu"] if partitions else None


def solve_resources(case, cores: int, cluster: ClusterSettings | None = None) -> dict:
    """threads, mem_mb, runtime (minutes) and gpu count of one (case, frequency) solve; on
    several ranks (solver.ranks) also the MPI `tasks`, one GPU per rank (`tasks_per_gpu`),
    and the memory of all of them (the threads are the whole solve's, shared by the ranks)."""
    ranks = case.solver.ranks
    gpu = gpu_count(case.solver.backend, cluster or ClusterSettings())
    est = case_estimates(case, bool(gpu))
    n = est["unknowns"]
    # CPU assembly ~1e6 entries/s per core and ~4 operators' worth of entries, plus GMRES
    entries = 4.0 * n * n if est["format"] == "dense" else 200.0 * n * math.log2(max(n, 2))
    minutes = 5 + entries / (1e6 * max(cores, 1)) / 60.0 * (0.05 if gpu else 1.0)
    several = ranks > 1
    return {"threads": cores, "mem_mb": int(1.5 * ranks * est["solve_host_bytes"] / 1e6),
            "runtime": int(math.ceil(minutes * 2)), "gpu": gpu * ranks, "dofs_estimate": n,
            "ranks": ranks, "tasks": ranks if several else None,
            "tasks_per_gpu": 1 if several and gpu else None}


def mesh_resources(case) -> dict:
    est = case_estimates(case, False)
    return {"threads": 1, "mem_mb": int(1.5 * est["mesh_bytes"] / 1e6),
            "runtime": 10 + est["unknowns"] // 20_000}


# -- what fits ------------------------------------------------------------------------------
# Peak resident memory measured with /usr/bin/time -v on this project's jobs (CPU, double):
#   mesh  (sphere)  2,239 / 103,251 / 408,957 unknowns:  98 /  250 /  717 MB
#   solve (dense)   2,239 / 5,534 unknowns:             820 / 1771 MB
#   solve (H-matrix) 5,534 unknowns:                   1532 MB
# The models below, fed with the unknowns estimated from the area, lie a little above those
# (the submarine's appendages add up to 40% more unknowns at coarse sizes, which the mesh
# slope absorbs).
# At large n the H-matrix term is the generous side of README's 4M-unknown Laplace single
# layer (136 GiB of real blocks: ~6.7 kB per n log2 n for two complex operators).
_MESH_BASE_BYTES = 200e6
_MESH_BYTES_PER_UNKNOWN = 2_500  # gmsh surface mesh, checks, .msh writing (measured ~1.6 kB)
_SOLVE_BASE_BYTES = 600e6  # NumPy, Numba kernels, gmsh, h5py loaded
_SOLVE_BYTES_PER_UNKNOWN = 40_000  # mesh, quadrature data, sparse OSRC factors, far field
_HMATRIX_BYTES_PER_NLOGN = 10_500  # two compressed operators at eps = 1e-4 (complex128)
# At high frequency the H-matrix's ranks grow with the wavenumber, and the constant above
# underestimated it. K + W of the default submarine (rigid Burton-Miller) at 10 elements per
# wavelength on one H200, blocks in complex64 (hmatrix's defaults), against this model:
#   f        DOFs       square wavelengths   hmatrix measured   model (n log2 n alone)
#   1 kHz     75,650        592                 4.23 GiB          6.0 GiB
#   2 kHz    299,154      2,369                23.5 GiB          26.6 GiB
#   4 kHz  1,196,610      9,478               140.5 GiB         118.1 GiB (16% under: it said
#                                                                the 4 kHz size fits an H200)
# It grew 5.6 and 6.0 times per doubling of frequency against n log2 n's 4.4. The model is
# multiplied by (A / A0)^0.22 from A0 on, A the body's area in square wavelengths (2 -> 4 kHz:
# the ratio measured / model grew as A^0.215): 147.5 GiB at the 4 kHz size, 5% above the
# measured; below A0 it is as before, above the measured.
_HMATRIX_GROWTH_FROM_SQUARE_WAVELENGTHS = 3450.0
_HMATRIX_GROWTH_EXPONENT = 0.22
# The directional format (solver.directional 8:10:7, the schema's defaults) on the same
# operators: 2.21, 8.81 and 41.53 GiB (stored blocks and the far field's arrays), 1,935,
# 1,738 and 1,846 bytes per n log2 n in complex64 storage (it grew 4.0 and 4.7 times per
# doubling): 1,940 for two operators, its 1 kHz figure rounded up (12% and 5% above the
# others). Below 500 square wavelengths (the submarine at 1 kHz: 592) it was not measured
# and the format keeps few far blocks (aca_kd_max): its estimate is then the H-matrix's.
_DIRECTIONAL_BYTES_PER_NLOGN = 1_940  # two operators, complex64 storage
_DIRECTIONAL_FROM_SQUARE_WAVELENGTHS = 500.0
# Its products hold the far field's expansions of a pass (farfield.work_bytes_per_column):
# one column (component x vector) of the hypersingular took 2.68 and 12.98 GiB at 2 and
# 4 kHz (299,154 and 1,179,847 DOFs: 529 and 585 bytes per n log2 n in complex64), more
# where the memory free allows (passes of several columns). A solve needs at least one
# column beside its operators; on several ranks every rank holds it.
_DIRECTIONAL_WORK_BYTES_PER_NLOGN = 600
# a sparse LU worker process (osrc.factorise, from PROCESS_UNKNOWNS on): Python, NumPy and
# SciPy (59 MB measured), its factors counted per unknown above; one per OSRC factor, at most
# the Padé terms' eight, the inverse's and the mass matrix's, shared out over the ranks
_LU_WORKER_BYTES = 100e6
_LU_WORKERS = 10


def dense_assembly_bytes(n: int, precision: str = "double", gpu: bool = False,
                         operators: int = 2) -> int:
    """Peak bytes of assembling the dense operators of a formulation (two for a rigid body,
    four for an impedance one, six for a fluid one): on the CPU each is accumulated in float64 (re, im) with a
    transposed twin for the double layer, so about one complex128 n x n array per operator
    whatever the precision; on a GPU one matrix of the run's precision per operator."""
    if gpu:
        return operators * n * n * (16 if precision == "double" else 8)
    return operators * n * n * 16 + (n * n * 8 if precision == "single" else 0)


def _stored_itemsize(solver) -> int:
    """Bytes per entry of the H-matrix blocks (solver.hmatrix.storage)."""
    return stored_dtype(complex_dtype(solver.precision), solver.hmatrix.storage,
                        solver.hmatrix.eps).itemsize


def hmatrix_operator_bytes(n: int, square_wavelengths: float | None = None,
                           operators: float = 2, itemsize: int = 16) -> float:
    """Estimated bytes of `operators` H-matrices (hmatrix's defaults, blocks of `itemsize`
    bytes an entry) of n DOFs on a surface of `square_wavelengths` (its area over the
    wavelength squared; None: not known, the low-frequency model)."""
    growth = 1.0
    if square_wavelengths and square_wavelengths > _HMATRIX_GROWTH_FROM_SQUARE_WAVELENGTHS:
        growth = (square_wavelengths
                  / _HMATRIX_GROWTH_FROM_SQUARE_WAVELENGTHS) ** _HMATRIX_GROWTH_EXPONENT
    return (operators / 2 * _HMATRIX_BYTES_PER_NLOGN * n * math.log2(max(n, 2)) * growth
            * itemsize / 16)


def directional_operator_bytes(n: int, square_wavelengths: float | None = None,
                               operators: float = 2, itemsize: int = 8) -> float:
    """Estimated bytes of `operators` operators in the directional format (its blocks of
    `itemsize` bytes an entry, its far field's arrays); the H-matrix's estimate on surfaces
    of fewer square wavelengths than it was calibrated on, or not known."""
    if not _directional_measured(square_wavelengths):
        return hmatrix_operator_bytes(n, square_wavelengths, operators, itemsize)
    return operators / 2 * _DIRECTIONAL_BYTES_PER_NLOGN * n * math.log2(max(n, 2)) * itemsize / 8


def directional_work_bytes(n: int, square_wavelengths: float | None = None,
                           itemsize: int = 8) -> float:
    """The least working memory of the directional far field's products: one column of
    expansions (none below the square wavelengths the format was measured on)."""
    if not _directional_measured(square_wavelengths):
        return 0.0
    return _DIRECTIONAL_WORK_BYTES_PER_NLOGN * n * math.log2(max(n, 2)) * itemsize / 8


def _directional_measured(square_wavelengths: float | None) -> bool:
    """Whether a surface is as large as those the directional models were measured on."""
    return bool(square_wavelengths) and square_wavelengths >= _DIRECTIONAL_FROM_SQUARE_WAVELENGTHS


def square_wavelengths(case) -> float | None:
    """The area of the case's body over the wavelength squared at its highest frequency
    (None where not known: a file not read, nested bodies, no frequency)."""
    if case.nested or not case.bodies or not case.frequencies_hz:
        return None
    area = case.bodies[0].geometry.area()
    if area is None:
        return None
    return area * (max(case.frequencies_hz) / case.medium.sound_speed) ** 2


def _fluid_preconditioner_bytes(case, gpu: bool, fmt: str) -> tuple[float, float]:
    """(bytes held, bytes of set-up work arrays) of the Müller preconditioners of the case's
    fluid interfaces (each body's contrast to the region outside it;
    muller_preconditioner.estimated_bytes), in the operators' storage precision (`fmt`:
    their format)."""
    solver, bodies = case.solver, case.bodies
    itemsize = (_stored_itemsize(solver) if fmt in ("hmatrix", "directional")
                else np.dtype(complex_dtype(solver.precision)).itemsize)
    held = work = 0.0
    for body, n in zip(bodies, surface_vertex_estimates(case)):
        if not body.is_fluid:
            continue
        ratio = body.boundary.density_ratio * body.boundary.sound_speed_ratio
        if body.parent >= 0 and bodies[body.parent].is_fluid:
            outer = bodies[body.parent].boundary
            ratio /= outer.density_ratio * outer.sound_speed_ratio
        h, w = estimated_bytes(solver.fluid_preconditioner, n, itemsize, ratio, gpu)
        held, work = held + h, max(work, w)
    return held, work


def case_estimates(case, gpu: bool, memory: float | None = None, *, dofs: int | None = None,
                   wavelengths: float | None = None) -> dict:
    """Unknowns (P1 DOFs: the vertices of all its surfaces; `system_unknowns`: the solved
    traces, two per vertex of a fluid interface, one of a rigid or pressure-release surface)
    and peak bytes of the mesh and solve jobs of a case (case.Case) at its highest
    frequency (a solve on several ranks: of each rank, which holds its share of the
    operators), in the operator `format` the solve takes and `format_reason`, why:
    `operator_format: auto` chooses by the `memory` (bytes) the solve will have, the GPU's
    for a GPU solve (`gpu`), the host's for a CPU one (SolverSettings.format_choice); without
    it, by size alone. `dofs` and `wavelengths` (the surface's area in square wavelengths):
    a mesh's, where the solve knows them, over the estimates from the geometry."""
    if case.nested:
        # nested: three operators (V, K, W; K' = K^T) per region over its surfaces' vertices
        n, unknowns, regions = _nested_estimate(case)
        if dofs is not None:
            regions = [m * dofs / n for m in regions]
            unknowns = round(unknowns * dofs / n)
            n = dofs
    else:
        n, unknowns, regions = p1_dofs_estimate(case) if dofs is None else dofs, None, None
    if wavelengths is None:
        wavelengths = square_wavelengths(case)

    def estimate(fmt: str) -> dict:
        return _estimates_in(case, gpu, fmt, n, unknowns, regions, wavelengths)

    def need(fmt: str) -> float:
        est = estimate(fmt)
        return est["solve_gpu_bytes"] if gpu else est["solve_host_bytes"]

    fmt, why = case.solver.format_choice(n, memory=memory, need=need,
                                         where="GPU memory" if gpu else "host memory")
    return {**estimate(fmt), "format_reason": why}


def _estimates_in(case, gpu: bool, fmt: str, n: int, unknowns, regions, wavelengths) -> dict:
    """case_estimates in the operator format `fmt`."""
    solver = case.solver
    if regions is None:
        form = formulation_for(case.boundary)
        count = len(form.operator_specs(1.0, fmt))  # operators the formulation assembles
        unknowns = form.traces * n
    # the least the solve needs: one direction's basis (the driver widens batches to the
    # memory it finds free)
    krylov = least_basis_bytes(unknowns, min(solver.gmres.restart, solver.gmres.maxiter))
    compressed = {"hmatrix": hmatrix_operator_bytes,
                  "directional": directional_operator_bytes}.get(fmt)
    itemsize = _stored_itemsize(solver) if compressed else None
    if regions is not None:
        if fmt == "dense":
            operators = sum(dense_assembly_bytes(m, solver.precision, gpu, 3)
                            for m in regions)
        else:
            operators = sum(compressed(m, None, 3, itemsize) for m in regions)
    elif fmt == "dense":
        operators = dense_assembly_bytes(n, solver.precision, gpu, count)
    else:
        operators = compressed(n, wavelengths, count, itemsize)
    operators /= solver.ranks  # each rank its share of the blocks
    # the directional products' expansions: every rank holds them, beside GMRES's basis
    products = directional_work_bytes(n, wavelengths, itemsize) \
        if fmt == "directional" and regions is None else 0.0
    # a fluid body's preconditioner: its factors, and its set-up's work arrays (freed
    # before GMRES's basis is made)
    held, work = _fluid_preconditioner_bytes(case, gpu, fmt)
    operators += held
    krylov = max(krylov, work)
    host = _SOLVE_BASE_BYTES + _SOLVE_BYTES_PER_UNKNOWN * n
    if n >= PROCESS_UNKNOWNS:
        host += _LU_WORKER_BYTES * math.ceil(_LU_WORKERS / solver.ranks)
    device = operators + krylov + products if gpu else 0
    if not gpu:
        host += operators + krylov + products
    # a GPU's H-matrix blocks may move to host memory when the card runs short
    # (hmatrix/host_blocks.py): they need the two memories together, not the card alone
    movable = operators if gpu and fmt == "hmatrix" else 0
    return {"unknowns": n, "system_unknowns": unknowns, "format": fmt, "gpu": gpu,
            "mesh_bytes": _MESH_BASE_BYTES + _MESH_BYTES_PER_UNKNOWN * n,
            "solve_host_bytes": host, "solve_gpu_bytes": device,
            "solve_gpu_movable_bytes": movable}


def solve_format(case, n_dofs: int, k: float, area: float, gpu: bool, ranks: int = 1
                 ) -> tuple[str, str]:
    """(operator format, why) of a solve of `n_dofs` DOFs at wavenumber k on a mesh of
    surface `area`, on the GPU (`gpu`) or the CPU, over `ranks` ranks: `operator_format: auto`
    against this machine's memory (the GPU's or the host's, as the pre-flight checks take
    them), asked only where the choice depends on it (solve.driver.assemble_system's
    `choose_format`)."""
    solver = case.solver
    if not (solver.operator_format == "auto" and ranks == 1
            and n_dofs >= solver.hmatrix.dense_below):
        return solver.format_choice(n_dofs, ranks)
    memory = gpu_memory_bytes() if gpu else host_memory_bytes()
    # the case at this solve's frequency (a solve job's case holds none)
    case = case.with_frequencies([k * case.medium.sound_speed / (2 * math.pi)])
    est = case_estimates(case, gpu, memory, dofs=n_dofs,
                         wavelengths=area * (k / (2 * math.pi)) ** 2)
    return est["format"], est["format_reason"]
