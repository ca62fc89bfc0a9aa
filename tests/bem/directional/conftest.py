"""A long thin tube: at a few wavelengths across its clusters are far apart against their
size, so the parabolic admissibility of the directional far field admits blocks on several
levels of a mesh small enough for dense checks on two cores."""
import numpy as np
import pytest

from wavescat.bem.discretisation import spaces
from wavescat.surface import SurfaceMesh


def tube(radius=0.25, length=12.0, nt=16, nz=192) -> SurfaceMesh:
    """An open cylinder surface along z (nt x nz vertices)."""
    th = np.linspace(0, 2 * np.pi, nt, endpoint=False)
    z = np.linspace(0, length, nz)
    T, Z = np.meshgrid(th, z, indexing="ij")
    v = np.stack([radius * np.cos(T), radius * np.sin(T), Z], -1).reshape(-1, 3)
    a = np.arange(nt * nz).reshape(nt, nz)
    b = np.roll(a, -1, axis=0)
    tris = [np.stack(t, -1) for j in range(nz - 1)
            for t in ((a[:, j], b[:, j], b[:, j + 1]), (a[:, j], b[:, j + 1], a[:, j + 1]))]
    return SurfaceMesh(v, np.concatenate(tris))


@pytest.fixture(scope="package")
def tube_space():
    return spaces.p1(tube())


@pytest.fixture(scope="package")
def small_tube_space():
    """A coarser, shorter tube: the CUDA emulation runs a fiber per GPU thread."""
    return spaces.p1(tube(nt=8, nz=96))


def sheets(length=8.0, width=1.0, gap=0.4, nx=160, ny=20) -> SurfaceMesh:
    """Two flat parallel sheets facing each other (every cluster flat; the double layer
    between the sheets is not zero)."""
    X, Y = np.meshgrid(np.linspace(0, length, nx), np.linspace(0, width, ny), indexing="ij")
    v = np.stack([X, Y, 0 * X], -1).reshape(-1, 3)
    a = np.arange(nx * ny).reshape(nx, ny)
    t = np.concatenate([np.stack([a[:-1, :-1], a[1:, :-1], a[1:, 1:]], -1).reshape(-1, 3),
                        np.stack([a[:-1, :-1], a[1:, 1:], a[:-1, 1:]], -1).reshape(-1, 3)])
    return SurfaceMesh(np.concatenate([v, v + [0, 0, gap]]), np.concatenate([t, t[:, ::-1] + len(v)]))
