"""Nodal discontinuous Galerkin (Hesthaven-Warburton) for 3D linear acoustics on tetrahedra,
with GPU kernels in CuPy and a Numba CPU twin; used to cross-check the BEM in the time domain."""
from .mesh import TetMesh, box_tet_mesh, check_tet_mesh
from .reference import MAX_ORDER, ReferenceTetrahedron, reference_tetrahedron
from .solver import AcousticsDG
from .space import BC_ABSORBING, BC_IMPEDANCE, BC_INTERFACE, BC_RIGID, BC_SCATTERER, BC_SOFT, DGSpace, build_space

__all__ = ["AcousticsDG", "BC_ABSORBING", "BC_IMPEDANCE", "BC_INTERFACE", "BC_RIGID", "BC_SCATTERER", "BC_SOFT",
           "DGSpace", "MAX_ORDER",
           "ReferenceTetrahedron", "TetMesh", "box_tet_mesh", "build_space", "check_tet_mesh",
           "reference_tetrahedron"]
