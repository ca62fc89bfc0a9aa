"""Surface meshes of the bodies a case describes (gmsh builders, mesh checks).

`mesh_case(case, medium) -> (SurfaceMesh, stats)` is the entry point; gmsh is imported
lazily so that `wavescat.geometry.icosphere` works without it.
"""
from .mesher import mesh_case

__all__ = ["mesh_case"]
