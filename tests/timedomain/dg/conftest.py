"""The kernel-comparison case shared by the GPU and the emulated-CUDA tests."""
import functools

import numpy as np
import pytest

from wavescat.backend import get_backend
from wavescat.timedomain.dg import (BC_ABSORBING, BC_IMPEDANCE, BC_RIGID, BC_SCATTERER, BC_SOFT, AcousticsDG,
                                    box_tet_mesh, build_space)
from wavescat.timedomain.dg.layout import VolumeTuning

# (order, variant) of the volume kernel beyond the per-order defaults: each option value at
# least once, with partly filled last blocks (K = 72), padding nodes (NPT not dividing Np),
# blocks that are not whole warps, and warps spanning several elements. Tests taking a
# `volume_variant` argument run once per entry.
VOLUME_VARIANTS = [
    (1, VolumeTuning(kb_volume=5, elements_per_thread=3)),
    (2, VolumeTuning(kb_volume=3, nodes_per_thread=3)),
    (3, VolumeTuning(kb_volume=1)),
    (3, VolumeTuning(kb_volume=3, elements_per_thread=2, d_shared=True)),
    (3, VolumeTuning(kb_volume=5, elements_per_thread=4)),
    (3, VolumeTuning(kb_volume=3, elements_per_thread=4, nodes_per_thread=4)),
    (3, VolumeTuning(kb_volume=2, elements_per_thread=3, nodes_per_thread=3, d_shared=True)),
    (4, VolumeTuning(kb_volume=3, elements_per_thread=4, nodes_per_thread=4, unroll=2)),
    (4, VolumeTuning(kb_volume=2, elements_per_thread=2, nodes_per_thread=5, d_shared=True)),
    (4, VolumeTuning(kb_volume=4, elements_per_thread=3, nodes_per_thread=2, min_blocks=4)),
    (5, VolumeTuning(kb_volume=2, elements_per_thread=3)),
    (5, VolumeTuning(kb_volume=3, elements_per_thread=2, nodes_per_thread=4)),
    (5, VolumeTuning(kb_volume=1, elements_per_thread=5, nodes_per_thread=3, unroll=7)),
    (6, VolumeTuning(kb_volume=1, elements_per_thread=4)),
    (6, VolumeTuning(kb_volume=3, elements_per_thread=4, nodes_per_thread=4)),
    (6, VolumeTuning(kb_volume=2, elements_per_thread=2, nodes_per_thread=6, unroll=1)),
    (6, VolumeTuning(kb_volume=3, elements_per_thread=3, nodes_per_thread=5, min_blocks=2)),
    # persistent grids (the emulation and the GPU tests have fewer blocks than batches): each
    # block loops over several batches, the last one partly filled, prefetching the next
    (2, VolumeTuning(kb_volume=5, elements_per_thread=2, persistent=1)),
    (3, VolumeTuning(kb_volume=3, elements_per_thread=4, nodes_per_thread=4, persistent=2, d_shared=True)),
    (4, VolumeTuning(kb_volume=7, elements_per_thread=3, nodes_per_thread=2, persistent=1)),
    (6, VolumeTuning(kb_volume=2, elements_per_thread=2, nodes_per_thread=6, persistent=1)),
    # element rows padded to warp-aligned widths (padding threads and nodes)
    (4, VolumeTuning(kb_volume=3, elements_per_thread=2, nodes_per_thread=5, warp_rows=True,
                     persistent=1)),
    (5, VolumeTuning(kb_volume=2, elements_per_thread=2, nodes_per_thread=7, warp_rows=True)),
    (6, VolumeTuning(kb_volume=1, elements_per_thread=2, nodes_per_thread=3, warp_rows=True, unroll=4)),
    # tensor cores (the emulation runs the warp mma lane by lane): element tiles of 16 (fp32) or
    # 8 (fp64) elements, node groups that do not divide the node tiles, several element groups,
    # shared memory above 48 KB (N = 4 and 5 in fp32, operators in it at N = 4), rhs staged in it,
    # fields split when loaded
    (1, VolumeTuning(kb_volume=1, tensor=True)),
    (2, VolumeTuning(kb_volume=3, tensor=True, min_blocks=2, staged_output=True)),
    (3, VolumeTuning(kb_volume=1, elements_per_thread=2, nodes_per_thread=2, tensor=True, d_shared=True)),
    (4, VolumeTuning(kb_volume=1, nodes_per_thread=3, tensor=True, persistent=1, staged_output=True)),
    (4, VolumeTuning(kb_volume=1, tensor=True, d_shared=True)),
    (4, VolumeTuning(kb_volume=1, tensor=True, staged_output=True, split_on_load=True)),
    (5, VolumeTuning(kb_volume=1, elements_per_thread=2, nodes_per_thread=2, tensor=True, split_on_load=True)),
    (4, VolumeTuning(kb_volume=1, elements_per_thread=2, tensor=True, persistent=1)),
    (3, VolumeTuning(kb_volume=2, nodes_per_thread=2, tensor=True, staged_output=True)),
    (4, VolumeTuning(kb_volume=2, elements_per_thread=2, nodes_per_thread=5, tensor=True, unroll=2)),
    (5, VolumeTuning(kb_volume=1, elements_per_thread=3, nodes_per_thread=4, tensor=True, persistent=2)),
    (6, VolumeTuning(kb_volume=1, nodes_per_thread=4, tensor=True, staged_output=True)),
    # transposed products (operators as A, fields as B: fp32 tiles of 8 elements x 16 nodes)
    (1, VolumeTuning(kb_volume=1, tensor=True, transposed=True)),
    (2, VolumeTuning(kb_volume=2, tensor=True, transposed=True, split_on_load=True)),
    (3, VolumeTuning(kb_volume=1, elements_per_thread=2, tensor=True, transposed=True, staged_output=True)),
    (4, VolumeTuning(kb_volume=1, nodes_per_thread=3, tensor=True, transposed=True, staged_output=True,
                     split_on_load=True)),
    (4, VolumeTuning(kb_volume=2, elements_per_thread=2, nodes_per_thread=2, tensor=True, transposed=True,
                     d_shared=True, persistent=1, split_on_load=True)),
    (5, VolumeTuning(kb_volume=3, nodes_per_thread=3, tensor=True, transposed=True, unroll=2)),
    (6, VolumeTuning(kb_volume=1, elements_per_thread=3, nodes_per_thread=2, tensor=True, transposed=True,
                     persistent=2, staged_output=True, split_on_load=True)),
    # a k step's fragments loaded during the step before (rolled loops included)
    (4, VolumeTuning(kb_volume=1, tensor=True, staged_output=True, split_on_load=True, prefetch_k=True)),
    (3, VolumeTuning(kb_volume=1, elements_per_thread=2, nodes_per_thread=2, tensor=True,
                     prefetch_k=True)),
    (5, VolumeTuning(kb_volume=2, nodes_per_thread=3, tensor=True, transposed=True, prefetch_k=True, unroll=2)),
    (6, VolumeTuning(kb_volume=1, nodes_per_thread=2, tensor=True, persistent=1, d_shared=True,
                     prefetch_k=True, unroll=3)),
]


@pytest.fixture(scope="session")
def volume_variants():
    return VOLUME_VARIANTS


def pytest_generate_tests(metafunc):
    if "volume_variant" in metafunc.fixturenames:
        metafunc.parametrize("volume_variant", VOLUME_VARIANTS, ids=[f"N{o}-{t!r}" for o, t in VOLUME_VARIANTS])


@functools.lru_cache(maxsize=None)
def _case(order, media=True):
    """Every boundary kind on one 72-element mesh: scatterer faces at x = 0 (rigid, pressure
    release and impedance by quadrant), absorbing at x = 1, rigid else; with media, the
    elements of x < 1/3 are of a second medium (interface faces to the others). A random
    state, sponge and boundary data seeded by the order."""
    def rule(centroids, normals):
        y, z = centroids[:, 1], centroids[:, 2]
        scatterer = np.where(y < 0.5, np.where(z < 0.5, BC_SCATTERER, BC_SOFT), BC_IMPEDANCE)
        return np.where(centroids[:, 0] < 1e-9, scatterer,
                        np.where(centroids[:, 0] > 1 - 1e-9, BC_ABSORBING, BC_RIGID))
    mesh = box_tet_mesh((3, 2, 2))
    regions = (mesh.vertices[mesh.tets].mean(axis=1)[:, 0] < 1 / 3).astype(int) if media else None
    space = build_space(mesh, order, rule, regions)
    rng = np.random.default_rng(order)
    q0 = rng.standard_normal((4, space.n_elements, space.ref.n_nodes))
    sigma = rng.uniform(0, 2, (space.n_elements, space.ref.n_nodes))
    data = rng.standard_normal((len(space.boundary_codes), 2))
    return space, q0, sigma, data


def make_solver(order, backend, precision, media=True, **gpu_tuning):
    space, q0, sigma, data = _case(order, media)
    be = get_backend(backend)
    dg = AcousticsDG(space, be, precision, rho=1.3, c=0.7, sigma=sigma,
                     boundary_data=lambda t: be.xp.asarray(data * np.cos(t)),
                     media={1: (2.1, 1.4)} if media else None, beta=0.6, **gpu_tuning)
    dg.set_state(q0)
    return dg


@pytest.fixture
def dg_solver():
    """dg_solver(order, backend, precision, **gpu_tuning) -> AcousticsDG in the shared case."""
    return make_solver
