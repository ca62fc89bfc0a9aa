"""Galerkin boundary element method: spaces, quadrature, operators, potentials, fast formats and solvers."""
