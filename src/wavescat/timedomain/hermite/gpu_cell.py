"""Register form of the monolithic kernel: one thread per cell, straight-line code.

For small polynomial cubes (advection, m <= 2) a whole cell's coefficients fit in
registers, so the Taylor stages need no shared memory and no barriers, and because the
source is generated per (m, q, system), the stage loop is unrolled too: every
coefficient a stage does not need (it can no longer reach the centre data, or it is
zero by degree) is dropped at generation time, and the 1D operator's zeros vanish.
The body is generated once as plain arithmetic, rendered both as CUDA (into gpu_cell.cu) and
as Python (`emulate`, used by the tests to check the generated code on the CPU).
"""
from __future__ import annotations

import itertools

import numpy as np

from .gpu_common import compile_module, interpolation_operator, interpolation_statements, render, with_literals

#: largest fields x (2m+2)^3 a thread may hold (beyond, registers spill)
MAX_VALUES = 256


def _name(f, j):
    return f"c{f}_{j[0]}_{j[1]}_{j[2]}"


def generate_body(m: int, q: int, couplings, n_fields: int):
    """(body statements, accumulator names) in a C/Python-neutral form; L(x) is a literal.

    Inputs: c{f}_{p0}_{p1}_{p2} = vertex data at p = a*(m+1)+k per axis; lam{c} (runtime).
    Outputs: a{f}_{k0}_{k1}_{k2} = centre data (scaled derivatives), k <= m.
    """
    n, m1, top = 2 * m + 2, m + 1, 3 * (2 * m + 1)
    _, finv = interpolation_operator(m)
    body = []
    idx = list(itertools.product(range(n), repeat=3))
    for axis in range(3):  # interpolate along each axis in turn
        for f in range(n_fields):
            for rest in itertools.product(range(n), repeat=2):
                def at(p, f=f, rest=rest, axis=axis):
                    j = list(rest)
                    j.insert(axis, p)
                    return _name(f, j)
                body += interpolation_statements(m, at)
    for f in range(n_fields):
        for j in itertools.product(range(m1), repeat=3):
            body.append(f"a{f}_{j[0]}_{j[1]}_{j[2]} = {_name(f, j)}")
    # Taylor stages in derivative form: c_s[j] = (1/s) sum lam * c_(s-1)[j + e_d], in place in
    # ascending order (only higher indices are read), over the coefficients still needed
    for s in range(1, q + 1):
        for c in range(len(couplings)):
            body.append(f"w{c} = lam{c} * L({1.0 / s!r})")
        for j in idx:
            excess = sum(max(0, x - m) for x in j)
            if excess > q - s or sum(j) > top - s:
                continue
            for f in range(n_fields):
                terms = []
                for c, (d, ff, g, _) in enumerate(couplings):
                    if ff == f and j[d] + 1 < n:
                        jj = list(j)
                        jj[d] += 1
                        terms.append(f"w{c} * {_name(g, jj)}")
                body.append(f"{_name(f, j)} = " + (" + ".join(terms) if terms else "L(0.0)"))
                if max(j) <= m:
                    body.append(f"a{f}_{j[0]}_{j[1]}_{j[2]} = a{f}_{j[0]}_{j[1]}_{j[2]} + {_name(f, j)}")
    for f in range(n_fields):
        for j in itertools.product(range(m1), repeat=3):
            scale = finv[j[0]] * finv[j[1]] * finv[j[2]]
            if scale != 1.0:
                body.append(f"a{f}_{j[0]}_{j[1]}_{j[2]} = a{f}_{j[0]}_{j[1]}_{j[2]} * L({float(scale)!r})")
    return body


def emulate(src_cells: np.ndarray, lam, m: int, q: int, couplings) -> np.ndarray:
    """Run the generated body in NumPy: (F, m+1, m+1, m+1, 2, 2, 2, cells) vertex data -> centre data."""
    n_fields, m1 = src_cells.shape[0], m + 1
    env = {"L": lambda x: x}
    env.update({f"lam{c}": v for c, v in enumerate(lam)})
    for f, a0, a1, a2, k0, k1, k2 in itertools.product(range(n_fields), *[range(2)] * 3, *[range(m1)] * 3):
        env[_name(f, (a0 * m1 + k0, a1 * m1 + k1, a2 * m1 + k2))] = src_cells[f, k0, k1, k2, a0, a1, a2]
    exec("\n".join(generate_body(m, q, couplings, n_fields)), env)  # noqa: S102 - our own generated code
    return np.array([[[[env[f"a{f}_{i}_{j}_{k}"] for k in range(m1)] for j in range(m1)] for i in range(m1)]
                     for f in range(n_fields)])


def kernel_source(m: int, q: int, couplings, n_fields: int, dtype) -> str:
    """CUDA source of `hermite_cell` (gpu_cell.cu) for one (m, q, system, dtype)."""
    n, m1 = 2 * m + 2, m + 1
    # straight-line code: its registers and statements are per coefficient of the cube
    body = [line + ";" for line in with_literals(generate_body(m, q, couplings, n_fields), dtype)]
    decl = [_name(f, j) for f in range(n_fields) for j in itertools.product(range(n), repeat=3)]
    decl += [f"a{f}_{i}_{j}_{k}" for f in range(n_fields) for i, j, k in itertools.product(range(m1), repeat=3)]
    decl += [f"e{k}" for k in range(m1)] + [f"o{k}" for k in range(m1)] + [f"w{c}" for c in range(len(couplings))]
    loads, stores = [], []
    for f, a0, a1, a2, k0, k1, k2 in itertools.product(range(n_fields), *[range(2)] * 3, *[range(m1)] * 3):
        dof = ((f * m1 + k0) * m1 + k1) * m1 + k2
        loads.append(f"{_name(f, (a0 * m1 + k0, a1 * m1 + k1, a2 * m1 + k2))} = "
                     f"__ldg(src + {dof}LL * plane + v{a0}{a1}{a2});")
    for f, k0, k1, k2 in itertools.product(range(n_fields), *[range(m1)] * 3):
        dof = ((f * m1 + k0) * m1 + k1) * m1 + k2
        stores.append(f"dst[{dof}LL * plane + cell] = a{f}_{k0}_{k1}_{k2};")
    lams = [f"const T lam{c} = lam[{c}];" for c in range(len(couplings))]
    return render("gpu_cell.cu", dtype, {}, LAMS=lams, REGISTERS=", ".join(decl), LOADS=loads, BODY=body,
                  STORES=stores)


class CellKernel:
    """The register-form monolithic half step for one (m, q, system, dtype)."""

    threads = 128

    def __init__(self, xp, m: int, q: int, system, dtype):
        self.m, self.q = m, q
        self.cells = 1
        self.module = compile_module(xp, kernel_source(m, q, tuple(system.couplings()), system.n_fields, dtype))

    def half_step(self, src, dst, lam, shift: int) -> None:
        n0, n1, n2 = src.shape[-3:]
        ncells = n0 * n1 * n2
        self.module.get_function("hermite_cell")(
            ((ncells + self.threads - 1) // self.threads,), (self.threads,),
            (src, dst, lam, np.int32(shift), np.int32(n0), np.int32(n1), np.int32(n2)))
