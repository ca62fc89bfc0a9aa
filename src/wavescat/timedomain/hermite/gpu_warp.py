"""Warp form of the monolithic kernel: a cell per 2m+2 lanes, one coefficient plane per lane.

Lane t of a cell owns the plane j0 = t of the (2m+2)^3 cube in registers, so d/dz1 and
d/dz2 are register shifts and d/dz0 is one warp shuffle from lane t+1: no shared memory
and no block barriers (the cells of a warp advance in lock step). The interpolation runs
along axes 2 and 1 in registers and along axis 0 through shuffles. Straight-line statements
are generated per (m, q, system) into gpu_warp.cu; `emulate` runs the same statements in NumPy with the
lanes as an array axis, which the tests compare with the Numba half step.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from .gpu_common import (compile_module, interpolation_operator, interpolation_statements, literal, render,
                         with_literals)

#: registers a lane may hold: fields x (2m+2)^2 plane values
MAX_VALUES = 64


def _p(f, j1, j2):
    return f"p{f}_{j1}_{j2}"


def _interp_2d(m: int, n_fields: int) -> list[str]:
    """Axis-2 then axis-1 passes of H~ inside a lane's plane (literal operator, zeros dropped)."""
    n = 2 * m + 2
    body = []
    for axis in (2, 1):
        for f in range(n_fields):
            for other in range(n):
                def at(i, f=f, other=other, axis=axis):
                    return _p(f, other, i) if axis == 2 else _p(f, i, other)
                body += interpolation_statements(m, at)
    return body


def _interp_axis0(m: int, n_fields: int) -> list[str]:
    """Across lanes: plane t = sum_k h_t[k] (P_k + sgn_t (-1)^k P_(m+1+k)), P_i from lane base+i."""
    n, m1 = 2 * m + 2, m + 1
    body = []
    for f in range(n_fields):
        for j1, j2 in itertools.product(range(n), repeat=2):
            x = _p(f, j1, j2)
            terms = []
            for k in range(m1):
                body.append(f"xa{k} = SHFL({x}, {k})")
                body.append(f"xb{k} = SHFL({x}, {m1 + k})")
                terms.append(f"h{k} * (xa{k} + sg{k} * xb{k})")
            body.append(f"{x} = " + " + ".join(terms))
    return body


def _stage(m: int, q: int, couplings, n_fields: int):
    """[(e12, d12, statements)]: the entry (j1, j2) of a Taylor stage, run when
    e12 <= Q - s and d12 <= TOP - s (uniform over the warp: the lane's j0 is left out)."""
    n, m1 = 2 * m + 2, m + 1
    out = []
    for j1, j2 in itertools.product(range(n), repeat=2):
        e12 = max(0, j1 - m) + max(0, j2 - m)
        st = [f"nb{g} = SHFL_DOWN({_p(g, j1, j2)})" for g in range(n_fields)]
        for f in range(n_fields):
            terms = []
            for c, (d, ff, g, _) in enumerate(couplings):
                if ff != f:
                    continue
                if d == 0:
                    terms.append(f"w{c} * nb{g}")  # w of axis 0 is zero on the last lane
                elif d == 1 and j1 + 1 < n:
                    terms.append(f"w{c} * {_p(g, j1 + 1, j2)}")
                elif d == 2 and j2 + 1 < n:
                    terms.append(f"w{c} * {_p(g, j1, j2 + 1)}")
            st.append(f"{_p(f, j1, j2)} = " + (" + ".join(terms) if terms else "L(0.0)"))
            if j1 < m1 and j2 < m1:
                st.append(f"a{f}_{j1}_{j2} = a{f}_{j1}_{j2} + {_p(f, j1, j2)}")
        out.append((e12, j1 + j2, st))
    return out


def emulate(src_cells: np.ndarray, lam, m: int, q: int, couplings) -> np.ndarray:
    """NumPy run of the generated statements for one cell: lanes are axis 0 of every value."""
    n_fields, n, m1 = src_cells.shape[0], 2 * m + 2, m + 1
    top = 3 * (2 * m + 1)
    hleft, finv = interpolation_operator(m)
    t = np.arange(n)
    def lanes(x):
        return np.broadcast_to(np.asarray(x, dtype=float), (n,))

    env = {"L": lambda x: x, "SHFL": lambda x, k: np.full(n, lanes(x)[k]),
           "SHFL_DOWN": lambda x: np.append(lanes(x)[1:], lanes(x)[-1:])}
    a0, k0 = t // m1, t % m1
    for f, a1, k1, a2, k2 in itertools.product(range(n_fields), range(2), range(m1), range(2), range(m1)):
        env[_p(f, a1 * m1 + k1, a2 * m1 + k2)] = src_cells[f, k0, k1, k2, a0, a1, a2].astype(float)
    for k in range(m1):
        env[f"h{k}"] = hleft[t, k]
        env[f"sg{k}"] = np.where(t % 2 == 0, 1.0, -1.0) * (-1) ** k
    exec("\n".join(_interp_2d(m, n_fields) + _interp_axis0(m, n_fields)), env)  # noqa: S102
    for f, j1, j2 in itertools.product(range(n_fields), range(m1), range(m1)):
        env[f"a{f}_{j1}_{j2}"] = env[_p(f, j1, j2)].copy()
    stage = _stage(m, q, couplings, n_fields)
    for s in range(1, q + 1):
        for c, (d, _, _, _) in enumerate(couplings):
            env[f"w{c}"] = lam[c] / s * (np.where(t + 1 < n, 1.0, 0.0) if d == 0 else 1.0)
        for e12, d12, st in stage:
            if e12 <= q - s and d12 <= top - s:
                exec("\n".join(st), env)  # noqa: S102
    out = np.empty((n_fields, m1, m1, m1))
    for f, j1, j2 in itertools.product(range(n_fields), range(m1), range(m1)):
        out[f, :, j1, j2] = (env[f"a{f}_{j1}_{j2}"] * finv[t] * finv[j1] * finv[j2])[:m1]
    return out


def kernel_source(m: int, q: int, couplings, n_fields: int, dtype) -> str:
    """CUDA source of `hermite_warp` (gpu_warp.cu) for one (m, q, system, dtype)."""
    n, m1 = 2 * m + 2, m + 1
    cpw = 32 // n  # cells per warp

    def c(lines):
        lines = with_literals(lines, dtype)
        lines = [re.sub(r"SHFL_DOWN\(([^)]*)\)", r"__shfl_down_sync(FULL, \1, 1)", ln) for ln in lines]
        lines = [re.sub(r"SHFL\(([^,]*), (\d+)\)", r"__shfl_sync(FULL, \1, base + \2)", ln) for ln in lines]
        return [f"{ln};" for ln in lines]

    # straight-line code: its registers and statements are per coefficient of a lane's plane
    hleft, finv = interpolation_operator(m)
    planes = [_p(f, j1, j2) for f in range(n_fields) for j1, j2 in itertools.product(range(n), repeat=2)]
    accs = [f"a{f}_{j1}_{j2}" for f in range(n_fields) for j1, j2 in itertools.product(range(m1), repeat=2)]
    temps = ([f"e{k}" for k in range(m1)] + [f"o{k}" for k in range(m1)] + [f"xa{k}" for k in range(m1)]
             + [f"xb{k}" for k in range(m1)] + [f"nb{g}" for g in range(n_fields)])
    loads = []
    for f, a1, k1, a2, k2 in itertools.product(range(n_fields), range(2), range(m1), range(2), range(m1)):
        loads.append(f"{_p(f, a1 * m1 + k1, a2 * m1 + k2)} = __ldg(src + (long long)(((({f} * M1 + k0) * M1 + {k1})"
                     f" * M1 + {k2})) * plane + (x0 * n1 + x1[{a1}]) * n2 + x2[{a2}])")
    stages = []
    for e12, d12, st in _stage(m, q, couplings, n_fields):
        stages += [f"if ({e12} <= Q - s && {d12} <= TOP - s) {{", *c(st), "}"]
    stores = [f"dst[(long long)((({f} * M1 + t) * M1 + {j1}) * M1 + {j2}) * plane + cell] = "
              f"a{f}_{j1}_{j2} * (ft * {literal(finv[j1] * finv[j2], dtype)});"
              for f, j1, j2 in itertools.product(range(n_fields), range(m1), range(m1))]
    return render(
        "gpu_warp.cu", dtype, {"M": m, "M1": m1, "N": n, "Q": q, "TOP": 3 * (2 * m + 1)},
        HTAB=", ".join(literal(v, dtype) for v in hleft.ravel()), FTAB=", ".join(literal(v, dtype) for v in finv),
        CELLS=str(cpw), LAST_SLOT=str(cpw - 1), BUSY_LANES=str(cpw * n),
        PLANES=", ".join(planes), ACCS=", ".join(accs), TEMPS=", ".join(temps),
        WEIGHTS=", ".join(f"w{i}" for i in range(len(couplings))),
        OPERATOR=", ".join([f"h{k}" for k in range(m1)] + [f"sg{k}" for k in range(m1)]),
        LAMS=[f"const T lam{i} = lam[{i}];" for i in range(len(couplings))], LOADS=c(loads),
        OPERATOR_INIT=[f"h{k} = Hw[t * M1 + {k}]; sg{k} = (T)(((t % 2 == 0) ? 1 : -1) * {(-1) ** k});"
                       for k in range(m1)],
        INTERPOLATE=c(_interp_2d(m, n_fields) + _interp_axis0(m, n_fields)),
        ACCS_INIT=[f"{a} = {a.replace('a', 'p', 1)};" for a in accs],
        WEIGHTS_SET=[f"w{i} = lam{i} * inv{' * last' if d == 0 else ''};"
                     for i, (d, _, _, _) in enumerate(couplings)],
        STAGES=stages, STORES=stores)


class WarpKernel:
    """The warp-form monolithic half step for one (m, q, system, dtype)."""

    threads = 128

    def __init__(self, xp, m: int, q: int, system, dtype):
        self.m, self.q = m, q
        self.cells = (self.threads // 32) * (32 // (2 * m + 2))
        self.module = compile_module(xp, kernel_source(m, q, tuple(system.couplings()), system.n_fields, dtype))

    def half_step(self, src, dst, lam, shift: int) -> None:
        n0, n1, n2 = src.shape[-3:]
        blocks = (n0 * n1 * n2 + self.cells - 1) // self.cells
        self.module.get_function("hermite_warp")(
            (blocks,), (self.threads,),
            (src, dst, lam, np.int32(shift), np.int32(n0), np.int32(n1), np.int32(n2)))
