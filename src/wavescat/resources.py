"""Resource estimates for the Snakemake rules (threads, memory, run time, GPUs), from the
case alone, before anything is meshed: the scheduler must place a job before it runs, and a
job that cannot fit the machine (config key `limits`) is refused before any job starts.

Memory estimates are calibrated against measured peaks (a little above them); the rules ask
for 1.5 times as much. Dense allocations are checked again where they happen, against the
memory then available, and an allocation that fails anyway becomes a message naming the
stage (`out_of_memory_message`).
"""
from __future__ import annotations

import math

from .defaults import GMRES
from .geometry.sizing import MESH_DEFAULTS, element_size
from .geometry.submarine import DEFAULTS as SUBMARINE_DEFAULTS

# Mean triangle area of a mesh with edge length h is about sqrt(3)/4 h^2; vertices ~ triangles / 2.
_TRIANGLE_AREA_FACTOR = math.sqrt(3.0) / 4.0


def surface_area_estimate(geometry: dict) -> float | None:
    """Surface area of the body from its parameters (None for a file: unknown before reading)."""
    kind = geometry["kind"]
    if kind == "sphere":
        return 4.0 * math.pi * geometry["radius"] ** 2
    if kind == "spheroid":  # Knud Thomsen's approximation, within ~1%
        a, b, c = geometry["semi_axes"]
        p = 1.6075
        return 4.0 * math.pi * (((a * b) ** p + (a * c) ** p + (b * c) ** p) / 3.0) ** (1.0 / p)
    if kind == "box":
        x, y, z = geometry["size"]
        return 2.0 * (x * y + y * z + x * z)
    if kind == "cylinder":
        r = geometry["radius"]
        return 2.0 * math.pi * r * (r + geometry["length"])
    if kind == "submarine":
        length = geometry.get("hull_length", SUBMARINE_DEFAULTS["hull_length"])
        diameter = geometry.get("hull_diameter", SUBMARINE_DEFAULTS["hull_diameter"])
        # hull of revolution ~ 85% of the enclosing cylinder, plus sail and rudders (~15%)
        return 1.15 * 0.85 * math.pi * diameter * length
    if kind == "krm":  # from the shape file's stations (None where it cannot be read)
        from .geometry.krm import shape_estimates
        estimates = shape_estimates(geometry)
        return estimates[0] if estimates else None
    return None


def _volume_and_total_curvature(geometry: dict) -> tuple[float, float] | None:
    """(volume, integral of the mean curvature over the surface) of a curved built-in body,
    from its parameters; None for flat (box) or unknown (file) bodies. Convex bodies have
    int H dA = 2 pi x mean width; the spheroid takes its mean semi-axis, the submarine its hull."""
    kind = geometry["kind"]
    if kind == "sphere":
        r = geometry["radius"]
        return 4.0 / 3.0 * math.pi * r**3, 4.0 * math.pi * r
    if kind == "spheroid":
        a, b, c = geometry["semi_axes"]
        return 4.0 / 3.0 * math.pi * a * b * c, 4.0 * math.pi * (a + b + c) / 3.0
    if kind == "cylinder":
        r, length = geometry["radius"], geometry["length"]
        return math.pi * r**2 * length, math.pi * length
    if kind == "submarine":
        length = geometry.get("hull_length", SUBMARINE_DEFAULTS["hull_length"])
        r = geometry.get("hull_diameter", SUBMARINE_DEFAULTS["hull_diameter"]) / 2
        return 0.85 * math.pi * r**2 * length, 0.85 * math.pi * length
    if kind == "krm":
        from .geometry.krm import shape_estimates
        estimates = shape_estimates(geometry)
        return estimates[1:] if estimates else None
    return None


def p1_dofs_estimate(case: dict, medium: dict) -> int:
    geometry = case["geometry"]
    area = surface_area_estimate(geometry)
    if area is None:
        return 20_000  # a file geometry: assume a mid-size problem
    # gmsh's edges come out a few percent shorter than the target h: 2-12% more vertices
    # than area / (sqrt(3)/4 h^2) / 2 on spheres of 2k-400k unknowns, hence the 1.1
    triangles = area / (_TRIANGLE_AREA_FACTOR * element_size(case, medium) ** 2)
    # Geometry sizing (wavescat.geometry.sizing): h^2 = 8 e (V / A) / H keeps the meshed volume
    # within e, so it needs A / (sqrt(3)/4 8 e V) x int H dA triangles, more than the
    # frequency's at low frequency (the submarine at 100 Hz: about 3x).
    error = (case.get("mesh") or {}).get("max_volume_error", MESH_DEFAULTS["max_volume_error"])
    curved = _volume_and_total_curvature(geometry)
    if error and curved:
        volume, total_curvature = curved
        triangles = max(triangles, area * total_curvature
                        / (_TRIANGLE_AREA_FACTOR * 8.0 * error * volume))
    return max(12, int(1.1 * triangles / 2))


def gpu_count(backend: str, cluster: dict) -> int:
    """GPUs a job asks the scheduler for: one on the GPU backend, and on `auto` where the
    cluster's nodes have GPUs (config `cluster.gpus`); `auto` falls back to the CPU anyway."""
    return int(backend == "gpu" or (backend == "auto" and cluster.get("gpus", False)))


def partition(gpus: int, cluster: dict) -> str | None:
    """SLURM partition of a job by whether it asks for a GPU (config `cluster.partitions`);
    None where the config names none, so the profile's `slurm_partition` applies."""
    partitions = cluster.get("partitions")
    return partitions["gpu" if gpus else "cpu"] if partitions else None


def solve_resources(case: dict, medium: dict, cores: int, cluster: dict | None = None) -> dict:
    """threads, mem_mb, runtime (minutes) and gpu count of one (case, frequency) solve."""
    gpu = gpu_count(case["solver"]["backend"], cluster or {})
    est = case_estimates(case, medium, bool(gpu))
    n = est["unknowns"]
    # CPU assembly ~1e6 entries/s per core and ~4 operators' worth of entries, plus GMRES
    entries = 4.0 * n * n if est["format"] == "dense" else 200.0 * n * math.log2(max(n, 2))
    minutes = 5 + entries / (1e6 * max(cores, 1)) / 60.0 * (0.05 if gpu else 1.0)
    return {"threads": cores, "mem_mb": int(1.5 * est["solve_host_bytes"] / 1e6),
            "runtime": int(math.ceil(minutes * 2)), "gpu": gpu, "dofs_estimate": n}


def mesh_resources(case: dict, medium: dict) -> dict:
    est = case_estimates(case, medium, False)
    return {"threads": 1, "mem_mb": int(1.5 * est["mesh_bytes"] / 1e6),
            "runtime": 10 + est["unknowns"] // 20_000}


# -- what fits: estimates before the DAG, checks at the point of allocation ----------------

GIB = 2**30
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


def dense_assembly_bytes(n: int, precision: str = "double", gpu: bool = False,
                         operators: int = 2) -> int:
    """Peak bytes of assembling the dense operators of a formulation (two for a rigid body,
    four for an impedance one, six for a fluid one): on the CPU each is accumulated in float64 (re, im) with a
    transposed twin for the double layer, so about one complex128 n x n array per operator
    whatever the precision; on a GPU one matrix of the run's precision per operator."""
    if gpu:
        return operators * n * n * (16 if precision == "double" else 8)
    return operators * n * n * 16 + (n * n * 8 if precision == "single" else 0)


def host_memory_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().total)


def available_host_bytes() -> int:
    import psutil

    return int(psutil.virtual_memory().available)


def gpu_memory_bytes() -> int | None:
    """Total memory of the GPU the jobs would use (None where CuPy sees none)."""
    from .backend import _probe_gpu

    probe = _probe_gpu()
    if isinstance(probe, str):
        return None
    return int(probe[0].cuda.Device(0).mem_info[1])


def available_gpu_bytes(xp) -> int:
    """Free device memory plus what CuPy's pool holds but does not use."""
    pool = xp.get_default_memory_pool()
    return int(xp.cuda.Device().mem_info[0] + pool.total_bytes() - pool.used_bytes())


def check_dense_allocation(n_rows: int, n_cols: int, needed: int, backend, what: str) -> None:
    """Refuse a dense allocation of `needed` bytes that the device cannot hold, before trying."""
    from .errors import ResourceError

    available = available_gpu_bytes(backend.xp) if backend.is_gpu else available_host_bytes()
    if needed > available:
        size = n_rows if n_rows == n_cols else f"{n_rows} x {n_cols}"
        where = "GPU" if backend.is_gpu else "host"
        raise ResourceError(
            f"dense {what} of {size} unknowns needs {needed / GIB:.3g} GiB, "
            f"{available / GIB:.3g} GiB of {where} memory available; use operator_format: hmatrix")


def _limit(limits: dict, key: str, machine) -> tuple[float | None, str]:
    """(bytes, where it comes from) of a memory limit: the config's, else this machine's."""
    if limits.get(key) is not None:
        return limits[key] * 1e9, f"limits.{key} = {limits[key]:g}"
    value = machine()
    return value, f"this machine's, set limits.{key} to change it"


def _gpu_runs(solver: dict, gpu_here: bool) -> bool:
    return solver["backend"] == "gpu" or (solver["backend"] == "auto" and gpu_here)


def case_estimates(case: dict, medium: dict, gpu: bool) -> dict:
    """Unknowns and peak bytes of the mesh and solve jobs of a case at its highest frequency."""
    n = p1_dofs_estimate(case, medium)
    solver = case["solver"]
    fmt = solver["operator_format"]
    if fmt == "auto":
        fmt = "hmatrix" if n >= solver["hmatrix"]["dense_below"] else "dense"
    gm = {**GMRES, **solver.get("gmres", {})}
    from .bem.formulations import formulation_for  # noqa: PLC0415

    form = formulation_for(case.get("boundary"), medium=medium)
    count = len(form.operator_specs(1.0, fmt))  # operators the formulation assembles
    unknowns = form.traces * n
    from .solve.driver import KRYLOV_MIN_VECTORS, WORK_VECTORS  # noqa: PLC0415

    # the least the solve needs: one direction's basis (the driver widens batches to the
    # memory it finds free)
    krylov = 16 * unknowns * (min(gm["restart"], gm["maxiter"], KRYLOV_MIN_VECTORS) + 1
                              + WORK_VECTORS)
    if fmt == "dense":
        operators = dense_assembly_bytes(n, solver["precision"], gpu, count)
    else:
        operators = count / 2 * _HMATRIX_BYTES_PER_NLOGN * n * math.log2(max(n, 2))
    host = _SOLVE_BASE_BYTES + _SOLVE_BYTES_PER_UNKNOWN * n
    device = operators + krylov if gpu else 0
    if not gpu:
        host += operators + krylov
    return {"unknowns": n, "format": fmt, "gpu": gpu,
            "mesh_bytes": _MESH_BASE_BYTES + _MESH_BYTES_PER_UNKNOWN * n,
            "solve_host_bytes": host, "solve_gpu_bytes": device}


def _size(nbytes: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if nbytes >= scale or unit == "MB":
            return f"{nbytes / scale:.3g} {unit}"


def check_limits(config: dict, cases) -> None:
    """Refuse, before any job starts, a case whose mesh or solve job cannot fit: estimated
    unknowns and memory (at the case's highest frequency) against `limits` (the machine's
    host and GPU memory by default). The message names case, frequency, estimate and limit."""
    from .errors import ConfigError

    limits = config.get("limits") or {}
    medium = config["medium"]
    host, host_from = _limit(limits, "host_memory_gb", host_memory_bytes)
    gpu_here = None
    for name in cases:
        case = config["cases"][name]
        f = max(case["frequencies_hz"])
        solver = case["solver"]
        if gpu_here is None and solver["backend"] != "cpu":
            gpu_here = gpu_memory_bytes()
        gpu = _gpu_runs(solver, bool(gpu_here))
        est = case_estimates(case, medium, gpu)
        where = f"case {name!r} at {f:g} Hz (about {est['unknowns']:.3g} unknowns)"
        max_n = limits.get("max_unknowns")
        if max_n is not None and est["unknowns"] > max_n:
            raise ConfigError(f"{where}: more than limits.max_unknowns = {max_n}; lower the "
                              "frequency or elements_per_wavelength, or raise the limit")
        checks = [("meshing", est["mesh_bytes"], host, "host memory", host_from),
                  (f"the {est['format']} solve", est["solve_host_bytes"], host, "host memory",
                   host_from)]
        if gpu:
            limit, limit_from = _limit(limits, "gpu_memory_gb", lambda: gpu_here)
            if limit is not None:
                checks.append((f"the {est['format']} solve on the GPU", est["solve_gpu_bytes"],
                               limit, "GPU memory", limit_from))
        for stage, need, limit, kind, limit_from in checks:
            if need > limit:
                hint = (" (operator_format: hmatrix needs less)" if est["format"] == "dense"
                        and "solve" in stage else "")
                raise ConfigError(
                    f"{where}: {stage} needs about {_size(need)}, more than the {_size(limit)} "
                    f"of {kind} ({limit_from}){hint}")


def out_of_memory_message(exc: BaseException, command: str) -> str | None:
    """A user's message for an allocation that failed (NumPy's or CuPy's MemoryError, or a
    CUDA library out of memory), naming the stage and the size; None for other errors."""
    from .progress import current_stage

    text = str(exc)
    gpu = type(exc).__module__.split(".")[0] in ("cupy", "cupy_backends")
    if not isinstance(exc, MemoryError) and not (
            gpu and ("out of memory" in text.lower() or "ALLOC_FAILED" in text)):
        return None
    stage = current_stage(exc) or command
    return (f"out of {'GPU' if gpu else 'host'} memory in {stage!r}: {text or type(exc).__name__}; "
            "a smaller problem (frequency, elements per wavelength), operator_format: hmatrix, "
            f"or a {'larger GPU' if gpu else 'machine with more memory'} is needed")


def follow_job_threads() -> None:
    """Numba's thread pool takes the job's thread count, which Snakemake passes to every
    job as OMP_NUM_THREADS (a rule's `threads`); without this each job spins one thread per
    core, and jobs running side by side stall on each other's parallel-loop barriers."""
    import os
    import sys

    n = os.environ.get("OMP_NUM_THREADS", "")
    if not n.isdigit() or int(n) < 1 or "NUMBA_NUM_THREADS" in os.environ:
        return
    if "numba" in sys.modules:
        import numba

        numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))
    else:
        os.environ["NUMBA_NUM_THREADS"] = n
