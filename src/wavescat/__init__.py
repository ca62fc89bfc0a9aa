"""wavescat: target strength of bodies under water from a YAML description. Acoustic
scattering by rigid, pressure-release, impedance and fluid bodies, and by bodies nested in a
fluid one, with Galerkin BEM (Burton-Miller, Müller's transmission formulation, a
multi-domain system; dense or H-matrix operators, CPU or GPU), exact sphere series and
time-domain solvers that verify it, driven by a Snakemake workflow."""

__version__ = "0.1.0"
