"""Convergence study on a standing mode of a rigid box: the exact solution is
p = cos(l pi x / Lx) cos(m pi y / Ly) cos(n pi z / Lz) cos(w t), with v from rho v_t = -grad p."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...progress import progress
from .mesh import box_tet_mesh
from .reference import check_order
from .solver import AcousticsDG
from .space import BC_RIGID, build_space


def cavity_mode(xyz, t: float, modes=(1, 1, 1), size=(1.0, 1.0, 1.0), rho: float = 1.0, c: float = 1.0):
    """Exact (p, vx, vy, vz) of the rigid-box mode at points xyz (3, ...) and time t."""
    kk = np.pi * np.asarray(modes, float) / np.asarray(size, float)
    w = c * np.linalg.norm(kk)
    cs = [np.cos(kk[d] * xyz[d]) for d in range(3)]
    sn = [np.sin(kk[d] * xyz[d]) for d in range(3)]
    p = cs[0] * cs[1] * cs[2] * np.cos(w * t)
    amp = np.sin(w * t) / (rho * w) if w > 0 else 0.0
    v = [kk[0] * sn[0] * cs[1] * cs[2] * amp, kk[1] * cs[0] * sn[1] * cs[2] * amp,
         kk[2] * cs[0] * cs[1] * sn[2] * amp]
    return np.stack([p, *v])


@dataclass(frozen=True)
class ConvergenceRow:
    order: int
    elements: int
    h: float
    error_l2: float
    observed_order: float  # from the previous (coarser) row of the same order; nan for the first


def cavity_error(order: int, cells: int, t_final: float, backend="cpu", precision="double",
                 cfl: float = 0.5) -> tuple[int, float, float]:
    """(elements, h, L2 pressure error at t_final) on the structured cells^3 box mesh."""
    mesh = box_tet_mesh(cells)
    space = build_space(mesh, order, BC_RIGID)
    dg = AcousticsDG(space, backend, precision)
    dg.set_state(cavity_mode(space.xyz, 0.0))
    dg.run(t_final, cfl=cfl)
    return mesh.n_elements, mesh.h(), dg.l2_error(cavity_mode(space.xyz, t_final)[0])


def convergence_study(orders, cells_list, t_final: float = 0.3, backend="cpu",
                      precision="double", cfl: float = 0.5) -> list[ConvergenceRow]:
    rows = []
    with progress(len(orders) * len(cells_list), f"DG convergence N={orders}", "meshes") as bar:
        for order in orders:
            check_order(order)
            prev = None
            for cells in cells_list:
                k, h, err = cavity_error(order, cells, t_final, backend, precision, cfl)
                rate = np.log(prev[1] / err) / np.log(prev[0] / h) if prev else float("nan")
                rows.append(ConvergenceRow(order, k, h, err, float(rate)))
                prev = (h, err)
                bar.update(1)
    return rows
