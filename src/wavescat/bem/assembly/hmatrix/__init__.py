"""H-matrices for the Galerkin boundary operators: cluster and block trees, batched
ACA+ on the GPU (CuPy) or CPU (Numba), the H-matvec, and per-assembly reports.

Entry points: `assemble_hmatrix(name, trial, test, k, ...)` for the operators of
`wavescat.bem`, and `assemble_from_clouds(...)` for any pair of quadrature clouds.
"""
from .assembly import assemble_from_clouds
from .clouds import DofCloud, point_cloud, space_cloud
from .galerkin import assemble_hmatrix
from .hmatrix import HMatrix

__all__ = ["assemble_from_clouds", "assemble_hmatrix", "HMatrix", "DofCloud", "point_cloud",
           "space_cloud"]
