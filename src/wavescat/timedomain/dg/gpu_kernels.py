"""GpuKernels: the DG volume, surface and update kernels (kernel_source.py) compiled for one
space, precision and volume-kernel variant (layout.py; by default the device's entry of the
tuning table, tuning.py), launched with the geometry of their layout. The CPU twin is
cpu_kernels.CpuKernels; tests check that both give the same rhs."""
from __future__ import annotations

import numpy as np

from . import layout
from .kernel_source import NVRTC_OPTIONS, surface_source, volume_source
from .layout import (SHARED_LIMIT, STATIC_SHARED_LIMIT, TENSOR_CORES_MIN_CC, VolumeTuning, default_elements_per_block,
                     volume_grid, volume_layout, volume_operators)
from .tuning import resolve_volume_tuning


class GpuKernels:
    """The three kernels compiled for one space, precision and tuning. Volume-kernel options
    left None come from the tuning table (`default_volume_tuning`)."""

    def __init__(self, ops, xp, kb_surface: int | None = None, **volume_tuning):
        """volume_tuning: VolumeTuning fields; those left out or None come from the table."""
        self.ops, self.xp = ops, xp
        npn, nfn = ops.Dr.shape[0], ops.lift.shape[1]
        self.dtype = np.dtype(ops.geo.dtype)
        unknown = set(volume_tuning) - set(VolumeTuning._fields)
        if unknown:
            raise TypeError(f"GpuKernels: unknown volume-kernel options {sorted(unknown)}")
        cc = int(xp.cuda.Device().compute_capability)
        self.tuning = resolve_volume_tuning(npn, self.dtype, cc, **volume_tuning)
        if self.tuning.tensor and cc < TENSOR_CORES_MIN_CC:
            raise ValueError(f"{self.tuning}: the tensor-core variant needs compute capability "
                             f"{TENSOR_CORES_MIN_CC / 10:.1f}, this device has {cc / 10:.1f}")
        self.layout = volume_layout(npn, self.tuning, self.dtype.itemsize)
        self.kbs = kb_surface or default_elements_per_block(max(npn, nfn))
        self._vol = xp.RawKernel(volume_source(npn, self.dtype, self.tuning, ops.sigma is not None,
                                               layout.fits_index32(ops.geo.shape[0], npn)), "dg_volume",
                                 options=NVRTC_OPTIONS)
        # dynamic shared memory above the 48 KB every device gives: the opt-in, within the device's limit
        optin = xp.cuda.Device().attributes.get("MaxSharedMemoryPerBlockOptin", SHARED_LIMIT)
        if self.layout.shared_bytes > optin:
            raise ValueError(f"{self.tuning}: {self.layout.shared_bytes} bytes of shared memory per block, "
                             f"this device allows {optin}")
        self._dynamic_shared = self.layout.shared_bytes if self.layout.shared_bytes > STATIC_SHARED_LIMIT else 0
        if self._dynamic_shared:
            self._vol.max_dynamic_shared_size_bytes = self._dynamic_shared
        surf = xp.RawModule(code=surface_source(npn, nfn // 4, ops.face_mask, self.dtype, self.kbs,
                                                ops.media is not None), options=NVRTC_OPTIONS)
        self._surf = surf.get_function("dg_surface")
        self._upd = surf.get_function("lserk_update")
        self.D = volume_operators(ops.Dr, ops.Ds, ops.Dt, self.tuning, self.layout, xp)
        self.L = xp.ascontiguousarray(ops.lift.T)  # L[m, n]
        self.surf_threads = min(1024, 32 * -(-self.kbs * max(npn, nfn) // 32))
        self.scalar = self.dtype.type
        self.sms = xp.cuda.Device().attributes["MultiProcessorCount"]
        self._empty = xp.zeros(1, dtype=self.dtype)
        self._partner = ops.partner if ops.partner.size else xp.full(1, -1, dtype=np.int64)
        self._media = ops.media if ops.media is not None else self._empty

    def volume(self, q, out):
        o, k = self.ops, self.ops.geo.shape[0]
        sigma = o.sigma if o.sigma is not None else self._empty
        self._vol((volume_grid(self.layout, self.tuning, k, self.sms),), (self.layout.threads,),
                  (np.int32(k), q, o.geo, self.D, sigma, out, self.scalar(1 / o.rho), self.scalar(o.rhoc2)),
                  shared_mem=self._dynamic_shared)

    def surface(self, q, out, boundary_data):
        o, k = self.ops, self.ops.geo.shape[0]
        data = boundary_data if boundary_data is not None and boundary_data.size else self._empty
        s = self.scalar
        self._surf((-(-k // self.kbs),), (self.surf_threads,),
                   (np.int32(k), q, o.vmap_p, o.face_geo, data, self._partner, self._media, self.L, out,
                    s(o.rho), s(o.c), s(o.rhoc2), s(o.alpha), s(o.beta)))

    def update(self, q, res, rhs, a, b, dt):
        s = self.scalar
        n = q.size
        self._upd((min(65535, -(-n // 256)),), (256,), (np.uint64(n), q, res, rhs, s(a), s(b), s(dt)))
