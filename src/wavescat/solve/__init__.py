"""Solving one case at one frequency: OSRC Burton-Miller system, batched GMRES, far field,
and the HDF5 / CSV / JSON records of the result."""
