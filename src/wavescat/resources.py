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
from .geometry.sizing import MESH_DEFAULTS, element_sizes
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


def _vertices_estimate(geometry: dict, h: float, error) -> int:
    area = surface_area_estimate(geometry)
    if area is None:
        facts = file_facts(geometry)
        if facts and facts.get("vertices"):  # a stored mesh is used as it is
            return int(facts["vertices"])
        if not facts or not facts.get("area"):
            return 20_000  # a file geometry not read: assume a mid-size problem
        area = facts["area"]  # a CAD file, meshed at h
    # gmsh's edges come out a few percent shorter than the target h: 2-12% more vertices
    # than area / (sqrt(3)/4 h^2) / 2 on spheres of 2k-400k unknowns, hence the 1.1
    triangles = area / (_TRIANGLE_AREA_FACTOR * h ** 2)
    # Geometry sizing (wavescat.geometry.sizing): h^2 = 8 e (V / A) / H keeps the meshed volume
    # within e, so it needs A / (sqrt(3)/4 8 e V) x int H dA triangles, more than the
    # frequency's at low frequency (the submarine at 100 Hz: about 3x).
    curved = _volume_and_total_curvature(geometry)
    if error and curved:
        volume, total_curvature = curved
        triangles = max(triangles, area * total_curvature
                        / (_TRIANGLE_AREA_FACTOR * 8.0 * error * volume))
    return max(12, int(1.1 * triangles / 2))


def surface_vertex_estimates(case: dict, medium: dict) -> list[int]:
    """Vertices of each surface of the case (surface-id order: the body, then the bodies
    `inside` it, depth-first), each at its own element size (sizing.element_sizes)."""
    from .geometry.bodies import body_tree

    error = (case.get("mesh") or {}).get("max_volume_error", MESH_DEFAULTS["max_volume_error"])
    return [_vertices_estimate(body.geometry, h, error)
            for body, h in zip(body_tree(case, medium), element_sizes(case, medium))]


def p1_dofs_estimate(case: dict, medium: dict) -> int:
    """P1 degrees of freedom (vertices) of the case's mesh, all its surfaces together."""
    return sum(surface_vertex_estimates(case, medium))


def _nested_estimate(case: dict, medium: dict) -> tuple[int, int, list[int]]:
    """(vertices, unknowns, vertices on the boundary of each region) of a case with bodies
    inside: two traces on each fluid interface, one on a rigid or pressure-release core;
    a region is the water outside or a fluid body's interior, bounded by the body and the
    bodies directly inside it (each region assembles its own operators among them)."""
    from .geometry.bodies import body_tree

    bodies = body_tree(case, medium)
    vertices = surface_vertex_estimates(case, medium)
    unknowns = sum((2 if b.is_fluid else 1) * n for b, n in zip(bodies, vertices))
    regions = [vertices[0]]
    for b in bodies:
        if b.is_fluid:
            regions.append(vertices[b.index] + sum(vertices[c.index] for c in bodies
                                                   if c.parent == b.index))
    return sum(vertices), unknowns, regions


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
    """threads, mem_mb, runtime (minutes) and gpu count of one (case, frequency) solve; on
    several ranks (solver.ranks) also the MPI `tasks`, one GPU per rank (`tasks_per_gpu`),
    and the memory of all of them (the threads are the whole solve's, shared by the ranks)."""
    ranks = int(case["solver"].get("ranks", 1))
    gpu = gpu_count(case["solver"]["backend"], cluster or {})
    est = case_estimates(case, medium, bool(gpu))
    n = est["unknowns"]
    # CPU assembly ~1e6 entries/s per core and ~4 operators' worth of entries, plus GMRES
    entries = 4.0 * n * n if est["format"] == "dense" else 200.0 * n * math.log2(max(n, 2))
    minutes = 5 + entries / (1e6 * max(cores, 1)) / 60.0 * (0.05 if gpu else 1.0)
    several = ranks > 1
    return {"threads": cores, "mem_mb": int(1.5 * ranks * est["solve_host_bytes"] / 1e6),
            "runtime": int(math.ceil(minutes * 2)), "gpu": gpu * ranks, "dofs_estimate": n,
            "ranks": ranks, "tasks": ranks if several else None,
            "tasks_per_gpu": 1 if several and gpu else None}


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
    """Unknowns (P1 DOFs: the vertices of all its surfaces; `system_unknowns`: the solved
    traces, two per vertex of a fluid interface, one of a rigid or pressure-release surface)
    and peak bytes of the mesh and solve jobs of a case at its highest frequency (a solve
    on several ranks: of each rank, which holds its share of the operators)."""
    solver = case["solver"]
    if case.get("inside"):
        # nested: three operators (V, K, W; K' = K^T) per region over its surfaces' vertices
        n, unknowns, regions = _nested_estimate(case, medium)
    else:
        n, unknowns, regions = p1_dofs_estimate(case, medium), None, None
    fmt = solver["operator_format"]
    if fmt == "auto":
        fmt = "hmatrix" if n >= solver["hmatrix"]["dense_below"] else "dense"
    gm = {**GMRES, **solver.get("gmres", {})}
    if regions is None:
        from .bem.formulations import formulation_for  # noqa: PLC0415

        form = formulation_for(case.get("boundary"), medium=medium)
        count = len(form.operator_specs(1.0, fmt))  # operators the formulation assembles
        unknowns = form.traces * n
    from .solve.driver import KRYLOV_MIN_VECTORS, WORK_VECTORS  # noqa: PLC0415

    # the least the solve needs: one direction's basis (the driver widens batches to the
    # memory it finds free)
    krylov = 16 * unknowns * (min(gm["restart"], gm["maxiter"], KRYLOV_MIN_VECTORS) + 1
                              + WORK_VECTORS)
    if regions is not None:
        if fmt == "dense":
            operators = sum(dense_assembly_bytes(m, solver["precision"], gpu, 3)
                            for m in regions)
        else:
            operators = sum(1.5 * _HMATRIX_BYTES_PER_NLOGN * m * math.log2(max(m, 2))
                            for m in regions)
    elif fmt == "dense":
        operators = dense_assembly_bytes(n, solver["precision"], gpu, count)
    else:
        operators = count / 2 * _HMATRIX_BYTES_PER_NLOGN * n * math.log2(max(n, 2))
    operators /= int(solver.get("ranks", 1))  # each rank its share of the blocks
    host = _SOLVE_BASE_BYTES + _SOLVE_BYTES_PER_UNKNOWN * n
    device = operators + krylov if gpu else 0
    if not gpu:
        host += operators + krylov
    return {"unknowns": n, "system_unknowns": unknowns, "format": fmt, "gpu": gpu,
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
        unit = unit_hint(case["geometry"], f"cases.{name}")
        if max_n is not None and est["unknowns"] > max_n:
            raise ConfigError(f"{where}: more than limits.max_unknowns = {max_n}; lower the "
                              "frequency or elements_per_wavelength, or raise the limit" + unit)
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
                    f"of {kind} ({limit_from}){hint}{unit}")


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


# -- before any job: meshes far too coarse, hypersensitive cases ------------------------------
# A stored mesh file (.stl, .msh) up to this size is read when the config is checked, so a
# mesh far too coarse for its wavelengths (a file in millimetres read as metres) is refused
# before any job starts; larger files and CAD files are checked by the mesh job.
QUICK_MESH_FILE_BYTES = 32 * 2**20
_FILE_MESHES: dict = {}


def stored_file_mesh(geometry: dict):
    """The SurfaceMesh of a `file` geometry's stored mesh (.stl or .msh no larger than
    QUICK_MESH_FILE_BYTES), scaled and shifted as the mesh job would; None otherwise."""
    from pathlib import Path  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    if geometry.get("kind") != "file":
        return None
    path = Path(geometry["path"])
    if path.suffix.lower() not in (".stl", ".msh") or not path.is_file() \
            or path.stat().st_size > QUICK_MESH_FILE_BYTES:
        return None
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    if key not in _FILE_MESHES:
        from .geometry.file import read_triangle_file  # noqa: PLC0415

        _FILE_MESHES[key] = read_triangle_file(path)
    mesh = _FILE_MESHES[key]
    from .surface import SurfaceMesh  # noqa: PLC0415

    scale = float(geometry.get("scale", 1.0))
    return SurfaceMesh(scale * mesh.vertices + np.asarray(geometry.get("center", [0, 0, 0]), float),
                       mesh.triangles, mesh.meta)


def file_facts(geometry: dict) -> dict | None:
    """What a `file` geometry is, read quickly and in metres (geometry.scale applied):
    {"extent": bounding-box sides, "area": surface area, "vertices": vertex count of a stored
    mesh (None for CAD, which is meshed at h)}. Stored meshes up to QUICK_MESH_FILE_BYTES and
    STEP files (OpenCASCADE, no meshing) are read; None for others or a file that does not
    read (the mesh job reports that)."""
    from pathlib import Path  # noqa: PLC0415

    import numpy as np  # noqa: PLC0415

    from .errors import WavescatError  # noqa: PLC0415

    if geometry.get("kind") != "file":
        return None
    try:
        mesh = stored_file_mesh(geometry)
    except WavescatError:
        return None
    if mesh is not None:
        from .geometry.resolution import mesh_extent  # noqa: PLC0415

        return {"extent": mesh_extent(mesh.vertices), "area": float(mesh.total_area),
                "vertices": int(mesh.n_vertices)}
    path = Path(geometry["path"])
    if path.suffix.lower() not in (".step", ".stp") or not path.is_file() \
            or path.stat().st_size > QUICK_MESH_FILE_BYTES:
        return None
    key = ("cad", str(path.resolve()), path.stat().st_mtime_ns)
    if key not in _FILE_MESHES:
        from .geometry.gmsh_model import gmsh_session  # noqa: PLC0415

        try:
            with gmsh_session() as gmsh:
                gmsh.model.occ.importShapes(str(path))
                gmsh.model.occ.synchronize()
                box = np.asarray(gmsh.model.getBoundingBox(-1, -1), float)
                area = sum(gmsh.model.occ.getMass(2, tag)
                           for _, tag in gmsh.model.getEntities(2))
            _FILE_MESHES[key] = (box[3:] - box[:3], float(area))
        except Exception:  # noqa: BLE001 - unreadable here: the mesh job names the problem
            _FILE_MESHES[key] = None
    if _FILE_MESHES[key] is None:
        return None
    extent, area = _FILE_MESHES[key]
    scale = float(geometry.get("scale", 1.0))
    return {"extent": scale * extent, "area": scale**2 * area, "vertices": None}


def unit_hint(geometry: dict, where: str) -> str:
    """'; if the file is in millimetres, set <where>.geometry.scale: 0.001 (...)' for an
    unscaled file geometry a metre or more long, '' otherwise."""
    if geometry.get("kind") != "file" or float(geometry.get("scale", 1.0)) != 1.0:
        return ""
    facts = file_facts(geometry)
    if not facts:
        return ""
    longest = float(max(facts["extent"]))
    if longest < 1.0:
        return ""
    return (f"; the body is {longest:.3g} m long: if the file is in millimetres, set "
            f"{where}.geometry.scale: 0.001 (then {longest * 0.001:.3g} m)")


def check_resolution(config: dict, cases) -> list[str]:
    """Before any job starts: refuse (ConfigError, one line) a case whose stored mesh file
    is far too coarse for its highest frequency (geometry.resolution.coarse_mesh_refusal),
    and return the hypersensitivity warnings of every case (wavescat.sensitivity)."""
    from .errors import ConfigError, MeshError  # noqa: PLC0415
    from .geometry.resolution import (check_mesh_resolution,  # noqa: PLC0415
                                      mesh_extent)
    from .sensitivity import sensitivity_warnings  # noqa: PLC0415

    medium = config["medium"]
    out = []
    for name in cases:
        case = config["cases"][name]
        try:
            mesh = stored_file_mesh(case["geometry"])
        except MeshError as exc:
            raise ConfigError(f"cases.{name}.geometry.path: {exc}") from None
        sizes = None
        if mesh is not None:
            try:
                check_mesh_resolution(mesh, case, medium, max(case["frequencies_hz"]),
                                      f"cases.{name}")
            except MeshError as exc:  # point at the file's key (config_error finds its line)
                text = str(exc).replace(f"cases.{name}: ", f"cases.{name}.geometry.path: ", 1)
                raise ConfigError(text) from None
            sizes = {f"cases.{name}": mesh_extent(mesh.vertices)}
        elif case["geometry"].get("kind") == "file":
            facts = file_facts(case["geometry"])  # a STEP file's bounding box
            sizes = {f"cases.{name}": facts["extent"]} if facts else None
        out += [w for w in sensitivity_warnings(case, medium, name, sizes) if w not in out]
    return out
