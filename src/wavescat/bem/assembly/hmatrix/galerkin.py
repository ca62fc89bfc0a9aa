"""H-matrices of the Galerkin operators of `wavescat.bem` (docs/bem_api.md).

Entries of distant element pairs use the evaluator's regular rule, which is exactly what
the quadrature clouds sum; touching pairs (shared vertex, edge or element: singular rules)
and close disjoint pairs (the `near` rule) come from `operators.EntryEvaluator.element_pairs`
and are added to the dense near field as `exact - regular`, a sparse correction (touching
supports are never admissible; a close pair in an admissible block keeps its regular
value, whose error is below the regular rule's ~1e-5 at two diameters).
"""
from __future__ import annotations

import time
import weakref
from types import SimpleNamespace

import numpy as np

from .. import operators
from ....backend import resolve
from ....defaults import HMATRIX
from ...discretisation import pairs
from ...discretisation import quadrature as q
from .assembly import assemble_from_clouds, block_plan
from .clouds import element_rule, space_cloud
from .elementwise import ElementSums
from .kernels import PairKernel
from .report import log_report


def element_space(space):
    """The space with every (element, local function) as its own dof: its cloud holds
    the element-wise regular quadrature the global clouds sum up."""
    m, nloc = space.element_dofs.shape
    return SimpleNamespace(mesh=space.mesh, kind=space.kind,
                           element_dofs=np.arange(m * nloc, dtype=np.int64).reshape(m, nloc),
                           n_dofs=m * nloc)


def shared_cloud(space, order, rule, elements=False):
    """The quadrature cloud of `space` (`elements`: of its element space) for `rule`, the
    triangle rule of `order`, made once per mesh: every operator on the mesh reads the same
    (seconds each at 4 kHz on the submarine, on every rank; read only)."""
    key = ("element cloud" if elements else "cloud", space.kind, int(order))
    return pairs.mesh_cached(space.mesh, key, lambda: space_cloud(
        element_space(space) if elements else space, rule=rule))


def singular_correction(ev, name, k, trial, test, rule, backend, precision, chunk=1 << 21,
                        keep=None):
    """(rows, cols, values) of exact - regular over the touching and near element pairs
    (touching pairs get singular rules, close disjoint pairs a higher-order rule), as
    backend arrays (the GPU's stay on the device), repeated (row, col) places to be summed;
    only the pairs `keep(pa, pb)` selects where it is given (pairs.kept)."""
    if backend.is_gpu:
        pa, pb, vals = _correction_by_entries(ev, name, k, trial, test, rule, backend,
                                              precision, chunk, keep)
    else:
        pa, pb, vals = _correction_by_elements(ev, k, trial, test, rule, keep)
    xp = backend.xp
    ka, kb = test.element_dofs.shape[1], trial.element_dofs.shape[1]
    pa, pb = xp.asarray(pa), xp.asarray(pb)
    shape = (int(pa.shape[0]), ka, kb)
    dofs_a, dofs_b = (xp.asarray(s.element_dofs.astype(np.int32)) for s in (test, trial))
    rows = xp.broadcast_to(dofs_a[pa][:, :, None], shape).ravel()
    cols = xp.broadcast_to(dofs_b[pb][:, None, :], shape).ravel()
    return rows, cols, vals


def _correction_by_entries(ev, name, k, trial, test, rule, backend, precision, chunk, keep=None):
    """(pa, pb, values) on the GPU, the values on the device: the exact local matrices of the
    touching pairs (singular rules) and of the near pairs (near rule) less their regular
    ones as entries of the element spaces' clouds (the H-matrix's pair kernel)."""
    mesh = test.mesh
    ta, tb, *kinds = pairs.touching_kept(mesh, keep)
    na, nb = pairs.near_kept(mesh, float(ev.orders.near_factor), keep)
    ka, kb = test.element_dofs.shape[1], trial.element_dofs.shape[1]
    order = ev.orders.regular
    ca = shared_cloud(test, order, rule, elements=True)
    kern = PairKernel(name, k, ca, ca if trial is test else
                      shared_cloud(trial, order, rule, elements=True), backend, precision)
    xp = backend.xp
    la, lb = xp.arange(ka)[None, :, None], xp.arange(kb)[None, None, :]
    vals = []
    for pa, pb, exact_of in (
            (ta, tb, lambda s: ev.kernels.singular(ta[s], tb[s], *(x[s] for x in kinds))),
            (na, nb, lambda s: ev.kernels.regular(na[s], nb[s], near=True))):
        for s in range(0, len(pa), chunk):
            sl = slice(s, s + chunk)
            exact = ev._combine(*exact_of(sl)).reshape(-1)
            a, b = xp.asarray(pa[sl])[:, None, None], xp.asarray(pb[sl])[:, None, None]
            ti, sj = xp.broadcast_arrays(a * ka + la, b * kb + lb)
            vals.append(exact - kern(ti.ravel(), sj.ravel()))
    return (np.concatenate([ta, na]), np.concatenate([tb, nb]),
            xp.concatenate(vals) if vals else xp.zeros(0, dtype=kern.dtype))


def _correction_by_elements(ev, k, trial, test, rule, keep=None):
    """(pa, pb, values) on the CPU: the exact local matrices of every ordered pair (as the
    GPU computes them), the regular ones by element pairs (36 kernel values for 9 entries)."""
    special = ev.special_pairs(keep)
    sums = ElementSums(ev.op, k, element_rule(test, rule), element_rule(trial, rule),
                       (test.n_dofs, trial.n_dofs))
    pa, pb, vals = [], [], []
    for a, b, re, im in special:
        reg_re, reg_im = sums.local_matrices(a, b)
        d = re - reg_re if ev.is_real else (re - reg_re) + 1j * (im - reg_im)
        pa.append(a)
        pb.append(b)
        vals.append(d.reshape(-1))
    return np.concatenate(pa), np.concatenate(pb), np.concatenate(vals)


# per mesh: the cluster and block trees of one space at each (space kind, regular rule, k, eta,
# leaf_size, kd_max), which the two to six operators of a solve on one space share (seconds
# at 2 kHz on the submarine, on every rank of a distributed solve)
_TREES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _plan(name, k, test, trial, clouds, order, eta, leaf_size, kd_max):
    if trial is not test:
        return block_plan(name, k, *clouds, eta, leaf_size, kd_max)
    cache = _TREES.setdefault(test.mesh, {})
    key = (test.kind, int(order), complex(k), eta, leaf_size, kd_max)
    plan = block_plan(name, k, *clouds, eta, leaf_size, kd_max, trees=cache.get(key))
    cache[key] = plan.rows, plan.cols, plan.blocks
    return plan


def assemble_hmatrix(name, trial, test, k, *, backend=None, precision="double",
                     eps=HMATRIX["eps"], eta=HMATRIX["eta"], leaf_size=HMATRIX["leaf_size"],
                     kd_max=HMATRIX["kd_max"], storage=HMATRIX["storage"], recompression=True,
                     quadrature=None, devices=None, work_bytes=None, distribution=None,
                     planner=None):
    """H-matrix of A[i, j] = <test_i, Op trial_j> (Op = `name`, see docs/conventions.md).

    backend: "auto" | "cpu" | "gpu" | Backend (None: backend.DEFAULT); precision: "double" | "single"; eps: ACA+
    (and recompression) relative tolerance; eta: admissibility parameter; leaf_size:
    largest cluster that is not split; kd_max: bound on k max(diam) of admissible blocks
    (None: none); storage: "auto" | "single" | "double", the stored blocks' precision
    (assembly.stored_dtype); their defaults are the workflow's (`solver.hmatrix`).
    distribution: `(plan, test, trial) -> (share, keep)` where this process assembles only
    part of the blocks (distributed.py); None: all of them. planner: `(clouds) -> BlockPlan`
    in place of the H-matrix's own partition (the directional format's near and ACA blocks).
    Returns an HMatrix (matvec, LinearOperator, report).
    """
    be = resolve(backend)
    t0 = time.perf_counter()
    ev = operators.EntryEvaluator(name, trial, test, k, backend=be, precision=precision,
                                  quadrature=quadrature)
    rule = q.triangle_rule(ev.orders.regular)
    t_trees = time.perf_counter()
    cloud = shared_cloud(test, ev.orders.regular, rule)
    clouds = (cloud, cloud) if trial is test else \
        (cloud, shared_cloud(trial, ev.orders.regular, rule))
    plan = planner(clouds) if planner is not None else \
        _plan(name, k, test, trial, clouds, ev.orders.regular, eta, leaf_size, kd_max)
    share = keep = None
    if distribution is not None:  # the trees first: they say which pairs this share needs
        share, keep = distribution(plan, test, trial)
    t_trees = time.perf_counter() - t_trees
    corr = [singular_correction(ev, name, k, trial, test, rule, be, precision, keep=keep)]
    t_corr = time.perf_counter() - t0 - t_trees
    # handed over, not kept: the assembly drops the corrections (GBs at high frequency)
    # once the near field has them
    H = assemble_from_clouds(name, k, *clouds,
                             correction=corr.pop(), backend=be, precision=precision, eps=eps,
                             eta=eta, leaf_size=leaf_size, kd_max=kd_max, storage=storage,
                             recompression=recompression,
                             devices=devices, work_bytes=work_bytes, label=f"{test.kind}-{trial.kind}",
                             plan=plan, share=share, quiet=True)
    H.report["time_s"]["singular_quadrature"] = t_corr
    H.report["time_s"]["trees"] += t_trees
    H.report["time_s"]["total"] += t_corr + t_trees
    log_report(H.report)
    return H
