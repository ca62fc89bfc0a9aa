"""The scattering problem's parts as typed objects, below every numerical layer: the medium
(frequency to wavenumber), a surface's boundary condition, and the directions of incidence and
of the receivers with the far field's target strength (docs/conventions.md, "Physics")."""
