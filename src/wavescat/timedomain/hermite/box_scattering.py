"""Scattering by a rigid box with Hermite-Taylor. The box's faces lie on grid planes, so the
Cartesian grid holds it exactly, and Hermite checks the BEM on a user geometry that has no
series, with no volume mesh at all (the DG check's spheroid needs one).

- The scattered field (p_s, v_s) on a quarter of the space: the incident wave runs along a box
  axis (the grid's x after a permutation), so the two planes through the box's centre along it
  are mirror planes of the field, i.e. rigid walls (the solver's own), and only the quarter
  y, z >= 0 (in the box's frame) is computed.
- The box: the total field u_s + u_inc meets a rigid face when its data at the dual nodes
  inside the box within half a cell of the face mirror those outside it (derivative k along the
  normal times (-1)^k times the field's wall parity: the solver's outer walls do the same), so
  ghost_s(g) = P (u_s + u_inc)(image) - u_inc(g). A dual node at an edge or corner has two or
  three images, one per face: the dual -> primary half step runs once per face direction
  ("pass"), its ghosts mirrored across that direction's faces, and a node of the surface takes
  the mean of its faces' passes (the exact mirror exists only for flat faces: the error stays at
  the edges, where the field is singular anyway). The first pass covers the grid, the others
  only the box's surface nodes, the one place that takes them.
- The outside: a sponge (every node's data damped by exp(-sigma dt) each step, sigma growing
  quadratically into the layer) in front of the domain's outer walls.

The incident pulse and the DFT at the probes are the DG run's (dg/scattering.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from math import factorial

import numpy as np

from ...errors import InputError
from ..dg.scattering import ScatteringResult, ScatteringSetup, record_probes
from .box_checks import check_rigid_box, grid_cell, incidence_axis
from .equations import acoustics
from .interpolation import hermite_matrix_1d
from .solver import HermiteSolver


@dataclass(frozen=True)
class BoxFrame:
    """The box's frame: local = flip * (x - center)[perm], the incident wave along local +x."""

    center: np.ndarray
    perm: np.ndarray
    flip: float

    def local(self, x) -> np.ndarray:
        loc = (np.atleast_2d(x) - self.center)[:, self.perm]
        loc[:, 0] *= self.flip
        return loc


def box_frame(setup: ScatteringSetup) -> BoxFrame:
    body = setup.body
    check_rigid_box(body.shape, body.kind)
    d = setup.direction
    axis = incidence_axis(d)
    perm = np.array([axis] + [a for a in range(3) if a != axis])
    return BoxFrame(body.center, perm, float(np.sign(d[axis])))


@dataclass(frozen=True)
class BoxGrid:
    """Grid of cell size h over local [-n0 h, n0 h] x [0, n1 h] x [0, n2 h] (`half` = (n0, n1,
    n2)), the box's faces at +-box[d] h; the sponge from sponge_start (local |coordinate| per
    axis) over `sponge_width`."""

    h: float
    half: tuple[int, int, int]
    box: tuple[int, int, int]
    sponge_start: np.ndarray
    sponge_width: float

    @property
    def cells(self) -> tuple[int, int, int]:
        return (2 * self.half[0], self.half[1], self.half[2])

    def coords(self, axis: int) -> np.ndarray:
        """Node coordinates (local) along an axis."""
        lo = -self.half[0] if axis == 0 else 0
        return (lo + np.arange(self.cells[axis] + 1)) * self.h


def box_grid(setup: ScatteringSetup, frame: BoxFrame, probes_local: np.ndarray,
             cells_per_wavelength: float, sponge_gap: float, sponge_width: float,
             cells_per_half_side: float = 0.0) -> BoxGrid:
    """The grid: h from the shortest wavelength and the box's half-sides (box_checks.grid_cell),
    made to divide them; the sponge
    `sponge_gap` shortest wavelengths beyond the farthest probe (or the box), `sponge_width`
    longest wavelengths thick."""
    c = setup.c
    lam_min, lam_max = 2 * np.pi * c / setup.omegas.max(), 2 * np.pi * c / setup.omegas.min()
    h = grid_cell(setup.body.half_axes(), lam_min, cells_per_wavelength, cells_per_half_side)
    half_sides = setup.body.half_axes()[frame.perm]
    box = half_sides / h
    reach = np.maximum(np.abs(probes_local).max(axis=0), half_sides)
    start = reach + sponge_gap * lam_min
    width = sponge_width * lam_max
    half = tuple(int(np.ceil((s + width) / h)) for s in start)
    return BoxGrid(h, half, tuple(int(round(b)) for b in box), start, width)


class BoxScattering:
    """Hermite-Taylor run of the scattered field of `setup` (a rigid box) on `grid`."""

    def __init__(self, setup: ScatteringSetup, frame: BoxFrame, grid: BoxGrid, m: int, *,
                 backend="cpu", precision="double", cfl: float = 0.9):
        self.setup, self.frame, self.grid = setup, frame, grid
        system = acoustics(setup.c, setup.rho)
        lengths = np.array(grid.cells) * grid.h
        self.solver = s = HermiteSolver(system, grid.cells, lengths, m, backend=backend,
                                        precision=precision, cfl=cfl, boundary="wall")
        self.xp, self.m = s.backend.xp, s.m
        n0, b = grid.half[0], grid.box
        # dual nodes (cells) of the box in the quarter: x cells [n0 - b0, n0 + b0), y [0, b1), z [0, b2)
        self._cells = (slice(n0 - b[0], n0 + b[0]), slice(0, b[1]), slice(0, b[2]))
        # the faces: (axis, the layer of cells inside, the layer outside, index of the layer in the box)
        faces = [(0, n0 - b[0], n0 - b[0] - 1, 0), (0, n0 + b[0] - 1, n0 + b[0], 2 * b[0] - 1),
                 (1, b[1] - 1, b[1], b[1] - 1), (2, b[2] - 1, b[2], b[2] - 1)]
        # (a box through the whole domain along an axis has no faces there: a slab, in tests)
        self._faces = [f for f in faces if 0 <= f[2] < grid.cells[f[0]]]
        self._mirror = [s.mirror_signs(d) for d in range(3)]
        # A ghost cell near an edge mirrors differently for each face's nodes: the dual -> primary
        # half step runs once per face direction ("pass"), the ghosts of that direction's face
        # layers mirrored across its faces (the rest: the mean of their faces' mirrors), and a
        # node of the surface takes the mean of its faces' passes
        shape = (2 * b[0], b[1], b[2])
        count = np.zeros(shape)
        layers = []
        for axis, _, _, at in self._faces:
            mask = np.zeros(shape)
            mask[tuple(slice(at, at + 1) if e == axis else slice(None) for e in range(3))] = 1
            layers.append(mask)
            count += mask
        self._passes = sorted({f[0] for f in self._faces})
        self._shares = {}
        for d in self._passes:
            mine = np.any([lay > 0 for f, lay in zip(self._faces, layers) if f[0] == d], axis=0)
            self._shares[d] = [
                self.xp.asarray(np.where(mine, float(f[0] == d) * lay, lay / np.maximum(count, 1)), dtype=s.dtype)
                for f, lay in zip(self._faces, layers)]
        # the surface's nodes: x [n0 - b0, n0 + b0], y [0, b1], z [0, b2]; each pass's weight
        self._surface = (slice(n0 - b[0], n0 + b[0] + 1), slice(0, b[1] + 1), slice(0, b[2] + 1))
        on = np.zeros((3, 2 * b[0] + 1, b[1] + 1, b[2] + 1))
        on[0, [0, -1]] = 1
        on[1, :, b[1]] = 1 if 1 in self._passes else 0
        on[2, :, :, b[2]] = 1 if 2 in self._passes else 0
        on[0][on.sum(axis=0) == 0] = 1  # (the inside and nodes off the box: zeroed or alike)
        self._weights = [self.xp.asarray(on[d] / on.sum(axis=0), dtype=s.dtype) for d in self._passes]
        # x of the dual nodes from the layer before the box to the layer after it
        self._xdual = (n0 - b[0] - 1 + np.arange(2 * b[0] + 2) + 0.5 - n0) * grid.h
        # h^k / k! (-1/c)^k: the scaled x-derivatives of S(t - x / c) from S's own
        self._scale = np.array([(-grid.h / setup.c) ** k / factorial(k)
                                for k in range(self.m + 1)])[:, None]
        self._sigma = self.xp.asarray(self._sponge_rate(), dtype=s.dtype)
        self._damp = None  # (dt, exp(-sigma dt))
        s.dual_to_primary, s.on_step = self._dual_to_primary, self._after_step

    # -- the box -------------------------------------------------------------------------
    def _incident(self, t: float):
        """(F, m+1, m+1, m+1, X, 1, 1) Hermite data of the incident wave at the dual nodes' x from
        the layer before the box to the one after (it varies along x only)."""
        setup, m = self.setup, self.m
        # local x is the distance along the incident direction from the box's centre
        delay = (self._xdual + float(setup.direction @ self.frame.center)) / setup.c
        p = self._scale * setup.signal_derivatives(t - delay, m)  # h^k / k! d^k/dx^k S(t - x / c)
        data = np.zeros((4, m + 1, m + 1, m + 1, len(delay), 1, 1))
        data[0, :, 0, 0, :, 0, 0] = p  # (no derivatives across the wave)
        data[1, :, 0, 0, :, 0, 0] = p / (setup.rho * setup.c)  # v along the wave: p / (rho c)
        return self.xp.asarray(data, dtype=self.solver.dtype)

    def _dual_to_primary(self, dual, t: float):
        """The primary data after the dual -> primary half step, one pass per face direction:
        the first over the whole grid, the others over the box's surface nodes only (the one
        place that takes them; the nodes off it see no cell of the box)."""
        inc = self._incident(t)
        first, *others = self._passes
        self._fill_box(dual, inc, self._shares[first])
        out = self.solver.wall_dual_to_primary(dual)
        if others:
            at = (slice(None),) * 4 + self._surface
            total = self._weights[0] * out[at]
            for d, w in zip(others, self._weights[1:]):
                self._fill_box(dual, inc, self._shares[d])
                total += w * self.solver.wall_dual_to_primary(dual, self._surface)
            out[at] = total
        return out

    def _fill_box(self, dual, inc, shares) -> None:
        """Set the dual data inside the box: each face layer's cells the mirrors across its
        face, weighted by `shares` (one array per face); zero deeper."""
        xp, cells = self.xp, self._cells
        ghost = xp.zeros_like(dual[(slice(None),) * 4 + cells])
        for (axis, inside, outside, at), share in zip(self._faces, shares):
            def layer(j, arr=dual, axis=axis):
                return arr[(slice(None),) * 4 + tuple(slice(j, j + 1) if e == axis else cells[e]
                                                      for e in range(3))]

            def inc_at(j, axis=axis):  # the incident data at that layer (x index from the box's)
                if axis != 0:
                    return inc[..., 1:-1, :, :]
                i = j - cells[0].start + 1
                return inc[..., i:i + 1, :, :]

            cut = tuple(slice(at, at + 1) if e == axis else slice(None) for e in range(3))
            mirrored = self._mirror[axis] * (layer(outside) + inc_at(outside)) - inc_at(inside)
            ghost[(slice(None),) * 4 + cut] += share[cut] * mirrored
        dual[(slice(None),) * 4 + cells] = ghost

    # -- the sponge and the inside -------------------------------------------------------
    def _sponge_rate(self) -> np.ndarray:
        g = self.grid
        sigma_max = 3.0 * self.setup.sponge_decay * self.setup.c / g.sponge_width
        total = 0.0
        for axis in range(3):
            x = np.abs(g.coords(axis))
            r = sigma_max * (np.clip((x - g.sponge_start[axis]) / g.sponge_width, 0.0, None)) ** 2
            total = total + r.reshape([-1 if e == axis else 1 for e in range(3)])
        return total

    def _after_step(self, state) -> None:
        n0, b = self.grid.half[0], self.grid.box
        state[(slice(None),) * 4 + (slice(n0 - b[0] + 1, n0 + b[0]), slice(0, b[1]), slice(0, b[2]))] = 0
        dt = self.solver.dt
        if self._damp is None or self._damp[0] != dt:
            self._damp = (dt, self.xp.exp(-self._sigma * dt))
        state *= self._damp[1]

    # -- the probes ----------------------------------------------------------------------
    def probe_operator(self, probes_local: np.ndarray):
        """(indices, weights): p at each probe = sum(state.ravel()[indices] * weights, axis=1)
        (the Hermite interpolant of the probe's cell; the probe mirrored into the quarter)."""
        g, m = self.grid, self.m
        pts = np.array(probes_local, float)
        pts[:, 1:] = np.abs(pts[:, 1:])
        hmat = hermite_matrix_1d(m)
        shape = self.solver.state.shape
        idx, wts = [], []
        for p in pts:
            axes = []
            for axis in range(3):
                u = (p[axis] - g.coords(axis)[0]) / g.h
                cell = int(np.clip(np.floor(u), 0, g.cells[axis] - 1))
                z = u - cell - 0.5
                zpow = z ** np.arange(2 * m + 2)
                w = (zpow @ hmat).reshape(2, m + 1)  # (vertex, derivative)
                axes.append((cell, w))
            (c0, w0), (c1, w1), (c2, w2) = axes
            a = np.indices((2, 2, 2, m + 1, m + 1, m + 1)).reshape(6, -1)
            flat = np.ravel_multi_index((np.zeros_like(a[0]), a[3], a[4], a[5], c0 + a[0], c1 + a[1],
                                         c2 + a[2]), shape)
            idx.append(flat)
            wts.append(w0[a[0], a[3]] * w1[a[1], a[4]] * w2[a[2], a[5]])
        return np.array(idx), np.array(wts)


def run_box_scattering(setup: ScatteringSetup, probes: np.ndarray, m: int, cells_per_wavelength: float,
                       backend="cpu", precision="double", cfl: float = 0.9, sponge_gap: float = 0.5,
                       sponge_width: float = 1.0, cells_per_half_side: float = 0.0
                       ) -> tuple[ScatteringResult, BoxScattering]:
    """The scattered amplitude at the probes for each of setup.omegas, and the run."""
    probes = np.atleast_2d(np.asarray(probes, float))
    body = setup.body
    if body.contains(probes).any():
        raise InputError(f"probe point {probes[body.contains(probes)][0].tolist()} lies inside the body")
    frame = box_frame(setup)
    local = frame.local(probes)
    grid = box_grid(setup, frame, local, cells_per_wavelength, sponge_gap, sponge_width,
                    cells_per_half_side)
    run = BoxScattering(setup, frame, grid, m, backend=backend, precision=precision, cfl=cfl)
    solver, xp = run.solver, run.xp
    idx, wts = run.probe_operator(local)
    idx_d, wts_d = xp.asarray(idx), xp.asarray(wts, dtype=solver.dtype)

    def advance(dt):
        solver.set_time_step(dt)
        solver.step(1)

    def pressure():
        return (solver.state.ravel()[idx_d] * wts_d).sum(axis=1)

    reach = float(np.max(np.linalg.norm(probes - body.center, axis=1)))
    label = f"Hermite m={run.m}, {'x'.join(map(str, grid.cells))} cells"
    amplitude, n_steps, dt = record_probes(setup, reach, solver.max_dt(cfl), advance, pressure,
                                           lambda: solver.time, label, xp)
    cells = int(np.prod(grid.cells))
    return ScatteringResult(probes, setup.omegas, amplitude, cells, cells * (run.m + 1) ** 3,
                            n_steps, dt, solver.time), run
