"""Kernels: the Green's function and the element-pair integrals, on the CPU (Numba) and the GPU
(CUDA sources in .cu files)."""
