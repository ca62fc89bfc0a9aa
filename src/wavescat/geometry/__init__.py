"""Surface meshes of the bodies a case describes (gmsh builders, mesh checks)."""
