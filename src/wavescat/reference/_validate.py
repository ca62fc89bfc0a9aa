"""Checks of the arguments the exact solutions take; errors name the argument and value."""
from __future__ import annotations

import numpy as np

from ..errors import InputError


def positive(name: str, value) -> float:
    """A finite real number > 0."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} = {value!r}: must be a real number > 0") from None
    if not np.isfinite(x) or x <= 0:
        raise InputError(f"{name} = {value!r}: must be a real number > 0")
    return x


def sound_speed_ratio(name: str, value) -> float | complex:
    """A sound-speed ratio h: a finite real number > 0, or a complex one with Re h > 0 and
    Im h <= 0 (an absorbing fluid: k_1 = k / h has Im k_1 >= 0 under exp(-i w t)).
    Returned as float when real, else complex."""
    message = (f"{name} = {value!r}: must be a real number > 0, or complex with real part > 0 "
               "and imaginary part <= 0 (absorption under exp(-i w t))")
    try:
        z = complex(value)
    except (TypeError, ValueError):
        raise InputError(message) from None
    if not (np.isfinite(z.real) and np.isfinite(z.imag)) or z.real <= 0 or z.imag > 0:
        raise InputError(message)
    return z.real if z.imag == 0 else z


def vector3(name: str, value) -> np.ndarray:
    """A finite 3-vector."""
    v = np.asarray(value, dtype=np.float64)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise InputError(f"{name} = {value!r}: must be three finite numbers")
    return v


def unit_vector(name: str, value) -> np.ndarray:
    """A nonzero 3-vector, returned normalised."""
    v = vector3(name, value)
    norm = np.linalg.norm(v)
    if norm == 0:
        raise InputError(f"{name} = {value!r}: must be a nonzero vector")
    return v / norm


def points3(name: str, value) -> np.ndarray:
    """An (n, 3) array of finite points (a single point (3,) is accepted as n = 1)."""
    p = np.asarray(value, dtype=np.float64)
    if p.ndim == 1 and p.shape == (3,):
        p = p[None, :]
    if p.ndim != 2 or p.shape[1] != 3:
        raise InputError(f"{name} must have shape (n, 3), got {p.shape}")
    if not np.all(np.isfinite(p)):
        raise InputError(f"{name} contains non-finite values")
    return p


def unit_vectors(name: str, value) -> np.ndarray:
    """An (n, 3) array of nonzero vectors, returned normalised row by row."""
    p = points3(name, value)
    norms = np.linalg.norm(p, axis=1)
    bad = np.flatnonzero(norms == 0)
    if bad.size:
        raise InputError(f"{name}[{bad[0]}] = {p[bad[0]].tolist()}: must be a nonzero vector")
    return p / norms[:, None]
