"""Assembly: the boundary operators as dense matrices (operators, integrators) or as H-matrices
(hmatrix/), and the layer potentials."""
