"""Warp form of the monolithic kernel: a cell per 2m+2 lanes, one coefficient plane per lane.

Lane t of a cell owns the plane j0 = t of the (2m+2)^3 cube in registers, so d/dz1 and
d/dz2 are register shifts and d/dz0 is one warp shuffle from lane t+1: no shared memory
and no block barriers (the cells of a warp advance in lock step). The interpolation runs
along axes 2 and 1 in registers and along axis 0 through shuffles. Straight-line source
is generated per (m, q, system); `emulate` runs the same statements in NumPy with the
lanes as an array axis, which the tests compare with the Numba half step.
"""
from __future__ import annotations

import itertools
import re

import numpy as np

from .gpu_common import compile_module, interpolation_operator, interpolation_statements

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
    single = np.dtype(dtype) == np.float32
    ctype = "float" if single else "double"
    n, m1 = 2 * m + 2, m + 1
    cpw = 32 // n  # cells per warp
    lit = (lambda x: f"{float(x)!r}f") if single else (lambda x: f"{float(x)!r}")

    def c(lines):
        lines = [re.sub(r"\bL\(([^)]*)\)", lambda mt: lit(mt.group(1)), ln) for ln in lines]
        lines = [re.sub(r"SHFL_DOWN\(([^)]*)\)", r"__shfl_down_sync(FULL, \1, 1)", ln) for ln in lines]
        lines = [re.sub(r"SHFL\(([^,]*), (\d+)\)", r"__shfl_sync(FULL, \1, base + \2)", ln) for ln in lines]
        return "\n".join(f"        {ln};" for ln in lines)

    hleft, finv = interpolation_operator(m)
    planes = [_p(f, j1, j2) for f in range(n_fields) for j1, j2 in itertools.product(range(n), repeat=2)]
    accs = [f"a{f}_{j1}_{j2}" for f in range(n_fields) for j1, j2 in itertools.product(range(m1), repeat=2)]
    temps = ([f"e{k}" for k in range(m1)] + [f"o{k}" for k in range(m1)] + [f"xa{k}" for k in range(m1)]
             + [f"xb{k}" for k in range(m1)] + [f"nb{g}" for g in range(n_fields)])
    loads = []
    for f, a1, k1, a2, k2 in itertools.product(range(n_fields), range(2), range(m1), range(2), range(m1)):
        loads.append(f"{_p(f, a1 * m1 + k1, a2 * m1 + k2)} = __ldg(src + (long long)(((({f} * M1 + k0) * M1 + {k1}) * M1 + {k2})) * plane + "
                     f"(x0 * n1 + x1[{a1}]) * n2 + x2[{a2}])")
    stage_src = []
    for e12, d12, st in _stage(m, q, couplings, n_fields):
        stage_src.append(f"        if ({e12} <= Q - s && {d12} <= TOP - s) {{\n{c(st)}\n        }}")
    w_set = "\n".join(f"        w{i} = lam{i} * inv{' * last' if d == 0 else ''};"
                      for i, (d, _, _, _) in enumerate(couplings))
    stores = []
    for f, j1, j2 in itertools.product(range(n_fields), range(m1), range(m1)):
        stores.append(f"        dst[(long long)((({f} * M1 + t) * M1 + {j1}) * M1 + {j2}) * plane + cell] = "
                      f"a{f}_{j1}_{j2} * (ft * {lit(finv[j1] * finv[j2])})")
    htab = ", ".join(lit(v) for v in hleft.ravel())
    ftab = ", ".join(lit(v) for v in finv)
    return f"""
typedef {ctype} T;
#define M {m}
#define M1 {m1}
#define N {n}
#define Q {q}
#define TOP {3 * (2 * m + 1)}
#define FULL 0xffffffffu
__constant__ T Hw[N * M1] = {{{htab}}};
__constant__ T Fw[N] = {{{ftab}}};

extern "C" __global__ void __launch_bounds__(128)
hermite_warp(const T* __restrict__ src, T* __restrict__ dst, const T* __restrict__ lam,
             int shift, int n0, int n1, int n2) {{
    const int lane = threadIdx.x & 31;
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int slot = lane / N < {cpw} ? lane / N : {cpw - 1};   // idle lanes shadow the last cell
    const int t = lane - slot * N < N ? lane - slot * N : N - 1;
    const int base = slot * N;
    const int ncells = n0 * n1 * n2;
    const long long plane = ncells;
    int cell = warp * {cpw} + slot;
    const bool store = cell < ncells && lane < {cpw * n};
    cell = cell < ncells ? cell : ncells - 1;
    const int i2 = cell % n2, i1 = (cell / n2) % n1, i0 = cell / (n2 * n1);
    const int a0 = t / M1, k0 = t % M1;
    const int x0 = (i0 + shift + a0 + n0) % n0;
    int x1[2], x2[2];
    #pragma unroll
    for (int a = 0; a < 2; ++a) {{
        x1[a] = (i1 + shift + a + n1) % n1;
        x2[a] = (i2 + shift + a + n2) % n2;
    }}
    T {", ".join(planes)};
    T {", ".join(accs)};
    T {", ".join(temps)};
    T {", ".join(f"w{i}" for i in range(len(couplings)))};
    T {", ".join(f"h{k}" for k in range(m1))}, {", ".join(f"sg{k}" for k in range(m1))};
{chr(10).join(f"    const T lam{i} = lam[{i}];" for i in range(len(couplings)))}
    const T last = (t + 1 < N) ? (T)1 : (T)0;
    const T ft = Fw[t];
    {{
{c(loads)}
    }}
{chr(10).join(f"    h{k} = Hw[t * M1 + {k}]; sg{k} = (T)(((t % 2 == 0) ? 1 : -1) * {(-1) ** k});" for k in range(m1))}
    {{
{c(_interp_2d(m, n_fields) + _interp_axis0(m, n_fields))}
    }}
{chr(10).join(f"    {a} = {a.replace('a', 'p', 1)};" for a in accs)}
    #pragma unroll 1
    for (int s = 1; s <= Q; ++s) {{
        const T inv = (T)1 / (T)s;
{w_set}
{chr(10).join(stage_src)}
    }}
    if (store && t < M1) {{
{chr(10).join(ln + ";" for ln in stores)}
    }}
}}
"""


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
