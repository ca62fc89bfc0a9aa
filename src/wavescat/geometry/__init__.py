"""Surface meshes of the bodies a case describes (gmsh builders, mesh checks).

`mesh_case(case, medium) -> (SurfaceMesh, stats)` is the entry point. Importing the
package loads nothing heavy (no gmsh, no scipy), so `wavescat.geometry.icosphere`
works on machines without them (the GPU device).
"""


def mesh_case(case: dict, medium: dict, verbose: bool = False, name: str | None = None):
    from .mesher import mesh_case as _mesh_case
    return _mesh_case(case, medium, verbose, name)


__all__ = ["mesh_case"]
