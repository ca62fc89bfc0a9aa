"""The Hermite-Taylor time stepper on a Cartesian grid (CPU or GPU).

A full step is two half steps: primary nodes -> cell centres (the dual grid) over
dt/2, then dual -> primary over dt/2 (Goodrich, Hagstrom and Lorenz 2006).

Each axis is periodic (n nodes) or bounded by rigid walls at 0 and L (n+1 nodes, for
systems with a wall parity, i.e. acoustics). A wall needs no special kernel: before the
dual -> primary half step the dual data gets one mirrored ghost node past each wall
(derivative k along the normal times (-1)^k times the field's parity), and the same
periodic kernels run on the padded array.
"""
from __future__ import annotations

import math

import numpy as np

from ...backend import get_backend, real_dtype
from ...errors import InputError
from ...progress import progress
from . import cpu, propagator
from .equations import LinearSystem
from .gpu import FORMS, make_kernels
from .gpu_propagator import Tile, fit_tile
from .interpolation import check_degree, hermite_matrix_1d

#: A half step is stable while no wave crosses from a cell face to the cell centre:
#: max_d (speed_d * dt / h_d) <= 1.
CFL_LIMIT = 1.0
BOUNDARIES = ("periodic", "wall")


def default_stages(m: int) -> int:
    """q = 3(2m+1): the Taylor series is then exact for the degree-(2m+1) tensor interpolant."""
    return 3 * (2 * m + 1)


class HermiteSolver:
    """Evolve `system` with degree-m Hermite data on an (n0, n1, n2)-cell periodic box.

    state: (F, m+1, m+1, m+1, n0, n1, n2) array of the backend, entry [f, k0, k1, k2, i]
    = h0^k0 h1^k1 h2^k2 / (k0! k1! k2!) d^k u_f / dx^k at node i * h.
    q: Taylor stages (default 3(2m+1)); cfl: max_d speed_d dt / h_d, at most CFL_LIMIT.

    kernel (one of gpu.FORMS) picks how a half step is computed; the default (None) takes
    "propagator" where it is the method exactly: one advected field and q >= 3(2m+1), where
    the Taylor series is a translation and the half step three 1D operators (propagator.py;
    on the GPU gpu_propagator.py: 10-18x fewer FLOPs than the recursion at m = 1..3, and
    memory-bound). Everywhere else it takes "monolithic", the fastest recursion kernel that
    fits (gpu.py). "propagator" where it does not apply is a InputError. On the CPU the
    propagator runs in NumPy and every recursion form in the Numba kernel (cpu.py). The
    chosen form is `self.kernel`. cells_per_block (the shared forms' cap) and tile (the
    propagator's) tune the GPU kernels; None: their defaults.
    """

    def __init__(self, system: LinearSystem, cells, lengths, m: int, *, q: int | None = None,
                 cfl: float = 0.9, backend: str = "cpu", precision: str = "double",
                 boundary: str = "periodic", kernel: str | None = None,
                 cells_per_block: int | None = None, tile: Tile | None = None):
        self.m = check_degree(m)
        self.q = default_stages(self.m) if q is None else q
        if isinstance(self.q, bool) or not isinstance(self.q, (int, np.integer)) or self.q < 1:
            raise InputError(f"hermite stages q = {q!r}: must be an integer >= 1")
        walls = tuple(np.broadcast_to(np.asarray(boundary, dtype=object), 3))
        if any(b not in BOUNDARIES for b in walls):
            raise InputError(f"hermite boundary = {boundary!r}: each axis must be one of "
                              f"{', '.join(BOUNDARIES)}")
        self.walls = tuple(b == "wall" for b in walls)
        if any(self.walls) and system.wall_parity is None:
            raise InputError(f"hermite boundary = {boundary!r}: the {system.name} equation has no "
                              "rigid-wall condition; only periodic grids are supported for it")
        cells = tuple(int(c) for c in np.broadcast_to(cells, 3))
        if min(cells) < 2:
            raise InputError(f"hermite cells = {cells}: need at least 2 cells per axis")
        self.cells = cells
        self.lengths = tuple(float(x) for x in np.broadcast_to(lengths, 3))
        if min(self.lengths) <= 0:
            raise InputError(f"hermite lengths = {self.lengths}: must be positive")
        self.h = tuple(L / n for L, n in zip(self.lengths, cells))
        self.system = system
        self.speeds = system.max_speeds()
        self.backend = get_backend(backend)
        self.dtype = real_dtype(precision)
        if kernel is not None and kernel not in FORMS:
            raise InputError(f"hermite kernel = {kernel!r}: must be one of {', '.join(FORMS)}")
        self.kernel = self._resolve_form(kernel)
        self.dt = self.max_dt(cfl)
        xp = self.backend.xp
        self.nodes = tuple(n + 1 if w else n for n, w in zip(cells, self.walls))
        self.state = xp.zeros((system.n_fields,) + (self.m + 1,) * 3 + self.nodes, dtype=self.dtype)
        self._work = xp.empty_like(self.state)
        self.time = 0.0
        self._gpu = None
        self._params = None  # (dt, what the kernels take for it)
        # hooks of an embedded body (box_scattering.py): dual_to_primary(dual data, its time)
        # replaces the second half step and returns the new primary data; on_step(state) runs
        # after each step
        self.dual_to_primary = self.on_step = None
        if self.backend.is_gpu:
            self._gpu = make_kernels(xp, self.m, self.q, system, self.dtype, self.kernel,
                                     cells_per_block=cells_per_block, tile=tile)

    def _resolve_form(self, kernel: str | None) -> str:
        if kernel is None:
            usable = propagator.unavailable_reason(self.system, self.m, self.q) is None
            if usable and self.backend.is_gpu:
                try:
                    fit_tile(self.m, np.dtype(self.dtype).itemsize, Tile())
                except InputError:  # a degree too large for the kernel's shared memory
                    usable = False
            return "propagator" if usable else "monolithic"
        if kernel == "propagator":
            propagator.require(self.system, self.m, self.q)
        return kernel

    # -- time step ----------------------------------------------------------------
    def cfl_number(self, dt: float) -> float:
        return float(max(s * dt / h for s, h in zip(self.speeds, self.h)))

    def max_dt(self, cfl: float) -> float:
        if not (0 < cfl <= CFL_LIMIT):
            raise InputError(f"hermite cfl = {cfl!r}: must be in (0, {CFL_LIMIT}] (stability limit "
                              f"max_d speed_d*dt/h_d <= {CFL_LIMIT}: a half step must not carry a "
                              "wave from a cell face to its centre)")
        return cfl / max(s / h for s, h in zip(self.speeds, self.h))

    def set_time_step(self, dt: float) -> None:
        c = self.cfl_number(dt)
        if not (dt > 0) or c > CFL_LIMIT * (1 + 1e-12):
            raise InputError(f"hermite dt = {dt!r} gives CFL {c:.4g} beyond the stability limit "
                              f"{CFL_LIMIT} (max_d speed_d*dt/h_d)")
        self.dt = float(dt)

    def _lam(self, tau: float) -> np.ndarray:
        """Coupling factors A_d[f, g] * tau / h_d for the kernels, in coupling order."""
        return np.array([a * tau / self.h[d] for d, _, _, a in self.system.couplings()])

    def _parameters(self, lam: np.ndarray):
        """What the kernels take for one dt: the 1D operators of the translation
        (propagator) or the coupling factors (recursion), on the kernels' device."""
        if self.kernel == "propagator":
            ops = propagator.operators(self.m, propagator.shifts(self.system, lam))
            return self._gpu.parameters(ops) if self._gpu is not None else ops
        return self.backend.xp.asarray(lam, dtype=self.dtype) if self._gpu is not None else lam

    def half_step(self, src, dst, shift: int) -> None:
        if self._params is None or self._params[0] != self.dt:  # once per dt
            self._params = (self.dt, self._parameters(self._lam(0.5 * self.dt)))
        params = self._params[1]
        if self._gpu is not None:
            self._gpu.half_step(src, dst, params, shift)
        elif self.kernel == "propagator":
            propagator.half_step(src, dst, params, shift)
        else:
            cpl = self.system.couplings()
            cd, cf, cg = (np.array([c[i] for c in cpl], dtype=np.int64) for i in range(3))
            cpu.half_step(src, dst, hermite_matrix_1d(self.m), cd, cf, cg, params, self.q, shift)

    def step(self, n: int = 1) -> None:
        bar = progress(n, f"Hermite m={self.m}, {'x'.join(map(str, self.cells))} cells", "steps")
        for _ in range(n):
            self.half_step(self.state, self._work, 0)    # primary -> dual
            if self.dual_to_primary is not None:
                self.state[...] = self.dual_to_primary(self._work, self.time + 0.5 * self.dt)
            elif not any(self.walls):
                self.half_step(self._work, self.state, -1)   # dual -> primary
            else:
                self._wall_half_step()
            self.time += self.dt
            if self.on_step is not None:
                self.on_step(self.state)
            bar.update(1)
        bar.close()

    def _wall_half_step(self) -> None:
        self.state[...] = self.wall_dual_to_primary(self._work)

    def mirror_signs(self, d: int):
        """(F, m+1, m+1, m+1, 1, 1, 1) signs of the data mirrored across a rigid wall normal to
        axis d: the field's wall parity times (-1)^k for derivative k along d."""
        k = np.arange(self.m + 1).reshape([-1 if e == d else 1 for e in range(3)])
        sign = self.system.wall_parity[d].reshape(-1, 1, 1, 1) * (-1.0) ** k
        return self.backend.xp.asarray(sign[..., None, None, None], dtype=self.dtype)

    def wall_dual_to_primary(self, dual, block=None):
        """The primary data from `dual` by the dual -> primary half step, with mirrored ghosts
        past the walls (periodic axes: rolled by one). `block`: three slices of nodes (steps of
        1) to compute only those, from the dual cells around them (a wall axis only, where a
        slice is not the whole axis); default every node."""
        xp = self.backend.xp
        full = tuple(slice(0, n) for n in self.nodes)
        block = full if block is None else tuple(slice(*b.indices(n)[:2]) for b, n in zip(block, self.nodes))
        for d, (wall, n) in enumerate(zip(self.walls, self.cells)):
            ax = 4 + d
            lo, hi = block[d].start, block[d].stop  # nodes lo..hi-1: cells lo-1..hi-1
            if not wall:
                if (lo, hi) != (full[d].start, full[d].stop):
                    raise InputError(f"hermite nodes {lo}..{hi - 1} along periodic axis {d}: a "
                                     "block of nodes is cut only along walls")
                dual = xp.roll(dual, 1, axis=ax)  # then node j sits between dual j-1 and j
                continue
            if hi <= lo:
                raise InputError(f"hermite nodes {lo}..{hi - 1} along axis {d}: an empty block")
            sign = self.mirror_signs(d)
            def part(a, b, arr=dual, ax=ax):  # plain slices: the same on NumPy and CuPy
                return arr[(slice(None),) * ax + (slice(a, b),)]
            pieces = [sign * part(0, 1)] if lo == 0 else []
            pieces.append(part(max(lo - 1, 0), min(hi, n)))
            if hi == n + 1:
                pieces.append(sign * part(n - 1, n))
            dual = xp.concatenate(pieces, axis=ax) if len(pieces) > 1 else pieces[0]
        dual = xp.ascontiguousarray(dual)
        out = xp.empty_like(dual)
        self.half_step(dual, out, 0)
        return out[(slice(None),) * 4 + tuple(slice(0, b.stop - b.start) for b in block)]

    def run_to(self, t_end: float, cfl: float | None = None) -> int:
        """Advance to exactly t_end with equal steps no larger than the current dt (or cfl's)."""
        dt_max = self.max_dt(cfl) if cfl is not None else self.dt
        n = max(1, math.ceil((t_end - self.time) / dt_max * (1 - 1e-12)))
        self.set_time_step((t_end - self.time) / n)
        self.step(n)
        return n

    # -- data ---------------------------------------------------------------------
    def node_coords(self):
        return [np.arange(n) * h for n, h in zip(self.nodes, self.h)]

    def set_state(self, data: np.ndarray) -> None:
        data = np.asarray(data)
        if data.shape != self.state.shape:
            raise InputError(f"hermite state shape {data.shape}: expected {self.state.shape}")
        self.state[...] = self.backend.xp.asarray(data, dtype=self.dtype)

    def get_state(self) -> np.ndarray:
        return self.backend.asnumpy(self.state)
