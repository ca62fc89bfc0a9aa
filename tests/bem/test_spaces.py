"""P0/P1 spaces: dofs, surface curls, mass matrix, and errors for bad meshes."""
import numpy as np
import pytest

from wavescat.bem.assembly import operators
from wavescat.bem.discretisation import spaces
from wavescat.errors import WavescatError
from wavescat.geometry.icosphere import icosphere
from wavescat.surface import SurfaceMesh


@pytest.fixture(scope="module")
def mesh():
    return icosphere(2)


def test_dofs(mesh):
    p1, p0 = spaces.p1(mesh), spaces.p0(mesh)
    assert p1.n_dofs == mesh.n_vertices and p1.element_dofs.shape == (mesh.n_triangles, 3)
    assert p0.n_dofs == mesh.n_triangles and p0.element_dofs.shape == (mesh.n_triangles, 1)
    assert spaces.function_space(mesh, "P1").kind == "P1"


def test_p1_gradients_and_curls(mesh):
    p1 = spaces.p1(mesh)
    grad, curl, n = p1.surface_gradients, p1.surface_curls, mesh.normals[:, None, :]
    # barycentric coordinates sum to one: gradients sum to zero; grad phi_c . (p_d - p_0) = delta
    assert np.abs(grad.sum(axis=1)).max() < 1e-12
    edges = mesh.corners[:, 1:] - mesh.corners[:, :1]  # (m, 2, 3)
    assert np.allclose(np.einsum("mck,mdk->mcd", grad[:, 1:], edges), np.eye(2)[None], atol=1e-12)
    # curls are tangential, of the same length as the gradients and orthogonal to them
    assert np.abs((curl * n).sum(-1)).max() < 1e-12
    assert np.abs((curl * grad).sum(-1)).max() < 1e-12
    assert np.allclose(np.linalg.norm(curl, axis=-1), np.linalg.norm(grad, axis=-1))


def test_mass_matrix(mesh):
    p1, p0 = spaces.p1(mesh), spaces.p0(mesh)
    for trial, test in [(p1, p1), (p0, p0), (p1, p0), (p0, p1)]:
        m = operators.mass_matrix(trial, test)
        assert m.shape == (test.n_dofs, trial.n_dofs)
        assert np.isclose(m.sum(), mesh.total_area, rtol=1e-13)
    # int x^2 over the polyhedron: P1 interpolant of x is exact on flat triangles
    x = p1.interpolate(lambda p: p[:, 0])
    m11 = operators.mass_matrix(p1, p1)
    c = mesh.corners[..., 0]
    exact = (mesh.areas * (c.sum(1) ** 2 + (c**2).sum(1)) / 12).sum()
    assert np.isclose(x @ m11 @ x, exact, rtol=1e-13)


def test_bad_input(mesh):
    with pytest.raises(WavescatError, match="no triangles"):
        spaces.p1(SurfaceMesh(np.zeros((0, 3)), np.zeros((0, 3), dtype=np.int64)))
    with pytest.raises(WavescatError, match="SurfaceMesh"):
        spaces.p0("sphere.msh")
    with pytest.raises(WavescatError, match="P2"):
        spaces.function_space(mesh, "P2")
    with pytest.raises(WavescatError, match="different meshes"):
        operators.mass_matrix(spaces.p1(mesh), spaces.p1(icosphere(1)))
