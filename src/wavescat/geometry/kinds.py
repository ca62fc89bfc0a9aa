"""The geometry kinds a case may name (`geometry.kind`): one class each, registered here.
A new kind is a Geometry subclass in its own module, one entry below, and its keys in the
config schema (configuration/config.schema.yaml, checked against GEOMETRIES by
tests/test_config.py)."""
from __future__ import annotations

from .box import Box
from .cylinder import Cylinder
from .file import FileGeometry
from .krm import KrmShape
from .shape import Geometry
from .sphere import Sphere
from .spheroid import Spheroid
from .submarine import Submarine

GEOMETRIES: dict[str, type[Geometry]] = {cls.kind: cls for cls in (
    Sphere, Spheroid, Box, Cylinder, Submarine, FileGeometry, KrmShape)}
