"""The directional far field's product: a multilevel pass over the plan's expansions.

For a far block (t, s) of direction c the kernel is interpolated after modulation,
    G(x - y) ~ sum_nu,mu e^{ik c.x} L_t,nu(x) S[nu, mu] e^{-ik c.y} L_s,mu(y),
    S[nu, mu] = G(xi_nu - eta_mu) e^{-ik c.(xi_nu - eta_mu)},
with L the Lagrange polynomials of the tensor Chebyshev nodes xi (of t's box) and eta (of
s's). A product y = A_far x then runs
    leaves:   M[s, c] = sum_j x_j <psi_j, e^{-ik c.y} L_s(y)>     (sources' expansions)
    upward:   M[s, c] += T M[s', c']  for the children s' of s, c' = c on their grid
    blocks:   L[t, c] += S M[s, c]                                 (kernel at node pairs)
    downward: L[t', c'] += T^* L[t, c]
    leaves:   y_i = sum <phi_i, e^{ik c.x} L_t(x)> L[t, c],
and the transfers T re-interpolate e^{-ik (c - c').y} L_s(y) on the child's nodes. Every
expansion is kept relative to its box's centre (phases e^{ik c.(y - m_s)}, and one phase per
block or transfer for the centres' offset), so single precision holds: no phase as large as
k times the body's size meets a rounding. The operators' kernels are G with their normal
derivatives and curls put into the leaves' bases (components), as in kernels.py:
    V: w | w        K: w | d/dn_y        K': d/dn_x | w
    W: curl_a | curl_a and -k^2 w n_a | w n_a   (a = 1..3, Maue's formula).
Nothing of the blocks is stored: S is evaluated in each product from the nodes.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ....backend import array_module, scatter_add
from ....memory import available_bytes
from ...kernels.green import Operator
from . import chebyshev, directions
from .m2l_cpu import apply_blocks
from .plan import children



def components(op: Operator, k: complex):
    """(rows, cols): the component list of each side, each component (weights key, axis or
    None, derivative, factor); weights key: 'w' (rule weight x basis value), 'curl' (its
    axis), 'wn' (w times the normal's axis)."""
    if op == Operator.hypersingular:
        rows = [("curl", a, False, 1.0) for a in range(3)]
        cols = [("curl", a, False, 1.0) for a in range(3)]
        if k != 0:
            rows += [("wn", a, False, -complex(k) ** 2) for a in range(3)]
            cols += [("wn", a, False, 1.0) for a in range(3)]
        return rows, cols
    plain = [("w", None, False, 1.0)]
    deriv = [("w", None, True, 1.0)]
    return {Operator.single_layer: (plain, plain), Operator.double_layer: (plain, deriv),
            Operator.adjoint_double_layer: (deriv, plain)}[op]


def _element_weights(el, key, axis):
    """(m, nq, nloc): a component's weight of each element's local function at its points
    (rule weight x area x basis value, surface curl, or value x the normal's axis)."""
    if key == "curl":
        return el.wts[:, :, None] * el.curl[:, None, :, axis]
    w = el.wts[:, :, None] * el.phi[None, :, :]
    return w if key == "w" else w * el.nrm[:, None, None, axis]


def _leaf_elements(el, n, tree, lv):
    """Per cluster of level lv (of n dofs in tree order), the elements its dofs touch,
    padded to the most with the sink element m: (elements (clusters, emax), the cluster's
    dof of each local function or the sink dof n where another cluster holds it
    (clusters, emax, nloc))."""
    m, nloc = el.dofs.shape
    starts, sizes = tree.starts[lv], tree.sizes[lv]
    owner = np.full(n, -1, np.int64)
    owner[np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())] = \
        np.repeat(np.arange(len(sizes)), sizes)
    pairs = np.unique(owner[el.dofs] * m + np.arange(m)[:, None])  # (cluster, element)
    cl, e = pairs // m, pairs % m
    count = np.bincount(cl, minlength=len(tree.starts[lv]))
    slot = np.arange(len(pairs)) - np.repeat(np.cumsum(count) - count, count)
    elements = np.full((len(count), max(int(count.max(initial=1)), 1)), m, np.int64)
    elements[cl, slot] = e
    dofs = np.concatenate([el.dofs, np.full((1, nloc), n)])[elements]
    held = np.concatenate([owner, [-1]])[dofs] == np.arange(len(count))[:, None, None]
    return elements, np.where(held, dofs, n)


def _real_times(A, Z):
    """A @ Z for real A (B, m, n) and complex Z (B, n, K): one real product over Z's real and
    imaginary parts side by side (a complex product would cast A up, and batched complex
    products of few columns do not reach BLAS)."""
    xp = array_module(Z)
    Z = xp.ascontiguousarray(Z)
    real = Z.real.dtype
    out = xp.matmul(A.astype(real, copy=False), Z.view(real))
    return xp.ascontiguousarray(out).view(Z.dtype)


class Leaves:
    """One side's leaf bases: the clusters of level `lv` (the plan's last: the tree's leaves,
    or the deepest level with directional blocks) as the quadrature points of the elements
    their dofs touch (each point once, whichever of its element's functions the cluster
    holds), with the components' weights; `moments` (sources) and `evaluate` (targets)
    apply them."""

    def __init__(self, cloud, tree, lv, comps, sign, xp, rdtype, like=None):
        """like: a Leaves of the same cloud, tree level and components' weights (the other
        side of an operator on one space), whose arrays this one shares."""
        self.xp, self.rdtype, self.sign, self.comps = xp, rdtype, sign, comps
        self.deriv = any(c[2] for c in comps)
        if like is not None:
            self.elements, self.dofs, self.pos, self.nrm, self.weights = \
                like.elements, like.dofs, like.pos, like.nrm, like.weights
            self.nq, self.nloc, self.npts = like.nq, like.nloc, like.npts
            return
        el = cloud.elements
        if el is None:
            raise ValueError("the directional far field needs the cloud's elements")
        elements, dofs = _leaf_elements(el, cloud.n, tree, lv)
        self.elements, self.dofs = xp.asarray(elements), xp.asarray(dofs)
        m, self.nq = el.wts.shape
        self.nloc = el.dofs.shape[1]
        self.npts = elements.shape[1] * self.nq
        # element m: the padding's, all zeros
        pos = np.zeros((m + 1, self.nq, 3), rdtype)
        nrm = np.zeros((m + 1, 3), rdtype)
        weights = np.zeros((m + 1, self.nq, self.nloc, len(comps)), rdtype)
        pos[:m], nrm[:m] = el.pts, el.nrm
        for j, (key, axis, *_) in enumerate(comps):
            weights[:m, ..., j] = _element_weights(el, key, axis)
        self.pos, self.nrm, self.weights = xp.asarray(pos), xp.asarray(nrm), xp.asarray(weights)

    def cluster_bytes(self, P, slots, K, C) -> int:
        """Working memory of one cluster of a leaf pass with `slots` directions, K columns
        and C of the components."""
        real = self.rdtype().itemsize
        return self.npts * (P * (4 if self.deriv else 1) * real * 2 + slots * (K + 2) * real * 6
                            + C * real * self.nloc)

    def _bases(self, clusters, dirs, centre, half, k, p):
        """Per cluster (B of them) and its directions dirs (B, S, 3) (padded with zeros):
        the Lagrange tensors [g] (B, npts, P) (g = 0: values; 1..3: the gradient's axes),
        the modulations (B, S, npts), the normal derivative's factor of the values tensor
        (B, S, npts), the points' normals, the elements' component weights
        (B, emax, nq, nloc, C) and the local functions' dofs (B, emax, nloc)."""
        xp = self.xp
        elements = self.elements[clusters]  # (B, emax)
        B = len(clusters)
        pts = self.pos[elements].reshape(B, self.npts, 3)
        local = pts - centre[:, None, :]
        t = xp.clip(local / half[:, None, :], -1, 1)
        vals = [chebyshev.lagrange(t[..., a], p, xp=xp) for a in range(3)]  # (B, npts, p)
        P = p ** 3

        def tensor(f0, f1, f2):
            return (f0[..., :, None, None] * f1[..., None, :, None] * f2[..., None, None, :]) \
                .reshape(f0.shape[:-1] + (P,))

        mats = [tensor(*vals)]
        nrm = cn = None
        ik = self.sign * 1j * k
        if self.deriv:
            ders = [chebyshev.lagrange(t[..., a], p, derivative=True, xp=xp) / half[:, None, a:a + 1]
                    for a in range(3)]
            mats += [tensor(ders[0], vals[1], vals[2]), tensor(vals[0], ders[1], vals[2]),
                     tensor(vals[0], vals[1], ders[2])]
            nrm = xp.broadcast_to(self.nrm[elements][:, :, None, :],
                                  (B, elements.shape[1], self.nq, 3)).reshape(pts.shape)
            # d/dn of e^{sign ik c.x} L = e^{...} (n.grad L + sign ik (c.n) L)
            cn = ik * xp.matmul(dirs, xp.swapaxes(nrm, 1, 2))
        phase = xp.exp(ik * xp.matmul(dirs, xp.swapaxes(local, 1, 2)))  # (B, S, npts)
        return mats, phase, nrm, cn, self.weights[elements], self.dofs[clusters]

    def _deriv_scales(self, comps, cn, nrm):
        """The normal derivative's factors of a pass's components, broadcast over (B, npts,
        S, C, R): (on the values' tensor, on each gradient axis'), or None where none of
        `comps` is a derivative; a component that is not takes 1 and 0."""
        flags = [self.comps[ci][2] for ci in comps]
        if not any(flags):
            return None
        xp = self.xp
        cn = xp.swapaxes(cn, 1, 2)[..., None, None]
        axes = [nrm[..., a, None, None, None] for a in range(3)]
        if all(flags):
            return cn, axes
        on = xp.asarray(np.array(flags, self.rdtype))[:, None]
        return cn * on + (1 - on), [n * on for n in axes]

    def _weights(self, wts, comps):
        """The elements' weights (B, emax, nq, nloc, C) of the components `comps`."""
        return wts if list(comps) == list(range(wts.shape[-1])) else wts[..., list(comps)]

    def moments(self, x, clusters, dirs, centre, half, k, p, dtype, comps):
        """Source expansions (B, S, P, C R) of the clusters' directions from x (n + 1, R),
        of the components `comps` (indices). The components' charges go side by side into
        one product with each Lagrange tensor: the tensors are read once a pass."""
        xp = self.xp
        mats, phase, nrm, cn, wts, dofs = self._bases(clusters, dirs, centre, half, k, p)
        B, S, R, C = len(clusters), dirs.shape[1], x.shape[1], len(comps)
        xa = x[dofs]  # (B, emax, nloc, R): the cluster's own coefficients, 0 for the others'
        # the points' charges of every component (B, npts, C, R), then every direction's
        # modulated charges side by side (B, npts, S, C, R)
        W = self._weights(wts, comps)
        rho = sum(W[..., a, :, None] * xa[:, :, None, a, None, :] for a in range(self.nloc))
        rho = rho.reshape(B, self.npts, 1, C, R)
        v = (xp.swapaxes(phase, 1, 2)[..., None, None] * rho).astype(dtype)
        lt = xp.swapaxes(mats[0], 1, 2)
        scales = self._deriv_scales(comps, cn, nrm)
        if scales is None:
            m = _real_times(lt, v.reshape(B, self.npts, S * C * R))
        else:  # d/dn: (c.n) ik on the values' tensor, n . grad through the gradient's
            on_values, on_axes = scales
            m = _real_times(lt, (v * on_values).reshape(B, self.npts, S * C * R))
            for a in range(3):
                m += _real_times(xp.swapaxes(mats[a + 1], 1, 2),
                                 (v * on_axes[a]).reshape(B, self.npts, S * C * R))
        return xp.moveaxis(m.reshape(B, p ** 3, S, C * R), 2, 1)  # (B, S, P, C R), comp-major

    def evaluate(self, locals_, y, clusters, dirs, centre, half, k, p, dtype, comps):
        """y[dofs] += the clusters' fields from their directions' local expansions
        (B, S, P, C R) of the components `comps` (padding slots hold zeros), all components
        in one product with each Lagrange tensor."""
        xp = self.xp
        mats, phase, nrm, cn, wts, dofs = self._bases(clusters, dirs, centre, half, k, p)
        B, S, C = len(clusters), dirs.shape[1], len(comps)
        lc = xp.ascontiguousarray(xp.moveaxis(locals_, 1, 2)).reshape(B, p ** 3, -1)  # (B, P, S C R)
        R = lc.shape[-1] // (S * C)
        emax = dofs.shape[1]
        f = _real_times(mats[0], lc).reshape(B, self.npts, S, C, R)
        scales = self._deriv_scales(comps, cn, nrm)
        if scales is not None:
            on_values, on_axes = scales
            f = f * on_values
            for a in range(3):
                f += on_axes[a] * _real_times(mats[a + 1], lc).reshape(B, self.npts, S, C, R)
        # the directions' fields, each modulated, summed; then onto the local functions
        f = (f * xp.swapaxes(phase, 1, 2)[..., None, None]).sum(axis=2)  # (B, npts, C, R)
        f = f.reshape(B, emax, self.nq, 1, C, R)
        W = self._weights(wts, comps)
        acc = 0
        for j, ci in enumerate(comps):
            acc = acc + (self.comps[ci][3] * (W[..., j, None] * f[..., j, :])).sum(axis=2)
        scatter_add(y, dofs.reshape(-1), acc.reshape(B * emax * self.nloc, -1).astype(y.dtype))


def _tensor_apply(xp, A, X, p, transpose=False):
    """(Ax (x) Ay (x) Az) X per pair: A (3, E, p, p) real, X (E, P, K) complex -> (E, P, K)
    (node index x slowest); transpose: with the transposed factors."""
    E, P, K = X.shape
    if transpose:
        A = xp.swapaxes(A, 2, 3)
    real = X.real.dtype
    Y = xp.ascontiguousarray(X).view(real).reshape(E, p * p, p, 2 * K)
    Y = xp.matmul(A[2][:, None].astype(real, copy=False), Y)  # z
    Y = Y.reshape(E, p, p, 2 * p * K)
    Y = xp.matmul(A[1][:, None].astype(real, copy=False), Y)  # y
    Y = Y.reshape(E, p, 2 * p * p * K)
    Y = xp.matmul(A[0].astype(real, copy=False), Y)  # x
    return xp.ascontiguousarray(Y).reshape(E, P, 2 * K).view(X.dtype)


class Transfers:
    """The parent-child transfers between two levels for one side's active expansions:
    edge e joins parent pair `parent[e]` and child pair `child[e]`. What an edge applies is
    made per chunk as it is used (`factors`), from a few numbers an edge: the parent's
    Lagrange polynomials at the child's nodes, per axis, are the child cluster's
    (`lagrange[:, cluster[e]]`, shared by all its directions), and the modulation change at
    the child's nodes is exp(i w[e].node) times the centres' offset phase `offset[e]`."""

    def __init__(self, plan, lv, keys_parent, keys_child, sign, lagrange, xp, rdtype, cdtype):
        up, dn = plan.levels[lv], plan.levels[lv + 1]
        cl, dr = up.split(keys_parent)
        parent, child_cl = children(plan.tree, lv, cl)
        child_dr = directions.coarser(dr[parent], up.q, dn.q)
        child = np.searchsorted(keys_child, child_cl * dn.ndirs + child_dr)
        m_p, m_c, h_c = up.centre[cl[parent]], dn.centre[child_cl], dn.half[child_cl]
        c, c2 = up.dirs[dr[parent]], dn.dirs[child_dr]
        k = plan.k
        # sources: e^{-ik (c - c').b'} at the child's nodes b' = m' + h' node, e^{ik c.(m - m')}
        # for the centres; targets: the conjugate phases
        w = sign * k * (c - c2) * h_c
        centre = -sign * k * ((m_p - m_c) * c).sum(-1)
        self.lagrange = lagrange
        self.cluster = xp.asarray(child_cl.astype(np.int32))
        self.w = xp.asarray(w.astype(rdtype))
        self.offset = xp.asarray(np.exp(1j * centre).astype(cdtype))
        self.parent, self.child = (xp.asarray(a.astype(np.int32)) for a in (parent, child))
        self.n_parent = len(cl)
        self.sign = sign
        self._grid = _grid(xp, plan.settings.order, rdtype)
        self.xp = xp

    def __len__(self) -> int:
        return len(self.parent)

    def factors(self, sl):
        """(Lagrange factors (3, E, p, p), phases (E, P)) of the edges in slice `sl`."""
        xp = self.xp
        phase = xp.exp(1j * (self.w[sl] @ self._grid.T)).astype(self.offset.dtype, copy=False)
        return self.lagrange[:, self.cluster[sl]], phase * self.offset[sl][:, None]

    def launch(self, kernel, X, Y, p):
        """The transfers by the CUDA kernel `kernel` (m2l.cu, dir_transfer): sources
        Y[parent] += T X[child], targets Y[child] += T^* X[parent]; False where one
        column's working set does not fit the shared memory (the caller's chunks then)."""
        xp, P, K = self.xp, p ** 3, X.shape[2]
        real = self.w.dtype.type
        per_column = 4 * P * real().itemsize
        tk = min(K, _TRANSFER_TILE, (_TRANSFER_SHARED - 3 * p * p * real().itemsize) // per_column)
        if tk < 1:
            return False
        if not len(self):
            return True
        up = self.sign < 0
        src, dst = (self.child, self.parent) if up else (self.parent, self.child)
        kernel((len(self), (K + tk - 1) // tk), (_TRANSFER_THREADS,),
               (src, dst, self.cluster, self.w, self.offset.view(real), self.lagrange,
                np.int64(self.lagrange.shape[1]), self._grid, np.int32(p), np.int32(K),
                np.int32(tk), np.int32(up), xp.ascontiguousarray(X).view(real), Y.view(real)),
               shared_mem=int(per_column * tk + 3 * p * p * real().itemsize))
        return True

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.cluster, self.w, self.offset, self.parent,
                                            self.child)))


def _even(n: int, most: int) -> int:
    """The step that cuts n into as few parts of at most `most` (>= 1) as possible, of sizes
    as even as can be (6 by at most 4: 3 + 3, not 4 + 2)."""
    parts = -(-n // max(1, most))
    return -(-n // parts)


# dir_transfer's launch: threads per block, at most this many columns per block, and the
# dynamic shared memory it may take (the default limit, 48 KiB, needs no opt-in)
_TRANSFER_THREADS, _TRANSFER_TILE, _TRANSFER_SHARED = 256, 8, 48 << 10


def child_lagrange(plan, lv, xp, rdtype):
    """(3, clusters of level lv + 1, p, p): each cluster's parent's Lagrange polynomials at
    its own nodes, per axis ([parent node, child node])."""
    up, dn = plan.levels[lv], plan.levels[lv + 1]
    owner, child = children(plan.tree, lv, np.arange(len(up.centre)))
    parent = np.empty(len(dn.centre), np.int64)
    parent[child] = owner
    p = plan.settings.order
    x = chebyshev.nodes(p)
    t = (dn.centre[:, None, :] + dn.half[:, None, :] * x[None, :, None]
         - up.centre[parent][:, None, :]) / up.half[parent][:, None, :]
    A = np.stack([chebyshev.lagrange(t[:, :, a], p) for a in range(3)])  # (3, n, child, parent)
    return xp.asarray(np.ascontiguousarray(np.swapaxes(A, 2, 3), dtype=rdtype))


def _grid(xp, p, rdtype):
    """The (P, 3) tensor Chebyshev nodes on [-1, 1]^3, x slowest."""
    x = chebyshev.nodes(p)
    return xp.asarray(np.stack(np.meshgrid(x, x, x, indexing="ij"), axis=-1).reshape(-1, 3).astype(rdtype))


_CUDA = Path(__file__).with_name("m2l.cu").read_text()


class FarField:
    """y = A_far x for one operator on one space's plan (host plan, backend arrays).

    `share` = (rank, size): this process's part of a far field whose products sum over
    `size` processes (one solve's ranks): every `size`-th of its components from `rank` on
    where it has as many components as processes (the hypersingular's six), else every
    `size`-th of each level's blocks (the expansions' passes up and down are every rank's)."""

    def __init__(self, plan, op, k, test_cloud, trial_cloud, backend, dtype, chunk_bytes=None,
                 share=(0, 1)):
        self.plan, self.op = plan, Operator.named(op) if isinstance(op, str) else op
        self.k = complex(k)
        self.backend, self.xp = backend, backend.xp
        self.dtype = np.dtype(dtype)
        self.rdtype = np.dtype(np.float32 if self.dtype == np.complex64 else np.float64).type
        xp = self.xp
        rows, cols = components(self.op, self.k)
        self.ncomp = len(rows)
        self.share = rank, size = share
        by_components = self.ncomp >= size
        self.comps = list(range(self.ncomp))[rank::size] if by_components else \
            list(range(self.ncomp))
        self._block_share = (0, 1) if by_components else share
        tree, levels = plan.tree, plan.levels
        # working arrays per chunk of expansions or blocks (launches are what a GPU's small
        # chunks would cost)
        self.chunk_bytes = chunk_bytes or ((1 << 30) if backend.is_gpu else (128 << 20))
        self.rows = self.cols = None
        if levels:  # the expansions' leaves: the plan's last level (plan.py, tree_leaves)
            self.cols = Leaves(trial_cloud, tree, len(levels) - 1, cols, -1.0, xp, self.rdtype)
            # one space with the same weights on both sides (V, W, K, K'): one set of arrays
            same = test_cloud is trial_cloud and [c[:2] for c in rows] == [c[:2] for c in cols]
            self.rows = Leaves(test_cloud, tree, len(levels) - 1, rows, +1.0, xp, self.rdtype,
                               like=self.cols if same else None)
        lagrange = [child_lagrange(plan, lv, xp, self.rdtype) for lv in range(len(levels) - 1)]
        self.up = [Transfers(plan, lv, levels[lv].sources, levels[lv + 1].sources, -1.0,
                             lagrange[lv], xp, self.rdtype, self.dtype)
                   for lv in range(len(levels) - 1)]
        self.down = [Transfers(plan, lv, levels[lv].targets, levels[lv + 1].targets, +1.0,
                               lagrange[lv], xp, self.rdtype, self.dtype)
                     for lv in range(len(levels) - 1)]
        self.blocks = [self._blocks(lv) for lv in levels]
        self._leaf_cache = {}
        self._m2l = self._transfer = None
        if backend.is_gpu:
            defines = f"#define IS_DOUBLE {int(self.rdtype == np.float64)}\n#define DAMPED {int(self.k.imag != 0)}\n"
            self._m2l = xp.RawKernel(defines + _CUDA, "dir_m2l")
            self._transfer = xp.RawKernel(defines + _CUDA, "dir_transfer")

    @property
    def device_bytes(self) -> int:
        """What the product keeps on the device (transfers, blocks' geometry, leaf data)."""
        arrays = [t.lagrange for t in self.up]  # shared by up and down
        arrays += [a for b in self.blocks for a in b.values()]
        arrays += [a for s in (self.rows, self.cols) if s is not None
                   for a in (s.pos, s.weights, s.elements, s.dofs)]
        unique = {id(a): a for a in arrays}.values()  # the sides may share theirs
        return int(sum(a.nbytes for a in unique)) + sum(t.nbytes for t in self.up + self.down)

    def _blocks(self, lv):
        """Device arrays of a level's far blocks: target and source pair indices, the boxes'
        half-widths, the centres' offset, the direction and the centres' phase."""
        xp, nd = self.xp, lv.ndirs
        rank, size = self._block_share
        t, s, d = lv.t[rank::size], lv.s[rank::size], lv.d[rank::size]
        tgt = np.searchsorted(lv.targets, t * nd + d).astype(np.int32)
        # the level's source expansions that its blocks read (the others only pass upward):
        # the product keeps these alone once the level above is made
        keep, src = np.unique(np.searchsorted(lv.sources, s * nd + d), return_inverse=True)
        c = lv.dirs[d]
        delta = lv.centre[t] - lv.centre[s]
        phase = np.exp(1j * self.k.real * (delta * c).sum(-1))
        arr = (lambda a, dt: np.ascontiguousarray(a.astype(dt))) if not self.backend.is_gpu else \
            (lambda a, dt: xp.asarray(np.ascontiguousarray(a.astype(dt))))
        return dict(tgt=arr(tgt, np.int32), src=arr(src, np.int32), keep=arr(keep, np.int64),
                    delta=arr(delta, self.rdtype),
                    ht=arr(lv.half[t], self.rdtype), hs=arr(lv.half[s], self.rdtype),
                    c=arr(c, self.rdtype), phase=arr(phase, self.dtype))

    def _chunks(self, n, per_item):
        step = max(1, int(self.chunk_bytes // max(per_item, 1)))
        return [slice(a, min(a + step, n)) for a in range(0, n, step)]

    def _interactions(self, lv, M, out):
        """out[tgt] += phase S M[src] over level lv's far blocks (M, out: (n, P, K))."""
        b = self.blocks[lv]
        nb_ = len(b["tgt"])
        if not nb_:
            return
        p = self.plan.settings.order
        P, K = M.shape[1], M.shape[2]
        if self._m2l is None:
            apply_blocks(b["tgt"], b["src"], b["delta"], b["ht"], b["hs"], b["c"], b["phase"],
                         _grid(np, p, self.rdtype), self.k, M, out)
            return
        xp = self.xp
        grid = _grid(xp, p, self.rdtype)
        real = self.rdtype
        nthreads = nb_ * P
        threads = 128
        tiles = (K + 7) // 8
        self._m2l(((nthreads + threads - 1) // threads, tiles), (threads,),
                  (np.int64(nthreads), b["tgt"], b["src"], b["delta"], b["ht"], b["hs"], b["c"],
                   b["phase"].view(real), grid, np.int32(P), np.int32(K), real(self.k.real),
                   real(self.k.imag), xp.ascontiguousarray(M).view(real), out.view(real)))

    def work_bytes_per_column(self) -> int:
        """The expansions a pass holds at its peak, per column (component x vector), as
        `_pass` keeps them: going up, a level and its parent in full with the kept ones of
        the levels below; going down, a level and its parent's local expansions with the
        kept sources of this level and those below."""
        item = np.dtype(self.dtype).itemsize * self.plan.settings.order ** 3
        levels = self.plan.levels
        src = [len(lv.sources) for lv in levels]
        tgt = [len(lv.targets) for lv in levels]
        kept = [len(b["keep"]) for b in self.blocks]
        below = np.concatenate([np.cumsum(kept[::-1])[::-1], [0]])  # kept of levels >= lv
        peak = max(src, default=0)
        for lv in range(len(levels) - 1):
            peak = max(peak, src[lv + 1] + src[lv] + below[lv + 2])
        for lv in range(len(levels)):
            peak = max(peak, tgt[lv] + (tgt[lv - 1] if lv else 0) + below[lv])
        return int(item * peak)

    work_budget = None  # bytes for a product's expansions (None: column_groups' default)

    def column_groups(self, R: int, budget: int | None = None):
        """The (components, vectors) of each pass of a product of R vectors: all at once
        where the working arrays fit `budget` (default: 3/4 of the memory free less the
        leaf passes' and transfers' chunks, at least the chunk budget x 8; on the host, its
        share among the ranks), else as few passes as fit, of even sizes (the far field is
        a sum over its components, so passes add up exactly)."""
        budget = budget or self.work_budget
        if budget is None:
            free = available_bytes(self.backend) * 3 // 4 - 4 * self.chunk_bytes
            budget = max(8 * self.chunk_bytes,
                         free if self.backend.is_gpu else free // self.share[1])
        per = max(self.work_bytes_per_column(), 1)
        comps, C = self.comps, len(self.comps)
        if per * C * R <= budget:
            return [(comps, slice(0, R))]
        if per * C <= budget:
            step = _even(R, budget // (per * C))
            return [(comps, slice(a, min(a + step, R))) for a in range(0, R, step)]
        step = _even(C, budget // per)
        return [(comps[a:a + step], slice(r, r + 1)) for r in range(R)
                for a in range(0, C, step)]

    def matvec(self, x):
        """A_far x for x (n,) or (n, R) in tree order (backend arrays)."""
        xp = self.xp
        vec = x.ndim == 1
        X = xp.asarray(x).astype(self.dtype).reshape(x.shape[0], -1)
        R = X.shape[1]
        if not self.plan.levels:
            return xp.zeros(x.shape, self.dtype)
        X = xp.concatenate([X, xp.zeros((1, R), self.dtype)])  # the padding's sink
        y = xp.zeros((X.shape[0], R), self.dtype)
        for comps, cols in self.column_groups(R):
            y[:, cols] += self._pass(X[:, cols], comps)
        y = y[:-1]
        return y[:, 0] if vec else y

    def _pass(self, X, comps):
        """The far field of components `comps` for X (n + 1, R) (padded)."""
        xp, levels = self.xp, self.plan.levels
        p = self.plan.settings.order
        P = p ** 3
        R = X.shape[1]
        K = len(comps) * R
        leaf = levels[-1]
        M = [None] * len(levels)
        M[-1] = self._leaf_pass(leaf, leaf.sources, self.cols, X, K, comps)
        for lv in range(len(levels) - 2, -1, -1):  # upward
            tr = self.up[lv]
            out = xp.zeros((tr.n_parent, P, K), self.dtype)
            self._apply_transfers(tr, M[lv + 1], out, p)
            M[lv + 1] = self._kept(lv + 1, M[lv + 1])
            M[lv] = out
        M[0] = self._kept(0, M[0])
        Lc = None
        for lv, level in enumerate(levels):  # the blocks, and downward
            here = xp.zeros((len(level.targets), P, K), self.dtype)
            if Lc is not None:
                self._apply_transfers(self.down[lv - 1], Lc, here, p)
            if M[lv] is not None:
                self._interactions(lv, M[lv], here)
            M[lv] = None
            Lc = here
        y = xp.zeros((X.shape[0], R), self.dtype)
        self._leaf_pass(leaf, leaf.targets, self.rows, Lc, K, comps, y)
        return y

    def _apply_transfers(self, tr, X, Y, p):
        """Sources (tr.sign < 0): Y[parent] += T X[child]; targets: Y[child] += T^* X[parent]
        (the CUDA kernel where it takes them, else chunks of batched products)."""
        if self._transfer and tr.launch(self._transfer, X, Y, p):
            return
        xp, up = self.xp, tr.sign < 0
        for sl in self._chunks(len(tr), p ** 3 * X.shape[2] * 16 * 4):
            lagrange, phase = tr.factors(sl)
            if up:
                moved = _tensor_apply(xp, lagrange, X[tr.child[sl]] * phase[:, :, None], p)
                scatter_add(Y, tr.parent[sl], moved)
            else:
                moved = _tensor_apply(xp, lagrange, X[tr.parent[sl]], p, transpose=True)
                scatter_add(Y, tr.child[sl], moved * phase[:, :, None])

    def _kept(self, lv, M):
        """Level lv's source expansions that its blocks read (None: no blocks)."""
        keep = self.blocks[lv]["keep"]
        if not len(keep):
            return None
        return M if len(keep) == len(M) else M[keep]

    def _leaf_pass(self, level, keys, side, data, K, comps, y=None):
        """Sources: the leaves' expansions (pairs, P, K) of `data` (x); targets: y += the
        fields of the expansions `data`. A chunk of clusters at a time, each with all its
        directions (keys sorted by cluster), padded to the chunk's most."""
        xp, p, P = self.xp, self.plan.settings.order, self.plan.settings.order ** 3
        out = None if y is not None else xp.zeros((len(keys), P, K), self.dtype)
        for c, dirs, centre, half, take, real in self._leaf_chunks(level, keys, side, P, K, comps):
            args = (c, dirs, centre, half, self.k.real, p, self.dtype, comps)
            if y is None:
                out[take] = side.moments(data, *args)[real]
            else:
                local = xp.zeros((len(c), dirs.shape[1], P, K), self.dtype)
                local[real] = data[take]
                side.evaluate(local, y, *args)
        return out

    def _leaf_chunks(self, level, keys, side, P, K, comps):
        """The leaf pass's chunks as backend arrays (clusters, their directions padded with
        direction 0, boxes, expansion indices, the real slots), made once per chunking:
        every product of the same shape reuses them (no host work or uploads per product)."""
        key = (id(side), K, len(comps))
        if key in self._leaf_cache:
            return self._leaf_cache[key]
        xp = self.xp
        cl, dr = level.split(keys)
        clusters, first, count = np.unique(cl, return_index=True, return_counts=True)
        slots = int(count.max(initial=1))
        chunks = []
        for sl in self._chunks(len(clusters), side.cluster_bytes(P, slots, K, len(comps))):
            c, f, n = clusters[sl], first[sl], count[sl]
            S = int(n.max())
            pair = f[:, None] + np.arange(S)[None, :]
            real = np.arange(S)[None, :] < n[:, None]
            pair = np.where(real, pair, 0)
            dirs = np.where(real[..., None], level.dirs[dr[pair]], 0.0)  # padding: direction 0
            chunks.append((xp.asarray(c), xp.asarray(dirs.astype(self.rdtype)),
                           xp.asarray(level.centre[c].astype(self.rdtype)),
                           xp.asarray(level.half[c].astype(self.rdtype)),
                           xp.asarray(pair[real]), xp.asarray(real)))
        self._leaf_cache[key] = chunks
        return chunks
