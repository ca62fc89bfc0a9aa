"""Exact reference solutions: the rigid-sphere partial-wave series, the eigenvalues of the
boundary integral operators on a sphere, and real spherical harmonics to test them with."""
from .rigid_sphere import (far_field, incident_field, monostatic_far_field, scattered_field,
                           surface_pressure, total_field)
from .sphere_eigenvalues import helmholtz_eigenvalues, laplace_eigenvalues
from .spherical_harmonics import spherical_harmonic_real

__all__ = ["far_field", "incident_field", "monostatic_far_field", "scattered_field", "surface_pressure", "total_field",
           "helmholtz_eigenvalues", "laplace_eigenvalues", "spherical_harmonic_real"]
