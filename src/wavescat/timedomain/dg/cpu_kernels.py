"""CPU twin of the GPU kernels (gpu_kernels.py): the same volume, surface (flux + lift) and
LSERK update steps as Numba loops over elements, one element per parallel iteration.

State layout shared with the GPU: q[4, K, Np] = (p, u, v, w), element-contiguous nodes.
Numba rather than NumPy/BLAS: the element matrices are tiny, and threaded BLAS on a busy
2-core machine spends more time synchronising than multiplying.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True, fastmath=True)
def _volume(q, geo, D, sigma, out, inv_rho, rhoc2):
    n_el, npn = q.shape[1], q.shape[2]
    for k in prange(n_el):
        g = geo[k]
        f = np.empty((4, npn), dtype=q.dtype)
        for m in range(npn):
            u, v, w = q[1, k, m], q[2, k, m], q[3, k, m]
            f[0, m] = q[0, k, m]
            f[1, m] = g[0] * u + g[1] * v + g[2] * w
            f[2, m] = g[3] * u + g[4] * v + g[5] * w
            f[3, m] = g[6] * u + g[7] * v + g[8] * w
        for n in range(npn):
            pr = ps = pt = dv = 0.0
            for m in range(npn):
                dr, ds, dt = D[0, n, m], D[1, n, m], D[2, n, m]
                pr += dr * f[0, m]
                ps += ds * f[0, m]
                pt += dt * f[0, m]
                dv += dr * f[1, m] + ds * f[2, m] + dt * f[3, m]
            out[0, k, n] = -rhoc2 * dv
            for d in range(3):
                out[1 + d, k, n] = -inv_rho * (g[d] * pr + g[3 + d] * ps + g[6 + d] * pt)
            if sigma.shape[0] > 0:
                for fld in range(4):
                    out[fld, k, n] -= sigma[k, n] * q[fld, k, n]


@njit(cache=True, fastmath=True, inline="always")
def _ghost(code, pm, um, uinc, pinc, z, beta):
    """Exterior (p, u) of a boundary node from the interior (pm, um) of impedance z = rho c:
    u the normal velocity along the outward normal, (uinc, pinc) the incident field there."""
    if code == 2:  # absorbing: zero exterior state
        return 0.0, 0.0
    if code == 3:  # pressure-release scatterer: p_s = -p_inc, mirrored
        return -pm - 2.0 * pinc, um
    if code == 4:  # admittance beta: the total field's outgoing characteristic w = p + z u
        w = pm + pinc + z * (um + uinc)  # meets u = beta p / z on the wall
        return w / (1.0 + beta) - pinc, beta * w / (z * (1.0 + beta)) - uinc
    if code == 1:  # rigid scatterer: v_s.n = -v_inc.n
        return pm, -um - 2.0 * uinc
    return pm, -um  # rigid wall


@njit(parallel=True, cache=True, fastmath=True)
def _surface(q, vmap_m, vmap_p, face_geo, bdata, partner, mat, lift, out, rho, c, rhoc2, alpha, beta):
    n_el, npn = q.shape[1], q.shape[2]
    nfn = vmap_m.shape[1]
    nfp = nfn // 4
    qf = q.reshape(4, n_el * npn)
    z0 = rho * c
    media = mat.shape[0] > 0
    for k in prange(n_el):
        flux = np.empty((4, nfn), dtype=q.dtype)
        zm = mat[k, 0] if media else 1.0
        sm = mat[k, 1] if media else 1.0
        for fn in range(nfn):
            f = fn // nfp
            nx, ny, nz, fs = face_geo[k, f, 0], face_geo[k, f, 1], face_geo[k, f, 2], face_geo[k, f, 3]
            im = vmap_m[k, fn]
            pm = qf[0, im]
            um = (nx * qf[1, im] + ny * qf[2, im] + nz * qf[3, im]) / zm
            ip = vmap_p[k, fn]
            zp = zm
            code = j = 0
            if ip < 0:
                dec = -1 - ip
                code, j = dec & 7, dec >> 3
                if code == 5:  # interface: the neighbour's field plus the data (signed incident field)
                    ip = partner[j]
            if ip >= 0:
                if media:
                    zp = mat[ip // npn, 0]
                pp = qf[0, ip]
                up = (nx * qf[1, ip] + ny * qf[2, ip] + nz * qf[3, ip]) / zp
                if vmap_p[k, fn] < 0:
                    up += bdata[j, 0]
                    pp += bdata[j, 1]
            else:
                uinc = bdata[j, 0] if bdata.shape[0] else 0.0
                pinc = bdata[j, 1] if bdata.shape[0] else 0.0
                pp, up = _ghost(code, pm, um, uinc, pinc, z0 * zm, beta)
            # upwind flux between impedances zm, zp (relative to z0): u_m - u*, p_m - p*
            dp, du = pm - pp, um - up
            a = (zp * du - alpha * dp / z0) / (zm + zp)
            b = zm * (dp - alpha * z0 * zp * du) / (zm + zp)
            fp = sm * zm * rhoc2 * a * fs
            fv = sm * b / rho * fs
            flux[0, fn], flux[1, fn], flux[2, fn], flux[3, fn] = fp, nx * fv, ny * fv, nz * fv
        for n in range(npn):
            a0 = a1 = a2 = a3 = 0.0
            for m in range(nfn):
                lv = lift[n, m]
                a0 += lv * flux[0, m]
                a1 += lv * flux[1, m]
                a2 += lv * flux[2, m]
                a3 += lv * flux[3, m]
            out[0, k, n] += a0
            out[1, k, n] += a1
            out[2, k, n] += a2
            out[3, k, n] += a3


@njit(parallel=True, cache=True, fastmath=True)
def _update(q, res, rhs, a, b, dt):
    qf, rf, hf = q.reshape(-1), res.reshape(-1), rhs.reshape(-1)
    for i in prange(qf.size):
        r = a * rf[i] + dt * hf[i]
        rf[i] = r
        qf[i] += b * r


class CpuKernels:
    def __init__(self, ops):
        self.ops = ops
        self.D = np.ascontiguousarray(np.stack([ops.Dr, ops.Ds, ops.Dt]))
        self.no_sigma = np.zeros((0, 0), dtype=ops.geo.dtype)
        self.no_data = np.zeros((0, 2), dtype=ops.geo.dtype)
        self.mat = self.no_data if ops.media is None else ops.media

    def volume(self, q, out):
        o = self.ops
        sigma = self.no_sigma if o.sigma is None else o.sigma
        _volume(q, o.geo, self.D, sigma, out, 1.0 / o.rho, o.rhoc2)

    def surface(self, q, out, boundary_data):
        o = self.ops
        data = self.no_data if boundary_data is None else np.asarray(boundary_data, dtype=o.geo.dtype)
        _surface(q, o.vmap_m, o.vmap_p, o.face_geo, data, o.partner, self.mat, o.lift, out, o.rho, o.c,
                 o.rhoc2, o.alpha, o.beta)

    @staticmethod
    def update(q, res, rhs, a, b, dt):
        _update(q, res, rhs, a, b, dt)
