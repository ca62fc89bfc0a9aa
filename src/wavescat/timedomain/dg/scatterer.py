"""The body of a time-domain scattering run: its shape (a case's sphere, spheroid or box
geometry, geometry.shape) and its boundary condition (bem.formulations.Boundary) as the DG
solver takes it (a face code, an admittance, or a second medium inside)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...bem.formulations import boundary_from
from ...errors import InputError
from ...geometry.shape import Geometry
from ...problem.boundary import Boundary
from ...problem.medium import Medium
from .space import BC_IMPEDANCE, BC_SCATTERER, BC_SOFT

SHAPES = ("sphere", "spheroid", "box")
FACE_CODES = {"rigid": BC_SCATTERER, "pressure_release": BC_SOFT, "impedance": BC_IMPEDANCE}


@dataclass
class Body:
    """geometry: a sphere, spheroid or box (geometry.shape.Geometry); boundary: its condition
    (default rigid); medium: the fluid around it (default c = 1, rho = 1)."""

    geometry: Geometry
    boundary: Boundary = field(default_factory=boundary_from)
    medium: Medium = field(default_factory=lambda: Medium(sound_speed=1.0, density=1.0))

    def __post_init__(self):
        kind = self.geometry.kind
        if kind not in SHAPES:
            raise InputError(f"geometry kind {kind!r}: the time-domain cross-check meshes "
                             f"a {', '.join(SHAPES[:-1])} or {SHAPES[-1]}")
        if self.boundary.kind not in (*FACE_CODES, "fluid"):
            raise InputError(f"boundary kind {self.boundary.kind!r}: no time-domain model")
        self.center = np.asarray(self.geometry.center, float)
        self.admittance = 0.0
        if self.kind == "impedance":
            beta = complex(self.boundary.admittance)
            if beta.imag != 0 or beta.real < 0:
                raise InputError(f"admittance = {self.boundary.admittance}: the time domain "
                                 "takes a real admittance >= 0 (dp/dn = (beta / c) dp/dt)")
            self.admittance = beta.real
        if self.kind == "fluid":
            if self.boundary.absorption_db_per_wavelength:
                raise InputError("absorption_db_per_wavelength: the time-domain cross-check "
                                 "models a lossless fluid body")
            g, h = self.boundary.density_ratio, self.boundary.sound_speed_ratio
            self.interior = (g * self.medium.density, h * self.medium.sound_speed)

    @property
    def kind(self) -> str:
        """The boundary kind."""
        return self.boundary.kind

    @property
    def shape(self) -> str:
        return self.geometry.kind

    @property
    def face_code(self) -> int | None:
        """The DG code of the surface's faces; None for a fluid body (interface faces)."""
        return FACE_CODES.get(self.kind)

    @property
    def sound_speed_ratio(self) -> float:
        """Interior over exterior sound speed (1 but for a fluid body)."""
        return self.interior[1] / self.medium.sound_speed if self.kind == "fluid" else 1.0

    def half_axes(self) -> np.ndarray:
        g = self.geometry
        if self.shape == "sphere":
            return np.full(3, float(g.radius))
        if self.shape == "spheroid":
            return np.asarray(g.semi_axes, float)
        return 0.5 * np.asarray(g.size, float)

    def extent(self) -> float:
        """Largest distance of the surface from the centre."""
        h = self.half_axes()
        return float(np.linalg.norm(h) if self.shape == "box" else h.max())

    def inner(self) -> float:
        """Smallest distance of the surface from the centre."""
        return float(self.half_axes().min())

    def exact_volume(self) -> float:
        return float(np.prod(2 * self.half_axes()) if self.shape == "box" else 4 / 3 * np.pi * np.prod(self.half_axes()))

    def contains(self, points) -> np.ndarray:
        """Whether points (n, 3) lie inside or on the body."""
        off = (np.atleast_2d(points) - self.center) / self.half_axes()
        return (np.abs(off).max(axis=1) if self.shape == "box" else np.linalg.norm(off, axis=1)) <= 1 + 1e-12

    def occ_volume(self, gmsh) -> int:
        """Add the body to gmsh's OpenCASCADE model; its volume tag."""
        occ, c, h = gmsh.model.occ, self.center, self.half_axes()
        if self.shape == "box":
            return occ.addBox(*(c - h), *(2 * h))
        tag = occ.addSphere(*c, 1.0 if self.shape == "spheroid" else h[0])
        if self.shape == "spheroid":
            occ.dilate([(3, tag)], *c, *h)
        return tag
