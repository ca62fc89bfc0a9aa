"""Meshing cost of the default (BeTSSi-size) submarine at 250, 500 and 1000 Hz.

c = 1500 m/s, 10 elements per wavelength, one gmsh thread. Prints elements, vertices,
meshing time (gmsh) and check time. Run: python bench/bench_meshing.py [freq ...]
"""
from __future__ import annotations

import platform
import sys
import time

from wavescat.configuration.case import Case
from wavescat.geometry import mesh_case


def main(freqs: list[float]) -> None:
    medium = {"sound_speed": 1500.0, "density": 1000.0}
    print(f"# submarine meshing on {platform.machine()} ({platform.processor() or 'cpu'})")
    print(f"{'f_hz':>7} {'h_m':>7} {'elements':>9} {'vertices':>9} {'mesh_s':>8} {'total_s':>8} "
          f"{'max_edge/h':>10} {'min_angle':>9} {'volume_m3':>10}")
    for f in freqs:
        case = {"geometry": {"kind": "submarine"}, "frequencies_hz": [f],
                "mesh": {"elements_per_wavelength": 10, "max_element_size": None,
                         "curvature_refinement": 0}}
        start = time.perf_counter()
        _, s = mesh_case(Case.from_dict(case, medium))
        total = time.perf_counter() - start
        print(f"{f:7.0f} {s['h_requested']:7.3f} {s['elements']:9d} {s['vertices']:9d} "
              f"{s['meshing_time_s']:8.2f} {total:8.2f} {s['edge_length_max_over_h']:10.2f} "
              f"{s['min_angle_deg']:9.2f} {s['enclosed_volume']:10.1f}", flush=True)


if __name__ == "__main__":
    main([float(a) for a in sys.argv[1:]] or [250.0, 500.0, 1000.0])
