"""Mesh statistics as a JSON-able dict (written next to every mesh)."""
from __future__ import annotations

import numpy as np

from ..surface import SurfaceMesh


def unique_edge_lengths(mesh: SurfaceMesh) -> np.ndarray:
    t = mesh.triangles
    e = np.unique(np.sort(np.concatenate([t[:, [0, 1]], t[:, [1, 2]], t[:, [2, 0]]]), axis=1),
                  axis=0)
    return np.linalg.norm(mesh.vertices[e[:, 1]] - mesh.vertices[e[:, 0]], axis=1)


def min_angle_deg(mesh: SurfaceMesh) -> float:
    """Smallest interior angle of any triangle (law of cosines on the three edges)."""
    a, b, c = mesh.edge_lengths.T      # edges (0,1), (1,2), (2,0)
    cos = np.stack([(a**2 + c**2 - b**2) / (2 * a * c),
                    (a**2 + b**2 - c**2) / (2 * a * b),
                    (b**2 + c**2 - a**2) / (2 * b * c)])
    return float(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))).min())


def mesh_statistics(mesh: SurfaceMesh, h: float | None = None,
                    seconds: float | None = None) -> dict:
    edges = unique_edge_lengths(mesh)
    stats = {
        "elements": int(mesh.n_triangles),
        "vertices": int(mesh.n_vertices),
        "edge_length_min": float(edges.min()),
        "edge_length_max": float(edges.max()),
        "edge_length_mean": float(edges.mean()),
        "min_angle_deg": min_angle_deg(mesh),
        "area": mesh.total_area,
        "enclosed_volume": mesh.enclosed_volume,
        "h_requested": None if h is None else float(h),
        "meshing_time_s": None if seconds is None else float(seconds),
    }
    if h is not None:
        stats["edge_length_max_over_h"] = float(edges.max() / h)
    return stats
