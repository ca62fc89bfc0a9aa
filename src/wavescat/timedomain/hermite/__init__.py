"""Hermite-Taylor method (Goodrich, Hagstrom & Lorenz 2006; GPU form after Vargas et al.)
for constant-coefficient linear hyperbolic systems on periodic Cartesian grids.

- interpolation: the 1D Hermite operator H and the tensor-product interpolant
- equations: advection and linear acoustics as coupling lists u_t = sum_d A_d u_{x_d}
- exact: smooth periodic exact solutions and their nodal Hermite data
- solver: HermiteSolver (two half steps per step, CPU via Numba/NumPy or GPU via CuPy)
- cpu / gpu: the recursion half-step kernels (Numba twin; CUDA shared and two-kernel forms, which
  gpu.make_kernels picks among with gpu_cell's register and gpu_warp's warp forms; gpu_common:
  what they share; the CUDA of each is the gpu_*.cu template beside its module)
- propagator / gpu_propagator: scalar advection at full q, where the half step is a translation
  (three 1D operators; NumPy reference and a bandwidth-bound CUDA kernel)
- convergence: the verification study behind `wavescat verify-hermite`
- box_scattering: scattering by a rigid box that the grid holds exactly, against the BEM
  (bench/bench_hermite_box.py)
"""
from .equations import LinearSystem, acoustics, advection
from .interpolation import hermite_matrix_1d, interpolate_1d, interpolate_3d
from .solver import CFL_LIMIT, HermiteSolver, default_stages

__all__ = ["CFL_LIMIT", "HermiteSolver", "LinearSystem", "acoustics", "advection",
           "default_stages", "hermite_matrix_1d", "interpolate_1d", "interpolate_3d"]
