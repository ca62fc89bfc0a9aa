"""Pressure on a plane through a body (a case's `near_field`): a grid of points, the scattered
pressure there from one solution's surface unknown, and the total pressure.

The scattered pressure is the potential of the surface unknown that the solution's
formulation defines (bem/formulations/: for a rigid body the double layer of the total
surface pressure), as at the DG cross-check's probes; the total pressure adds the unit
incident plane wave exp(i k d.x). Points inside the body (the winding number of its outer
surface above 1/2) are left out as NaN: the exterior representation says nothing of the
field there. The potentials integrate every triangle with a Gauss rule whose error grows
as a point nears the surface: the default rule (degree 4) holds the BEM's own accuracy from
about half a mean edge off the surface, so points within half an edge get a degree-12 rule,
and points within a tenth of an edge, where that too fails, are left out as NaN like the
inside (tests/test_near_field.py checks the map against the exact sphere series).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

import numpy as np

from ..backend import resolve
from ..bem.formulations import formulation_of_record
from ..errors import InputError
from ..files import atomic_path
from ..geometry.nesting import Reach, winding_numbers
from ..problem.farfield import PLANE_AXES
from ..solve.records import solution_mesh

CSV_HEADER = ["x", "y", "z", "re_p_scattered", "im_p_scattered", "re_p_total", "im_p_total"]
_ENTRIES = 2**24  # potential-matrix entries per chunk of points (256 MB in complex128)
NEAR_EDGES, NEAR_ORDER = 0.5, 12  # within this many mean edges of the surface: this rule
SKIP_EDGES = 0.1  # within this many: left out


@dataclass(frozen=True)
class PlaneGrid:
    """Points on a plane `xy`, `xz` or `yz` at `offset` along its normal: u along the plane's
    first axis, v along its second; `points` (len(v), len(u), 3), rows of constant v."""
    plane: str
    u: np.ndarray
    v: np.ndarray
    offset: float

    @property
    def points(self) -> np.ndarray:
        i, j = PLANE_AXES[self.plane]
        out = np.full((len(self.v), len(self.u), 3), self.offset, float)
        out[..., i], out[..., j] = np.meshgrid(self.u, self.v)
        return out


def plane_grid(plane: str, center, size, points: int) -> PlaneGrid:
    """`points` along the longer side of a `size` = [width, height] window centred at
    `center`, as many along the other at the same spacing (at least 2 each)."""
    if plane not in PLANE_AXES:
        raise InputError(f"plane = {plane!r}: must be one of {', '.join(PLANE_AXES)}")
    i, j = PLANE_AXES[plane]
    center, size = np.asarray(center, float), np.asarray(size, float)
    step = size.max() / (points - 1)
    nu, nv = (max(2, int(round(s / step)) + 1) for s in size)
    u = center[i] + np.linspace(-size[0] / 2, size[0] / 2, nu)
    v = center[j] + np.linspace(-size[1] / 2, size[1] / 2, nv)
    return PlaneGrid(plane, u, v, float(center[3 - i - j]))


def default_window(mesh, plane: str, center=None, size=None):
    """(center, size) of a map of `mesh`'s outer surface: by default the centre of its bounding
    box, and its extent in the plane with half its largest extent added on every side."""
    outer = mesh.surface(0).vertices
    lo, hi = outer.min(axis=0), outer.max(axis=0)
    i, j = PLANE_AXES[plane]
    extent = (hi - lo)[[i, j]]
    if center is None:
        center = (lo + hi) / 2
    if size is None:
        size = extent + extent.max()
    return np.asarray(center, float), np.asarray(size, float)


@dataclass(frozen=True)
class NearField:
    grid: PlaneGrid
    frequency_hz: float
    wavenumber: float
    direction: np.ndarray   # the incident wave's direction of travel
    scattered: np.ndarray   # (len(v), len(u)) complex, NaN inside the body
    total: np.ndarray


def near_field(solution: dict, plane: str, center=None, size=None, points: int = 201,
               incidence: int = 0, backend=None) -> NearField:
    """Scattered and total pressure of one incidence direction of a solution
    (records.read_solution) on a plane grid (plane_grid, default_window)."""
    pressure = np.atleast_2d(solution["surface_pressure"])
    if not 0 <= incidence < len(pressure):
        raise InputError(f"incidence = {incidence}: the solution has "
                            f"{len(pressure)} incidence direction(s)")
    mesh = solution_mesh(solution)
    grid = plane_grid(plane, *default_window(mesh, plane, center, size), points)
    x = grid.points.reshape(-1, 3)
    outer = mesh.surface(0)
    edge = float(outer.edge_lengths.mean())
    distance = Reach(outer).within(x, NEAR_EDGES * edge)
    outside = (winding_numbers(x, outer) < 0.5) & (distance >= SKIP_EDGES * edge)
    k = float(solution["wavenumber"])
    formulation = formulation_of_record(solution)
    space = formulation.space(mesh)
    be = resolve(backend)
    coefficients = be.xp.asarray(pressure[incidence])
    scattered = np.full(len(x), np.nan, complex)
    step = max(1, _ENTRIES // len(pressure[incidence]))
    for near in (False, True):
        where = np.flatnonzero(outside & (np.isfinite(distance) == near))
        for s in range(0, len(where), step):  # bounded memory: a slab of the potential at a time
            rows = where[s:s + step]
            matrix = formulation.potential(space, x[rows], k, backend=be,
                                           order=NEAR_ORDER if near else None)
            scattered[rows] = be.asnumpy(matrix @ coefficients)
    d = np.asarray(solution["incident_directions"], float)[incidence]
    total = scattered + np.where(outside, np.exp(1j * k * (x @ d)), np.nan)
    shape = grid.points.shape[:2]
    return NearField(grid, float(solution["frequency_hz"]), k, d, scattered.reshape(shape),
                     total.reshape(shape))


def write_csv(path, field: NearField) -> None:
    """One row per grid point (rows of constant v, u fastest): its coordinates, the scattered
    and the total pressure (Pa for a unit incident wave; `nan` inside the body)."""
    x = field.grid.points.reshape(-1, 3)
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(CSV_HEADER)
        for p, s, t in zip(x, field.scattered.ravel(), field.total.ravel()):
            out.writerow([repr(float(c)) for c in p]
                         + [repr(float(v)) for v in (s.real, s.imag, t.real, t.imag)])
