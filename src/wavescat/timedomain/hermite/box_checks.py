"""What the Hermite-Taylor box cross-check (box_scattering.py) can take, without its numerics:
the configuration's check of `hermite_cross_check` (configuration/case.py) and the run share
these refusals and the grid's cell size."""
from __future__ import annotations

import numpy as np

from ...errors import InputError

# The run's sizes where it runs on the CPU (verification.full_on_cpu keeps the configured
# ones), each a cap on the configured one: those take hours on a few cores; these take the
# 1 m cube of config/examples/hermite_box.yaml to 46 x 23 x 22 cells and 217 steps, 1 min 39 s
# on 2 cores, 5.1% to 7.0% from the BEM (bench/README.md, "Hermite-Taylor on a box")
CPU_SIZES = {"cells_per_wavelength": 8.0, "cells_per_half_side": 4.0, "sponge_gap": 0.25,
             "sponge_width": 0.5}


def check_rigid_box(shape: str, kind: str) -> None:
    """Only a rigid box: the grid holds its faces exactly, the mirrored ghosts are the
    sound-hard condition."""
    if shape != "box" or kind != "rigid":
        raise InputError(f"the Hermite cross-check models a rigid box (the grid holds its faces "
                         f"exactly); this body is a {kind} {shape}")


def incidence_axis(direction) -> int:
    """The box axis (0, 1, 2) the unit incident direction runs along; refused unless it does."""
    d = np.asarray(direction, float)
    axis = int(np.argmax(np.abs(d)))
    if not abs(abs(d[axis]) - 1) < 1e-12:
        raise InputError(f"incident direction {d.tolist()}: the Hermite cross-check needs it "
                         "along one of the box's axes (x, y or z), which makes the field mirror-"
                         "symmetric about the two planes through the box's centre along it")
    return axis


def grid_cell(half_sides, shortest_wavelength: float, cells_per_wavelength: float,
              cells_per_half_side: float = 0.0) -> float:
    """The grid's cell: about shortest_wavelength / cells_per_wavelength, and at most the
    smallest half-side / cells_per_half_side (the error at the box's edges is first order in
    the cell over the half-side: a box small beside the wavelength needs the finer cell; 0: no
    such bound), cut to divide the smallest half-side; refused unless it divides the others
    too."""
    half_sides = np.asarray(half_sides, float)
    n = max(int(np.ceil(half_sides.min() / (shortest_wavelength / cells_per_wavelength))),
            int(np.ceil(cells_per_half_side - 1e-9)))
    h = float(half_sides.min() / n)
    box = half_sides / h
    if np.any(np.abs(box - np.round(box)) > 1e-6 * box):
        raise InputError(f"box size {(2 * half_sides).tolist()}: its half-sides must be whole "
                         f"multiples of the Hermite grid's cell ({h:.6g} m, from the shortest "
                         "one); use sides in simple ratios such as 1:1:2")
    return h
