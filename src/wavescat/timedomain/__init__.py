"""Time-domain solvers (Hermite-Taylor and nodal DG) used to verify the frequency-domain BEM."""
