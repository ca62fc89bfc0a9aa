"""Resource estimates for the Snakemake rules (threads, memory, run time, GPUs), from the
case alone, before anything is meshed: the scheduler must place a job before it runs.

The estimates are deliberately generous (factor ~2); they decide where a cluster puts a
job, not whether it succeeds.
"""
from __future__ import annotations

import math

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
    return None


def element_size(case: dict, medium: dict) -> float:
    h = medium["sound_speed"] / (max(case["frequencies_hz"]) * case["mesh"]["elements_per_wavelength"])
    cap = case["mesh"].get("max_element_size")
    return min(h, cap) if cap else h


def p1_dofs_estimate(case: dict, medium: dict) -> int:
    area = surface_area_estimate(case["geometry"])
    if area is None:
        return 20_000  # a file geometry: assume a mid-size problem
    triangles = area / (_TRIANGLE_AREA_FACTOR * element_size(case, medium) ** 2)
    return max(12, int(triangles / 2))


def dense_matrix_bytes(n: int, precision: str = "double", operators: int = 2) -> int:
    """The OSRC Burton-Miller dense path keeps its `operators` complex n x n matrices (two
    for a rigid body, four for an impedance one) and about one more for temporaries."""
    return (operators + 1) * n * n * (16 if precision == "double" else 8)


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
    n = p1_dofs_estimate(case, medium)
    solver = case["solver"]
    hmatrix = solver["operator_format"] == "hmatrix" or (
        solver["operator_format"] == "auto" and n >= solver["hmatrix"]["dense_below"])
    if hmatrix:  # ~ N log N storage at eps = 1e-4
        mem = 2000 + int(4e-3 * n * math.log2(max(n, 2)))
    else:
        from .bem.formulations import formulation_for  # noqa: PLC0415

        operators = len(formulation_for(case.get("boundary")).operators)
        mem = 1000 + dense_matrix_bytes(n, solver["precision"], operators) // 10**6
    gpu = gpu_count(solver["backend"], cluster or {})
    # CPU assembly ~1e6 entries/s per core and ~4 operators' worth of entries, plus GMRES
    entries = 4.0 * n * n if not hmatrix else 200.0 * n * math.log2(max(n, 2))
    minutes = 5 + entries / (1e6 * max(cores, 1)) / 60.0 * (0.05 if gpu else 1.0)
    return {"threads": cores, "mem_mb": int(mem * 1.5), "runtime": int(math.ceil(minutes * 2)),
            "gpu": gpu, "dofs_estimate": n}


def mesh_resources(case: dict, medium: dict) -> dict:
    n = p1_dofs_estimate(case, medium)
    return {"threads": 1, "mem_mb": 1000 + n // 100, "runtime": 10 + n // 20_000}
