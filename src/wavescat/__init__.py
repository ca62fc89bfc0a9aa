"""wavescat: acoustic scattering by rigid bodies with Galerkin BEM, H-matrices and
time-domain verification, driven by a Snakemake workflow."""

__version__ = "0.1.0"
