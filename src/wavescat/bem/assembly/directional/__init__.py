"""Directional H-matrices for high-frequency Helmholtz operators: the H-matrix's dense near
field and bounded ACA blocks, and a far field of large, distant blocks through plane-wave
modulated Chebyshev interpolation (directional interpolation, Börm and Melenk; Messner,
Schanz and Darve), applied without storing the blocks.

Entry point: `assemble_directional(name, trial, test, k, ...)`.
"""
from .operator import DirectionalHMatrix, assemble_directional
from .plan import DirectionalSettings

__all__ = ["DirectionalHMatrix", "DirectionalSettings", "assemble_directional"]
