"""Solving one case at one frequency: the case's formulation (bem/formulations/), batched
GMRES, far field, and the HDF5 / CSV / JSON records of the result."""
