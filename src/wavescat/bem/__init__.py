"""Galerkin boundary element method, in layers; a layer imports only the layers before it:
discretisation (spaces, quadrature, element pairs), kernels (Green's function and element-pair
integrals, CPU and CUDA), assembly (dense operators, H-matrices, potentials), formulations (one
per boundary kind, and their systems). linalg (GMRES, triangular solves) stands apart: it
imports none of them."""
