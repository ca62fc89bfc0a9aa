"""The Helmholtz Green's function and the kernels of the four boundary integral operators,
written once: Numba functions for the CPU kernels (dense, H-matrix and potentials) and one
CUDA header (`CUDA_GREEN`) that the dense and the H-matrix CUDA kernels include.

    G(x, y) = exp(ik r) / (4 pi r),   r = |d|,   d = x - y   (x the test point, y the trial point)

Every kernel takes d = x - y; with it
    V, W: G      K: dG/dn_y = G (ikr - 1)/r^2 (y - x).n_y      K': dG/dn_x = G (ikr - 1)/r^2 (x - y).n_x
(W by integration by parts: curl.curl G - k^2 n.n G). A complex k = kr + i ki (Im k >= 0,
damping) is carried as two reals; Laplace is kr = ki = 0.
"""
from __future__ import annotations

import enum
import math
from pathlib import Path

import numpy as np
from numba import njit

from ...errors import WavescatError


class Operator(enum.IntEnum):
    """The boundary integral operators; the integer is the code the kernels branch on."""

    single_layer = 0  # V
    double_layer = 1  # K
    adjoint_double_layer = 2  # K'
    hypersingular = 3  # W

    @classmethod
    def named(cls, name: str) -> "Operator":
        """The operator of a public name, or a clear error naming the allowed ones."""
        try:
            return cls[name]
        except (KeyError, TypeError):
            raise WavescatError(f"operator name = {name!r}: must be one of "
                                f"{', '.join(op.name for op in cls)}") from None


OPERATORS = {op.name: op for op in Operator}
INV4PI = 1.0 / (4.0 * math.pi)
_V, _K, _KP, _W = (int(op) for op in Operator)  # plain integers inside Numba

# sin and cos together: Cody-Waite reduction by pi/2 (three-part constant, exact for the
# phases k r of BEM) and the fdlibm minimax polynomials on [-pi/4, pi/4]; about 1 ulp,
# faster than libm sin + cos.
_PIO2 = (1.57079632673412561417e+00, 6.07710050650619224932e-11, 2.02226624879595063154e-21)
_SIN = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
        2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_COS = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
        -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


@njit(cache=True, fastmath=False, error_model="numpy")
def sincos(x):
    n = math.floor(x * 0.636619772367581382433 + 0.5)
    r = ((x - n * _PIO2[0]) - n * _PIO2[1]) - n * _PIO2[2]
    z = r * r
    s = r + r * z * (_SIN[0] + z * (_SIN[1] + z * (_SIN[2] + z * (_SIN[3] + z * (_SIN[4] + z * _SIN[5])))))
    c = 1.0 - 0.5 * z + z * z * (_COS[0] + z * (_COS[1] + z * (_COS[2] + z * (_COS[3] + z * (_COS[4] + z * _COS[5])))))
    q = np.int64(n) & 3  # quadrant; selects rather than branches, so that loops vectorise
    swap = (q & 1) == 1
    s2 = c if swap else s
    c2 = s if swap else c
    s2 = -s2 if (q & 2) else s2
    c2 = -c2 if ((q + 1) & 2) else c2
    return s2, c2


@njit(cache=True, fastmath=False, error_model="numpy", inline="always")
def green(r, rinv, kr, ki, damped):
    """(re, im) of G at distance r (rinv = 1/r); damped: ki != 0."""
    g = INV4PI * rinv
    if damped:
        g *= math.exp(-ki * r)
    sn, cs = sincos(kr * r)
    return g * cs, g * sn


@njit(cache=True, fastmath=False, error_model="numpy", inline="always")
def radial(gre, gim, r, rinv, kr, ki):
    """(re, im) of G (ikr - 1)/r^2: dG/dn = radial * (normal projection of d or -d)."""
    fre = (-ki * r - 1.0) * (rinv * rinv)
    fim = kr * rinv
    return gre * fre - gim * fim, gre * fim + gim * fre


@njit(cache=True, fastmath=False, error_model="numpy", inline="always")
def kernel(op, dx, dy, dz, na0, na1, na2, nb0, nb1, nb2, kr, ki):
    """Kernel value (re, im) of operator `op` at d = x - y = (dx, dy, dz), n_x = na, n_y = nb
    (W: the G of its integration by parts)."""
    r2 = dx * dx + dy * dy + dz * dz
    r = math.sqrt(r2)
    rinv = 1.0 / r
    if kr == 0.0 and ki == 0.0:
        gre, gim = INV4PI * rinv, 0.0
    else:
        gre, gim = green(r, rinv, kr, ki, ki != 0.0)
    if op == _V or op == _W:
        return gre, gim
    hre, him = radial(gre, gim, r, rinv, kr, ki)
    if op == _K:
        proj = -(dx * nb0 + dy * nb1 + dz * nb2)  # (y - x).n_y
    else:
        proj = dx * na0 + dy * na1 + dz * na2  # (x - y).n_x
    return hre * proj, him * proj


def green_array(xp, d, k):
    """(r, G) at differences d = x - y (..., 3), for any array module xp (the potentials')."""
    r = xp.sqrt((d * d).sum(axis=-1))
    return r, xp.exp(1j * k * r) * (INV4PI / r)


def radial_array(g, r, k):
    """G (ikr - 1)/r^2 from green_array's (r, G), as `radial`."""
    return g * (1j * k * r - 1) / r**2


# The CUDA twin of `green`, `radial` and `kernel`: put before gpu.cu and hmatrix/kernels.cu
# (by gpu.py and hmatrix/kernels.py), whose #defines (cuda_defines) set IS_DOUBLE, OP,
# LAPLACE (k = 0) and DAMPED (Im k != 0).
CUDA_GREEN = Path(__file__).with_name("green.cu").read_text()


def cuda_defines(op, k, is_double: bool, **more) -> str:
    """The #define lines CUDA_GREEN needs (and `more`), for operator `op` at wavenumber k."""
    k = complex(k)
    defines = {"IS_DOUBLE": int(is_double), "OP": int(op), "LAPLACE": int(k == 0),
               "DAMPED": int(k.imag != 0), **more}
    return "".join(f"#define {key} {val}\n" for key, val in defines.items())
