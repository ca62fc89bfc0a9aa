"""Small sphere clouds shared by the H-matrix tests."""
from types import SimpleNamespace

import numpy as np
import pytest

from wavescat.bem.assembly.hmatrix.clouds import point_cloud, space_cloud
from wavescat.geometry.icosphere import icosphere


def p1_space(subdivisions):
    mesh = icosphere(subdivisions)
    used, inv = np.unique(mesh.triangles, return_inverse=True)
    return SimpleNamespace(mesh=mesh, kind="P1", element_dofs=inv.reshape(mesh.triangles.shape),
                           n_dofs=len(used))


def p0_space(subdivisions):
    mesh = icosphere(subdivisions)
    m = mesh.n_triangles
    return SimpleNamespace(mesh=mesh, kind="P0", element_dofs=np.arange(m)[:, None], n_dofs=m)


@pytest.fixture(scope="session")
def p1_cloud():
    """P1 Galerkin cloud (centroid rule) on a 642-vertex sphere."""
    return space_cloud(p1_space(3), 1)


@pytest.fixture(scope="session")
def vertex_cloud():
    """One point per vertex of a 2562-vertex sphere, with normals and area weights."""
    mesh = icosphere(4)
    v = mesh.vertices
    return point_cloud(v, 4 * np.pi / len(v), normals=v / np.linalg.norm(v, axis=1, keepdims=True))


def dense(kernel, n_rows, n_cols):
    i, j = np.meshgrid(np.arange(n_rows), np.arange(n_cols), indexing="ij")
    return kernel.backend.asnumpy(kernel(kernel.xp.asarray(i.ravel()),
                                         kernel.xp.asarray(j.ravel()))).reshape(n_rows, n_cols)


def workflow_hmatrix() -> dict:
    """eps, eta and leaf_size of `solver.hmatrix` as the workflow fills them into a case."""
    from wavescat.configuration.config import prepare_config

    case = {"geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [100.0]}
    opts = prepare_config({"run": ["c"], "cases": {"c": case}})["cases"]["c"]["solver"]["hmatrix"]
    return {key: opts[key] for key in ("eps", "eta", "leaf_size")}
