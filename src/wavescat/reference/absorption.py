"""Absorption in a fluid region as a complex sound speed (docs: CONTEXT of issue 26).

An absorption of alpha dB per wavelength (the fluid's own plane wave loses alpha dB of
amplitude over one of its wavelengths) is the complex wavenumber k_1 = (omega / c_1)(1 + i delta)
with delta = alpha ln(10) / (40 pi): over one wavelength 2 pi / Re k_1 the amplitude falls by
exp(-2 pi delta), i.e. 20 log10(e) 2 pi delta = alpha dB. Equivalently the sound speed is
c_1 / (1 + i delta) and the sound-speed ratio h / (1 + i delta); under exp(-i w t),
Im k_1 > 0 (the wave decays as it travels) and Im h < 0. A mode of the region then has a
quality factor of about 1 / (2 delta) = 27.29 / alpha.
"""
from __future__ import annotations

import math

from ..errors import InputError
from . import _validate


def loss_factor(absorption_db_per_wavelength) -> float:
    """delta = alpha ln(10) / (40 pi) of an absorption alpha (dB per wavelength, >= 0)."""
    try:
        alpha = float(absorption_db_per_wavelength)
    except (TypeError, ValueError):
        alpha = math.nan
    if not math.isfinite(alpha) or alpha < 0:
        raise InputError(f"absorption_db_per_wavelength = {absorption_db_per_wavelength!r}: "
                          "must be a real number >= 0 (dB of amplitude lost per wavelength)")
    return alpha * math.log(10.0) / (40.0 * math.pi)


def complex_sound_speed_ratio(h, absorption_db_per_wavelength=0.0) -> complex:
    """h / (1 + i delta): the sound-speed ratio h (real > 0) of a fluid that absorbs
    `absorption_db_per_wavelength` dB per wavelength (>= 0), delta as `loss_factor`.
    The result has Im < 0 for alpha > 0; pass it as `sound_speed_ratio` to the fluid series."""
    h = _validate.positive("sound_speed_ratio", h)
    return h / complex(1.0, loss_factor(absorption_db_per_wavelength))
