"""Layer potentials and far-field operators against exact sphere solutions."""
import numpy as np
import pytest
from scipy.special import spherical_jn, spherical_yn

from wavescat.bem.assembly import potentials
from wavescat.bem.discretisation import spaces
from wavescat.errors import WavescatError
from wavescat.geometry.icosphere import icosphere
from wavescat.reference import spherical_harmonic_real

K, L, M = 2.0, 2, 1


def _directions(n, seed=0):
    d = np.random.default_rng(seed).normal(size=(n, 3))
    return d / np.linalg.norm(d, axis=1, keepdims=True)


def _density(s):
    space = spaces.p1(icosphere(s))
    return space, space.interpolate(lambda p: spherical_harmonic_real(L, M, p))


def _h(l, x, derivative=False):
    return spherical_jn(l, x, derivative) + 1j * spherical_yn(l, x, derivative)


def _exact(kind, r, xhat):
    """Potentials of the density Y_LM on the unit sphere (docs/conventions.md)."""
    y = spherical_harmonic_real(L, M, xhat)
    j, jp = spherical_jn(L, K), spherical_jn(L, K, True)
    return {"single_layer": 1j * K * j * _h(L, K * r) * y,
            "double_layer": 1j * K**2 * jp * _h(L, K * r) * y,
            "single_layer_far_field": 1j * j * (-1j) ** (L + 1) * y,
            "double_layer_far_field": 1j * K * jp * (-1j) ** (L + 1) * y}[kind]


@pytest.mark.parametrize("kind", ["single_layer", "double_layer",
                                  "single_layer_far_field", "double_layer_far_field"])
def test_sphere_harmonic_potentials_converge(kind):
    xhat = _directions(20)
    far = kind.endswith("far_field")
    errors = []
    for s in (2, 3, 4):
        space, u = _density(s)
        pts = xhat if far else 2.0 * xhat
        val = getattr(potentials, kind)(space, pts, K) @ u
        exact = _exact(kind, 2.0, xhat)
        errors.append(np.abs(val - exact).max() / np.abs(exact).max())
    errors = np.array(errors)
    assert np.log2(errors[1] / errors[2]) > 1.7, errors
    assert errors[-1] < 5e-3, errors


def test_far_field_is_limit_of_potential():
    space, u = _density(2)
    xhat, r = _directions(5, 1), 1e5
    for near, far in [("single_layer", "single_layer_far_field"), ("double_layer", "double_layer_far_field")]:
        p = getattr(potentials, near)(space, r * xhat, K) @ u * r * np.exp(-1j * K * r)
        f = getattr(potentials, far)(space, xhat, K) @ u
        assert np.abs(p - f).max() < 1e-3 * np.abs(f).max()


def test_laplace_double_layer_of_constant_is_gauss_law():
    space = spaces.p1(icosphere(3))
    one = np.ones(space.n_dofs)
    inside = potentials.double_layer(space, 0.4 * _directions(10), 0.0) @ one
    outside = potentials.double_layer(space, 2.5 * _directions(10), 0.0) @ one
    assert np.abs(inside + 1).max() < 1e-6 and np.abs(outside).max() < 1e-6


def test_bad_points():
    space = spaces.p0(icosphere(1))
    with pytest.raises(WavescatError, match="points must have shape"):
        potentials.single_layer(space, np.zeros((4, 2)), 1.0)
