"""The directional H-matrix of a Galerkin operator: dense near field and ACA blocks of
bounded size as in the H-matrix (hmatrix/), and the far field of large, distant blocks
through the plane-wave modulated interpolation of farfield.py. It has the H-matrix's
interface (`@`, shape, dtype, report, T), so the formulations and GMRES take it as they are.
"""
from __future__ import annotations

import logging
import time
import weakref

import numpy as np

from ....backend import resolve
from ....defaults import HMATRIX
from ....errors import InputError
from ..hmatrix.assembly import SYMMETRIC_OPERATORS, BlockPlan, _compressed_share
from ..hmatrix.block_tree import BlockTree
from ..hmatrix.cluster_tree import build_cluster_tree
from ..hmatrix.distributed import DistributedHMatrix, distribution
from ..hmatrix.galerkin import assemble_hmatrix
from ...kernels.green import Operator
from .farfield import FarField
from .plan import DirectionalSettings, build_plan

log = logging.getLogger("wavescat.hmatrix")

# per mesh: the directional plans of one space at each (space kind, rule, k, settings)
_PLANS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _far_dtype(near) -> np.dtype:
    """The far field's precision: the stored blocks' (single storage: single expansions)."""
    return np.dtype(np.complex64 if near.storage_dtype == np.complex64 else np.complex128)


class DirectionalHMatrix:
    """near (an HMatrix of the dense and ACA blocks) + far (FarField, in tree order);
    clouds: the (test, trial) quadrature clouds in tree order (the transpose's far field)."""

    def __init__(self, near, far, perm, report, clouds):
        self.near, self.far, self.perm, self.clouds = near, far, perm, clouds
        self.dtype = near.dtype
        self.shape = near.shape
        self.report = report
        self.block_tree = near.block_tree
        self._perm_dev = None

    @property
    def storage_dtype(self):
        return self.near.storage_dtype

    def matvec(self, x):
        y = self.near.matvec(x)
        xp = self.far.xp
        on_device = hasattr(x, "get") and not isinstance(x, np.ndarray)
        X = x.reshape(self.shape[1], -1)
        if self._perm_dev is None:
            self._perm_dev = xp.asarray(self.perm)
        perm = self._perm_dev
        far = self.far.matvec(xp.asarray(X)[perm])
        out = xp.empty_like(far)
        out[perm] = far
        if not on_device and xp is not np:
            out = xp.asnumpy(out)
        out = out.reshape(y.shape)
        return y + out.astype(y.dtype, copy=False)

    __matmul__ = matvec

    @property
    def T(self) -> "DirectionalHMatrix":
        """The transpose on one space: the near part's, and the far field of the operator
        whose kernel is this one's with x and y swapped (K <-> K'; V and W are symmetric)."""
        op = {Operator.double_layer: Operator.adjoint_double_layer,
              Operator.adjoint_double_layer: Operator.double_layer}.get(self.far.op, self.far.op)
        far = FarField(self.far.plan, op, self.far.k, self.clouds[1], self.clouds[0],
                       self.far.backend, self.far.dtype, share=self.far.share)
        return DirectionalHMatrix(self.near.T, far, self.perm,
                                  {**self.report, "transpose_of": self.report.get("operator")},
                                  self.clouds[::-1])


def assemble_directional(name, trial, test, k, *, backend=None, precision="double",
                         eps=HMATRIX["eps"], eta=HMATRIX["eta"], leaf_size=HMATRIX["leaf_size"],
                         kd_max=HMATRIX["kd_max"], storage=HMATRIX["storage"], recompression=True,
                         quadrature=None, work_bytes=None, settings=None, order=None, eta2=None,
                         devices=None, ranks=None):
    """The directional H-matrix of operator `name` (trial = test: one space). The ACA blocks
    are the H-matrix's of size k diam <= kd_max (`eps`, `eta`); larger admissible pairs go to
    the directional far field (`settings`: DirectionalSettings, or its `order` and `eta2`
    over the defaults). On several `ranks` (solve/parallel.Ranks): this rank's share of the
    near field and ACA blocks (as hmatrix/distributed.py shares an H-matrix's) and of the far
    field (FarField's `share`), in a DistributedHMatrix whose products sum over the ranks."""
    if trial is not test:
        raise InputError("operator_format directional takes one space as trial and test")
    if settings is None:
        settings = DirectionalSettings(**{key: value for key, value in
                                          (("order", order), ("eta2", eta2)) if value is not None})
    be = resolve(backend)
    t0 = time.perf_counter()
    held = {}

    def planner(clouds):
        cloud = clouds[0]
        key = (test.kind, cloud.q, complex(k), settings, eta, leaf_size, kd_max)
        cache = _PLANS.setdefault(test.mesh, {})
        if key not in cache:
            tree = build_cluster_tree(cloud.lo, cloud.hi, leaf_size)
            cache[key] = build_plan(tree, k, settings, eta, kd_max)
        plan = cache[key]
        held["plan"], held["cloud"] = plan, cloud
        btree = BlockTree(plan.tree, plan.tree, eta, plan.aca, plan.near)
        compressed = _compressed_share(btree.far, Operator.named(name) in SYMMETRIC_OPERATORS)
        return BlockPlan(plan.tree, plan.tree, btree, compressed,
                         len(compressed) < len(btree.far["r0"]))

    several = ranks is not None and ranks.size > 1
    near = assemble_hmatrix(name, trial, test, k, backend=be, precision=precision, eps=eps,
                            eta=eta, leaf_size=leaf_size, kd_max=kd_max, storage=storage,
                            recompression=recompression, quadrature=quadrature,
                            work_bytes=work_bytes, planner=planner,
                            **({"distribution": distribution(ranks), "devices": 1} if several
                               else {}))
    t1 = time.perf_counter()
    plan, cloud = held["plan"], held["cloud"].permuted(held["plan"].tree.perm)
    far = FarField(plan, name, k, cloud, cloud, be, _far_dtype(near),
                   share=(ranks.rank, ranks.size) if several else (0, 1))
    be.synchronize()
    t_far = time.perf_counter() - t1
    report = dict(near.report)
    report["format"] = "directional"
    report["directional"] = {
        "order": settings.order, "eta": settings.eta, "eta2": settings.eta2,
        "blocks_per_level": [int(len(lv.t)) for lv in plan.levels],
        "grids": [int(lv.q) for lv in plan.levels],
        "blocks": plan.far_blocks,
        "expansions": int(sum(len(lv.sources) + len(lv.targets) for lv in plan.levels)),
        "device_bytes": far.device_bytes, "setup_s": t_far,
    }
    report["time_s"] = {**report["time_s"], "directional_setup": t_far,
                        "total": report["time_s"]["total"] + t_far}
    H = DirectionalHMatrix(near, far, plan.tree.perm, report, (cloud, cloud))
    if several:
        H = DistributedHMatrix(H, ranks)
    log.info("directional %s: %d far blocks over levels %s, %d expansions, set up in %.2f s "
             "(near and ACA %.1f s)", name, plan.far_blocks, report["directional"]["blocks_per_level"],
             report["directional"]["expansions"], t_far, t1 - t0)
    return H
