"""Surface meshes of the bodies a case describes (gmsh builders, mesh checks).

`mesh_case(case, medium) -> (SurfaceMesh, stats)` is the entry point. gmsh (and meshio) are
imported only where a mesh is made or read (gmsh_model.gmsh_session, surface.py), so the
package imports on machines without them (the GPU device).
"""
from .mesher import mesh_case

__all__ = ["mesh_case"]
